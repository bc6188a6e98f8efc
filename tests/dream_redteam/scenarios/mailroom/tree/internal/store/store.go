package store

import "time"

//go:generate mockgen -source=store.go -destination=mock_store.go -package=store

// Store is what the sender needs from the database.
type Store interface {
	NextMessage() (int64, error)
	RenewLease(name string, ttl time.Duration) error
	ReleaseLease(name string) error
}
