package legacy

// Import reads the notes export of notesync 0.x.
func Import(path string) error { return nil }
