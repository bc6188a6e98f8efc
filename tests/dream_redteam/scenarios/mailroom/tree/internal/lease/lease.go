package lease

import (
	"time"

	"example.com/mailroom/internal/store"
)

// LeaseTTL is how long the leader's lease row is valid without a renewal.
const LeaseTTL = 30 * time.Second

// RenewEvery is how often the leader renews its lease.
const RenewEvery = 10 * time.Second

// Renew extends the leader's lease row.
func Renew(s store.Store) error { return s.RenewLease("sender", LeaseTTL) }
