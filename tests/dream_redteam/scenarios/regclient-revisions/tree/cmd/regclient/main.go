package main

import (
	"fmt"
	"os"

	"example.com/regclient/internal/config"
	"example.com/regclient/internal/registry"
)

func main() {
	cfg, err := config.Load("regclient.toml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = registry.New(cfg.Registry.URL)
}
