package registry

import (
	"errors"
	"net"
	"net/http"
	"time"
)

const maxRetries = 1

// Client talks to the package registry.
type Client struct {
	base string
	http *http.Client
}

// New returns a client whose requests time out after 5 s.
func New(base string) *Client {
	return &Client{base: base, http: &http.Client{Timeout: 5 * time.Second}}
}

func (c *Client) do(req *http.Request, attempt int) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if isTimeout(err) && attempt < maxRetries {
		return c.do(req, attempt+1)
	}
	return resp, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
