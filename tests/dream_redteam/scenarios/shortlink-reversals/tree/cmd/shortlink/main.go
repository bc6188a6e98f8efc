package main

import (
	"flag"
	"fmt"
	"os"

	"example.com/shortlink/internal/deploy"
	"example.com/shortlink/internal/server"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: shortlink serve|deploy [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		cfg := fs.String("config", "config/shortlink.toml", "config file")
		_ = fs.Parse(os.Args[2:])
		if err := server.Run(*cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "deploy":
		fs := flag.NewFlagSet("deploy", flag.ExitOnError)
		tag := fs.String("tag", "latest", "image tag")
		dryRun := fs.Bool("dry-run", false, "print the build command only")
		_ = fs.Parse(os.Args[2:])
		if err := deploy.Build(*tag, *dryRun); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
