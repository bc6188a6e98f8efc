package config

// Watch reloads config.toml when it changes.
func Watch(path string, reload func(Config)) error { return watch(path, reload) }
