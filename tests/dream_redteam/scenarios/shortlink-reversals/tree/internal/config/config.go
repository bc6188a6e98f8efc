package config

// Config is config/shortlink.toml.
type Config struct {
	Server ServerConfig `toml:"server"`
	Store  StoreConfig  `toml:"store"`
}

// StoreConfig says where the link database lives.
type StoreConfig struct {
	Path string `toml:"path"`
}

// ServerConfig is the [server] section.
type ServerConfig struct {
	Addr string `toml:"addr"`
}
