package retry

import "time"

// Policy controls redelivery of failed jobs.
type Policy struct {
	MaxAttempts int
	BaseDelay   time.Duration
}

// DefaultPolicy retries a job at most 3 times, waiting 200ms, then 400ms, then 800ms.
func DefaultPolicy() Policy {
	return Policy{MaxAttempts: 3, BaseDelay: 200 * time.Millisecond}
}

// Delay is the wait before the given (1-based) attempt: exponential, no cap.
func (p Policy) Delay(attempt int) time.Duration {
	return p.BaseDelay << (attempt - 1)
}
