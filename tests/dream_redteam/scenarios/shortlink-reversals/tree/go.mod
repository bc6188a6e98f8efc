module example.com/shortlink

go 1.22

require (
	github.com/BurntSushi/toml v1.3.2
	github.com/mattn/go-sqlite3 v1.14.22
)
