module example.com/notesync

go 1.23

require modernc.org/sqlite v1.29.5
