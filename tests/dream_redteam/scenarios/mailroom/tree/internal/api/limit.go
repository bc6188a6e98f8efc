package api

// PerMinute is how many API requests one key may make per minute.
const PerMinute = 120
