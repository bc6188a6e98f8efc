package lease

import (
	"testing"

	"example.com/mailroom/internal/store"
)

func TestRenew(t *testing.T) {
	var st store.Store = &store.MockStore{}
	if err := Renew(st); err != nil {
		t.Fatal(err)
	}
}
