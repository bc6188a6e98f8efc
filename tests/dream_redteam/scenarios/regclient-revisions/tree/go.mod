module example.com/regclient

go 1.22

require github.com/BurntSushi/toml v1.3.2
