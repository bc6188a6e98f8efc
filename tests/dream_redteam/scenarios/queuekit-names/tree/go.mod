module example.com/queuekit

go 1.22
