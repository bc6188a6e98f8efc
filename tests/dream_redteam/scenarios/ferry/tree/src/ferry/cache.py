import time
from pathlib import Path

# Cache entries older than this are deleted at the start of every sync.
CACHE_MAX_AGE_DAYS = 30

# The local metadata cache: kept in memory (a dict), rebuilt on each run.
METADATA = {}


def prune(root):
    """Delete cache entries older than CACHE_MAX_AGE_DAYS; runs at the start of every sync."""
    cutoff = time.time() - CACHE_MAX_AGE_DAYS * 86400
    for p in Path(root).glob("*"):
        if p.stat().st_mtime < cutoff:
            p.unlink()
