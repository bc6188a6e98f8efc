"""Log files under `.memory/logs/`: opened for appending, rotated once when they grow too large.

Several processes may share a log (append mode, one line per write). A file over its size limit is moved
to `<name>.1` (replacing the previous one) before it is opened, so a log never grows without bound.
"""

from __future__ import annotations

import os
from pathlib import Path

LOG_DIR = "logs"
LOG_MAX_BYTES = 1_000_000


def rotate(path: Path, max_bytes: int = LOG_MAX_BYTES) -> None:
    """Make `path`'s folder, and move `path` to `<name>.1` when it is over `max_bytes`.

    Raises OSError when the folder cannot be made; a file another process rotated first is no error.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass  # no log yet, or another process rotated it first: either way, carry on
