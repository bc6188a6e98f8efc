"""Encoding thumbnails."""

import io

from PIL import Image

from shutterbox.config import JPEG_QUALITY


def encode_jpeg(img: Image.Image, quality: int = JPEG_QUALITY) -> bytes:
    out = io.BytesIO()
    img.convert("RGB").save(out, "JPEG", quality=quality, optimize=True)
    return out.getvalue()


def encode_webp(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "WEBP", quality=JPEG_QUALITY, exact=True)
    return out.getvalue()


ENCODERS = {"jpeg": encode_jpeg, "webp": encode_webp}


def encode(img: Image.Image, fmt: str) -> bytes:
    return ENCODERS[fmt](img)
