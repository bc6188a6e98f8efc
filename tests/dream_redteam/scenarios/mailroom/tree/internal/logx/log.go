package logx

import (
	"log/slog"
	"os"
)

// New returns the process logger.
func New() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stdout, nil)) }
