package server

// Run serves short links with the config at path.
func Run(path string) error { return nil }
