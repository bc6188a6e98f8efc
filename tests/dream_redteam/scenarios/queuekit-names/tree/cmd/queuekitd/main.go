package main

import "flag"

func main() {
	workers := flag.Int("workers", 4, "delivery workers")
	maxAttempts := flag.Int("max-attempts", 3, "delivery attempts per job")
	flag.Parse()
	_, _ = workers, maxAttempts
}
