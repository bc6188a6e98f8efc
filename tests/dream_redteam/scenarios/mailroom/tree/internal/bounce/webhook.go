package bounce

import (
	"crypto/hmac"
	"crypto/sha256"
	"os"
)

// Verify checks the provider's HMAC-SHA256 signature over the raw body.
func Verify(body, sig []byte) bool {
	mac := hmac.New(sha256.New, []byte(os.Getenv("MAILROOM_WEBHOOK_SECRET")))
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), sig)
}
