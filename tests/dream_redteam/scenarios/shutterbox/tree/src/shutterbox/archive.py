"""The nightly archive of originals."""

import gzip
import shutil
from pathlib import Path


def write_archive(paths: list[Path], out: Path) -> None:
    with gzip.open(out, "wb", compresslevel=6) as archive:
        for path in paths:
            with path.open("rb") as src:
                shutil.copyfileobj(src, archive)
