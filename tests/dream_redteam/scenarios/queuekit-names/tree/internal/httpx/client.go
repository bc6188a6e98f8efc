package httpx

import (
	"net/http"
	"time"
)

// Client delivers payloads to webhooks.
type Client struct {
	ReadTimeout time.Duration
	http        *http.Client
}

// New returns a client whose reads time out after 5s.
func New() *Client {
	return &Client{ReadTimeout: 5 * time.Second, http: &http.Client{}}
}
