package store

import _ "modernc.org/sqlite"

// Open opens the notes database.
func Open(path string) error { return nil }
