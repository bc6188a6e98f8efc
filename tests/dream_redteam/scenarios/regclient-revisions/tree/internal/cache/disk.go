package cache

// Disk keeps package metadata under ~/.cache/regclient.
type Disk struct{ dir string }
