"""HTTP headers of served thumbnails."""

# One day at the CDN.
CACHE_CONTROL = "public, max-age=86400"
