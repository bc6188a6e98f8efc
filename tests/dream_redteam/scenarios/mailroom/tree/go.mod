module example.com/mailroom

go 1.22

require (
	github.com/BurntSushi/toml v1.3.2
	github.com/jackc/pgx/v5 v5.5.5
)
