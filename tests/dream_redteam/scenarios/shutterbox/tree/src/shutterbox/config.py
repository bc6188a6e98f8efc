"""Settings of shutterbox (an environment variable names the cache folder)."""

import os

# JPEG quality of the thumbnails.
JPEG_QUALITY = 82

# Thumbnail widths, in pixels.
WIDTHS = (128, 256, 512)

# Seconds one origin fetch may take.
ORIGIN_TIMEOUT = 60

# Seconds to wait before fetching a failed original again.
RETRY_DELAY = 30

# Uploads larger than this many megabytes are rejected (HTTP 413).
MAX_UPLOAD_MB = 50

# Where WebP thumbnails are served.
WEBP_ENVIRONMENTS = ("staging",)

# The environment variable naming the cache folder.
CACHE_DIR_ENV = "SHUTTERBOX_CACHE_DIR"


def cache_dir() -> str:
    return os.environ.get(CACHE_DIR_ENV, "/var/cache/shutterbox")
