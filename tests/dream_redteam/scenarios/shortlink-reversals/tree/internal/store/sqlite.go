package store

import (
	"database/sql"

	_ "github.com/mattn/go-sqlite3" // cgo driver: the nightly bulk import needs its speed
)

// Store keeps short links in SQLite.
type Store struct{ db *sql.DB }

// Open opens (and creates) the database at path.
func Open(path string) (*Store, error) {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}
