package store

// cacheSchema creates the offline cache tables in the notes database.
const cacheSchema = `
CREATE TABLE IF NOT EXISTS cache (id TEXT PRIMARY KEY, body TEXT, updated INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS cache_fts USING fts5(body, content='cache');
`
