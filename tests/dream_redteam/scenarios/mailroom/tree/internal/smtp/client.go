package smtp

import (
	"net/smtp"
	"time"
)

// Client sends messages to the provider's SMTP relay.
type Client struct {
	Addr    string
	Timeout time.Duration
}

// Send delivers one message.
func (c *Client) Send(from string, to []string, msg []byte) error {
	return smtp.SendMail(c.Addr, nil, from, to, msg)
}
