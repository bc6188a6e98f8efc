package sync

import (
	"context"
)

// Client talks to the notes server.
type Client struct{ base string }

// Note is one note.
type Note struct{ ID, Body string }

// Push sends local changes to the v2 sync endpoint.
func (c *Client) Push(ctx context.Context, notes []Note) error {
	return c.post(ctx, "/v2/sync", notes)
}

func (c *Client) post(ctx context.Context, path string, notes []Note) error { return nil }
