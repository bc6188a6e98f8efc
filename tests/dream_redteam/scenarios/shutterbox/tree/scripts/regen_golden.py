"""Rewrite tests/golden/sizes.json from the current encoder settings."""

import json
from pathlib import Path

from PIL import Image

from shutterbox.config import WIDTHS
from shutterbox.encode import encode_jpeg

FIXTURE = Path("tests/fixtures/harbour.jpg")
OUT = Path("tests/golden/sizes.json")


def main() -> None:
    img = Image.open(FIXTURE)
    sizes = {}
    for width in WIDTHS:
        thumb = img.copy()
        thumb.thumbnail((width, width))
        sizes[f"{width}w.jpg"] = len(encode_jpeg(thumb))
    OUT.write_text(json.dumps(sizes, indent=1) + "\n")
    print(f"wrote {OUT} ({len(sizes)} widths)")


if __name__ == "__main__":
    main()
