package main

import (
	"flag"
	"os"

	"example.com/mailroom/internal/config"
	"example.com/mailroom/internal/logx"
	"example.com/mailroom/internal/sender"
)

func main() {
	cfgPath := flag.String("config", "config/mailroom.toml", "path to the config file")
	flag.Parse()
	log := logx.New()
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		log.Error("config", "err", err)
		os.Exit(1)
	}
	sender.Run(cfg, log)
}
