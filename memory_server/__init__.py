"""memory-server: long-term memory for coding agents that stays true.

Markdown topic files are curated truth; compressed session summaries route queries; SQLite FTS5 and
ChromaDB indices are derived from the files. The public API:

    from memory_server import Memory
    memory = Memory("path/to/root")
    memory.index()
    hits, mode = memory.search_memory("how do we deploy?")
"""

import os
from typing import TYPE_CHECKING

# Our matrix products are small (a question against a few thousand token vectors); OpenBLAS's worker
# threads only contend with onnxruntime's and the agent's for two cores: measured on a busy 2-core machine,
# one late-interaction product took 24 ms with two BLAS threads and 0.9 ms with one. Set before numpy loads;
# a value the user set wins.
for _blas_threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas_threads, "1")

from memory_server.errors import (  # noqa: E402
    ConfigError,
    DreamError,
    LockedError,
    MemoryServerError,
    ModelError,
    NotFoundError,
    PathRefusedError,
    QueryError,
    RootError,
    StaleProposalError,
    TranscriptError,
    VectorStoreError,
)

if TYPE_CHECKING:
    from memory_server.api import Memory
    from memory_server.search.query import Hit
    from memory_server.settings import Settings, load_settings

__version__ = "0.1.0"

_LAZY = {"Memory": "api", "Hit": "search.query", "Settings": "settings", "load_settings": "settings"}


def __getattr__(name: str) -> object:
    # Imported on first use, so the hooks and the command line start without numpy or the MCP SDK.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Memory",
    "Hit",
    "Settings",
    "load_settings",
    "MemoryServerError",
    "ConfigError",
    "RootError",
    "PathRefusedError",
    "NotFoundError",
    "QueryError",
    "ModelError",
    "VectorStoreError",
    "LockedError",
    "TranscriptError",
    "DreamError",
    "StaleProposalError",
]
