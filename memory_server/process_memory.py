"""The server process's heap: keep a long-running server's resident memory from creeping.

glibc's malloc gives each thread that meets a busy heap an arena of its own (up to eight per core) and keeps
freed memory in it. The MCP SDK runs tools in worker threads that come and go, the vector store and the
model run threads of their own, and every index pass frees what it read: over thousands of calls the
arenas fill with freed, fragmented memory, and RSS grows though nothing is held (a quarter more over
20,000 calls with files changing, in bench/server_resources.py). So the server caps the arenas at two
(`limit_arenas`, as MALLOC_ARENA_MAX=2 would; a few threads share them without contention worth measuring),
and hands freed memory back to the system after each index pass (`trim`). Both do nothing where the C
library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import cache

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's mallopt parameter
SERVER_ARENAS = 2


@cache
def _glibc() -> ctypes.CDLL | None:
    """glibc, when this process runs on it (None elsewhere: musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
        libc.mallopt  # noqa: B018
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Cap malloc's arenas for the rest of the process; call it before threads start. True when done."""
    libc = _glibc()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_ARENA_MAX, arenas))
    if not done:
        log.debug("mallopt(M_ARENA_MAX, %d) was refused", arenas)
    return done


def trim() -> None:
    """Give the memory malloc holds free back to the system (a few milliseconds)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
