# Upload logs older than this many days are deleted.
LOG_RETENTION_DAYS = 7
