package config

import "github.com/BurntSushi/toml"

// Config is regclient.toml.
type Config struct {
	Registry struct {
		URL string `toml:"url"`
	} `toml:"registry"`
}

// Load reads the TOML config file at path.
func Load(path string) (Config, error) {
	var c Config
	_, err := toml.DecodeFile(path, &c)
	return c, err
}
