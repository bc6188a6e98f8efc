package main

import "flag"

func push(args []string) {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dryRun := fs.Bool("dry-run", false, "print what would be uploaded")
	_ = fs.Parse(args)
	_ = dryRun
}
