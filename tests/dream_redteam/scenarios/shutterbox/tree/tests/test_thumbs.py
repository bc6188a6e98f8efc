import json
from pathlib import Path

from PIL import Image

from shutterbox.config import WIDTHS
from shutterbox.encode import encode_jpeg

# How far a thumbnail's size may drift from its golden size.
SIZE_TOLERANCE = 0.02

GOLDEN = json.loads(Path("tests/golden/sizes.json").read_text())


def test_golden_sizes():
    img = Image.open("tests/fixtures/harbour.jpg")
    for width in WIDTHS:
        thumb = img.copy()
        thumb.thumbnail((width, width))
        size = len(encode_jpeg(thumb))
        golden = GOLDEN[f"{width}w.jpg"]
        assert abs(size - golden) <= golden * SIZE_TOLERANCE, f"{width}w.jpg is {size} bytes, golden {golden}"
