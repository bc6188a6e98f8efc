"""Confinement: a path a client gives must name a regular file inside the memory root, and nothing else."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memory_server.errors import NotFoundError, PathRefusedError

# What read_memory serves: the memory files, never the rest of a project that is itself the root (`.env`,
# `.git/config`, source files); transcripts have their own `transcript:<id>` paths.
MEMORY_TOP_FILES = ("MEMORY.md", "CLAUDE.md")
MEMORY_FOLDERS = ("topics", "sessions", "dreams")


def is_memory_path(relpath: str) -> bool:
    """True when a root-relative POSIX path names a memory file: MEMORY.md, CLAUDE.md, or a file under
    topics/, sessions/ or dreams/ with no hidden part (`topics/.env`, `.git/…` are not memory)."""
    parts = relpath.split("/")
    if any(not p or p.startswith(".") for p in parts):
        return False
    if len(parts) == 1:
        return parts[0] in MEMORY_TOP_FILES
    return parts[0] in MEMORY_FOLDERS


def confine_memory(root: Path, relpath: str) -> Path:
    """`confine`, and the path (as given and as resolved through any symlink) must name a memory file."""
    refusal = (
        f"{relpath[:200]!r} is not a memory file: read_memory serves MEMORY.md, CLAUDE.md, topics/, sessions/ "
        "and dreams/ (and transcript:<id> paths from search hits) only; use a `path` from a search hit"
    )
    real = confine(root, relpath)
    given = os.path.normpath(relpath).replace(os.sep, "/")
    if not is_memory_path(given) or not is_memory_path(real.relative_to(root.resolve()).as_posix()):
        raise PathRefusedError(refusal)
    return real


def is_inside(path: Path, base: Path) -> bool:
    """True when `path` is `base` or below it (both already resolved)."""
    return path == base or base in path.parents


def confine(root: Path, relpath: str, *, base: Path | None = None) -> Path:
    """Resolve a path given by a client to a regular file inside `root` (or inside `base`).

    Refuses absolute paths, `..` escapes, symlinks that lead out, hard links to outside files,
    NUL bytes, and anything that is not a regular file.
    """
    base = (base or root).resolve()
    if not isinstance(relpath, str) or not relpath.strip():
        raise PathRefusedError("empty path: give a path relative to the memory root, e.g. topics/tooling.md")
    if "\x00" in relpath:
        raise PathRefusedError("path contains a NUL byte: give a plain relative path")
    if os.path.isabs(relpath) or relpath.startswith("~"):
        raise PathRefusedError(
            f"absolute path {relpath!r} refused: give a path relative to the memory root, as search hits do"
        )
    try:
        candidate = (base / relpath).resolve()
        if candidate != base and base not in candidate.parents:
            raise PathRefusedError(f"path {relpath!r} resolves outside the memory root and is refused")
        if not candidate.exists():
            raise NotFoundError(f"{relpath!r} does not exist in the memory root: use a `path` from a search hit")
        st = candidate.stat()
    except UnicodeEncodeError as exc:
        raise PathRefusedError(
            f"path {relpath[:80]!r} is not valid Unicode (a lone surrogate): use a `path` from a search hit"
        ) from exc
    except OSError as exc:
        raise NotFoundError(
            f"path {relpath[:80]!r} cannot be looked up ({exc.strerror}): use a `path` from a search hit"
        ) from exc
    if not stat.S_ISREG(st.st_mode):
        raise PathRefusedError(f"{relpath!r} is not a regular file and is refused")
    if not HardLinks(base).all_inside(st):
        raise PathRefusedError(f"{relpath!r} is a hard link to a file outside the memory root and is refused")
    return candidate


class HardLinks:
    """Whether a file with several names (hard links) has all of them inside the root: a hard link cannot be
    traced to its other names, so the names inside the root are counted (one walk of the root, made only when
    a file with more than one name is met, then reused), and a file with any name elsewhere is refused."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._counts: dict[tuple[int, int], int] | None = None

    def all_inside(self, st: os.stat_result) -> bool:
        if st.st_nlink <= 1:
            return True
        if self._counts is None:
            self._counts = self._count_names()
        return self._counts.get((st.st_dev, st.st_ino), 0) >= st.st_nlink

    def _count_names(self) -> dict[tuple[int, int], int]:
        counts: dict[tuple[int, int], int] = {}
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                try:
                    other = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                if other.st_nlink > 1:
                    key = (other.st_dev, other.st_ino)
                    counts[key] = counts.get(key, 0) + 1
        return counts
