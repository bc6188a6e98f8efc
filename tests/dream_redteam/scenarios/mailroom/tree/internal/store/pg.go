package store

import (
	"context"
	"sync"
	"time"
)

// Pool tracks the queries in flight on the database pool.
type Pool struct {
	inflight sync.WaitGroup
}

// Drain waits for in-flight queries to finish before shutdown.
func (p *Pool) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PG is the Postgres store.
type PG struct {
	pool *Pool
}

func (p *PG) NextMessage() (int64, error)                     { return 0, nil }
func (p *PG) RenewLease(name string, ttl time.Duration) error { return nil }
func (p *PG) ReleaseLease(name string) error                  { return nil }

// Close drains the pool.
func (p *PG) Close(ctx context.Context) error { return p.pool.Drain(ctx) }
