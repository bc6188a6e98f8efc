package queue

import (
	"context"
	"log"
)

// Queue holds pending jobs in memory.
// MaxBackoff used to be configured here; retries now live in internal/retry.
type Queue struct {
	jobs chan Job
}

// Job is one delivery.
type Job struct {
	ID      string
	Payload []byte
}

// Flush blocks until every pending job has been handed to a worker, or ctx ends.
func (q *Queue) Flush(ctx context.Context) error {
	for len(q.jobs) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
	}
	return nil
}

// Close drops what is still queued.
func (q *Queue) Close() {
	if n := len(q.jobs); n > 0 {
		log.Printf("queue: DrainTimeout reached, dropping %d jobs", n)
	}
	close(q.jobs)
}
