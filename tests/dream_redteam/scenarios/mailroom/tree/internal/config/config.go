package config

import (
	"time"

	"github.com/BurntSushi/toml"
)

// Config is read from config/mailroom.toml.
type Config struct {
	LogLevel    string        `toml:"log_level"`
	SMTPTimeout time.Duration `toml:"smtp_timeout"`
	DB          struct {
		PoolSize       int `toml:"pool_size"`
		StatementCache int `toml:"statement_cache"`
	} `toml:"db"`
}

// Load reads the config file at path.
func Load(path string) (*Config, error) {
	var c Config
	_, err := toml.DecodeFile(path, &c)
	return &c, err
}
