package queue

import "time"

// MaxAttempts is how many times a send is tried before it is given up.
const MaxAttempts = 3

// Backoff doubles the wait after each failed attempt, starting at one second.
func Backoff(attempt int) time.Duration {
	return time.Second << attempt
}
