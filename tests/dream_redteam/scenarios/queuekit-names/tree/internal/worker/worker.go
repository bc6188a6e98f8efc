package worker

import (
	"time"

	"example.com/queuekit/internal/queue"
	"example.com/queuekit/internal/retry"
)

func run(job queue.Job, deliver func(queue.Job) error) {
	policy := retry.DefaultPolicy()
	for attempt := 1; ; attempt++ {
		if err := deliver(job); err == nil || attempt == policy.MaxAttempts {
			return
		}
		time.Sleep(policy.Delay(attempt))
	}
}
