package unsub

import (
	"os"
	"time"
)

// LinkTTL is how long an unsubscribe link stays valid.
const LinkTTL = 30 * 24 * time.Hour

// NewFooter reports whether the new unsubscribe footer is on.
func NewFooter() bool { return os.Getenv("MAILROOM_NEW_FOOTER") == "1" }
