"""Token vectors as they are stored: one row per WordPiece token of a chunk's embedding text, packed small.

Late-interaction reranking (search/late.py) compares every token of the question with every token of a
candidate, so it needs each chunk's token vectors. They come from the same model call as the chunk's
vector (no extra cost at indexing time) and are kept in the embedding cache beside it, packed:

  bits   the sign of each dimension: 48 bytes a token for all-MiniLM-L6-v2 (the default). Compared with
         the question's full vectors, it ranks as the float vectors do within one or two questions on
         coding-probe (cosine + MaxSim R@1 0.50 against 0.525), at 1/32 of their size.
  int8   each row scaled to -127..127 plus its float32 scale: 388 bytes a token, ranks as float.
  off    none kept; late-interaction reranking then has nothing to compare and is skipped.

A passage of 66 tokens (a LoCoMo turn with its title context) takes 3.2 KB as bits, 26 KB as int8.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memory_server.errors import ConfigError
from memory_server.settings import TokenFormat


def pack(rows: NDArray[np.float32], fmt: TokenFormat) -> bytes:
    """`rows` (tokens x dim, float32) as bytes in `fmt`."""
    rows = np.asarray(rows, dtype=np.float32)
    if fmt == "bits":
        return bytes(np.packbits(rows > 0, axis=1).tobytes())
    if fmt == "int8":
        scale: NDArray[np.float32] = (np.maximum(np.abs(rows).max(axis=1, keepdims=True), 1e-12) / 127.0).astype(
            np.float32
        )
        quantised: NDArray[np.int8] = np.round(rows / scale).astype(np.int8)
        return scale.tobytes() + quantised.tobytes()
    raise ConfigError(f"cannot pack token vectors as {fmt!r}: use one of bits, int8")


def _size(count: int, dim: int, fmt: TokenFormat) -> int | None:
    """Bytes `pack` writes for `count` rows of `dim` dimensions (None for an unknown format)."""
    return {"bits": count * ((dim + 7) // 8), "int8": count * (4 + dim)}.get(fmt)


def _signs(buffer: bytes, dim: int) -> NDArray[np.float32]:
    """Packed sign bits (rows of `dim` bits, each row padded to whole bytes) as rows of +-1/sqrt(dim)."""
    width = (dim + 7) // 8
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8).reshape(-1, width), axis=1)
    return (bits[:, :dim].astype(np.float32) * 2.0 - 1.0) / np.float32(np.sqrt(dim))


def unpack(blob: bytes, count: int, dim: int, fmt: TokenFormat) -> NDArray[np.float32]:
    """The rows `pack` stored, as float32 (tokens x dim) of unit length, ready for dot products. A blob
    of the wrong size for `count` and `dim` (a damaged row) raises ValueError."""
    expected = _size(count, dim, fmt)
    if expected is not None and len(blob) != expected:
        raise ValueError(f"{count} token vectors of {dim} dimensions as {fmt} take {expected} bytes, not {len(blob)}")
    if fmt == "bits":
        return _signs(blob, dim)
    if fmt == "int8":
        scale = np.frombuffer(blob, dtype=np.float32, count=count).reshape(count, 1)
        values = np.frombuffer(blob, dtype=np.int8, count=count * dim, offset=4 * count).reshape(count, dim)
        rows = values.astype(np.float32) * scale
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        out: NDArray[np.float32] = (rows / np.maximum(norms, 1e-12)).astype(np.float32)
        return out
    raise ConfigError(f"cannot unpack token vectors stored as {fmt!r}")


def unpack_many(rows: list[tuple[bytes, int, int]], fmt: TokenFormat) -> list[NDArray[np.float32] | None]:
    """`unpack` for each (blob, count, dim), None for a damaged one; sign bits of one width are unpacked in
    one call (the thirty lookups of a search otherwise cost more in call overhead than in work)."""
    out: list[NDArray[np.float32] | None] = [None] * len(rows)
    dims = {dim for _, _, dim in rows}
    if fmt != "bits" or len(dims) != 1:
        for i, (blob, count, dim) in enumerate(rows):
            try:
                out[i] = unpack(blob, count, dim, fmt)
            except ValueError:
                pass
        return out
    (dim,) = dims
    good = [i for i, (blob, count, _) in enumerate(rows) if len(blob) == _size(count, dim, fmt)]
    if not good:
        return out
    signs = _signs(b"".join(rows[i][0] for i in good), dim)
    start = 0
    for i in good:
        count = rows[i][1]
        out[i] = signs[start : start + count]
        start += count
    return out


__all__ = ["TokenFormat", "pack", "unpack", "unpack_many"]
