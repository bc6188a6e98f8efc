"""The memory root on disk: its layout, which files are memory, confined paths, safe reads, atomic writes.

Only this module reads or writes memory files. Everything else asks it for text and hands it text.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memory_server.errors import NotFoundError, PathRefusedError, RootError
from memory_server.files.crashpoints import crash_point

log = logging.getLogger(__name__)

TOPICS_DIR = "topics"
SESSIONS_DIR = "sessions/compressed"
DREAMS_DIR = "dreams"
STATE_DIR = ".memory"
MEMORY_INDEX = "MEMORY.md"
CLAUDE_MD = "CLAUDE.md"
SETTINGS_FILE = "memory.yaml"
DREAM_PENDING = ".dream-pending"

# Files larger than this are skipped (with a warning in status) unless memory.yaml raises it.
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024

# The temp files atomic_write makes (`.<name>.<8 random characters>.tmp`), and how old one must be before a
# writer in the same folder removes it as litter from a killed process (a live write takes milliseconds).
TEMP_FILE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
STALE_TEMP_SECONDS = 300.0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def layer_of(relpath: str) -> str | None:
    """The layer a root-relative path belongs to, or None when it is not memory."""
    if not relpath.endswith(".md"):
        return None
    parts = relpath.split("/")
    if any(p.startswith(".") for p in parts):
        return None  # editors' swap and temp files, and our own .memory/
    if relpath == MEMORY_INDEX or relpath.startswith(TOPICS_DIR + "/"):
        return "topic"
    if relpath.startswith(SESSIONS_DIR + "/"):
        return "session"
    return None


@dataclass(frozen=True)
class FileText:
    """What a safe read of one memory file gives back."""

    text: str
    sha256: str
    size: int
    mtime_ns: int
    warnings: tuple[str, ...] = field(default_factory=tuple)


class FileSkipped(Exception):
    """A memory file that cannot be indexed (binary, too large, not a regular file); carries why."""


class MemoryRoot:
    """A memory root: MEMORY.md, CLAUDE.md, topics/, sessions/compressed/YYYY/, dreams/, .memory/."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        root = Path(path).expanduser()
        if not root.exists():
            raise RootError(
                f"memory root {root} does not exist: create it with `memory-server init --root {root}` "
                "or point --root / MEMORY_ROOT at an existing one"
            )
        if not root.is_dir():
            raise RootError(f"memory root {root} is not a directory: point --root / MEMORY_ROOT at a folder")
        self.path = root.resolve()
        self.unnameable: list[str] = []  # files the last memory_files() left out: names not valid UTF-8

    def __repr__(self) -> str:
        return f"MemoryRoot({str(self.path)!r})"

    # -- layout -------------------------------------------------------------------------------

    @property
    def topics_dir(self) -> Path:
        return self.path / TOPICS_DIR

    @property
    def sessions_dir(self) -> Path:
        return self.path / SESSIONS_DIR

    @property
    def dreams_dir(self) -> Path:
        return self.path / DREAMS_DIR

    @property
    def state_dir(self) -> Path:
        """Derived state (indices, caches, logs, locks); created on first use."""
        d = self.path / STATE_DIR
        d.mkdir(exist_ok=True)
        return d

    def relpath(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    def memory_files(self) -> Iterator[tuple[str, str]]:
        """Yield (relative path, layer) for every memory file, sorted, without following symlinked folders."""
        candidates: list[Path] = []
        index = self.path / MEMORY_INDEX
        if index.is_file():
            candidates.append(index)
        for top in (self.topics_dir, self.sessions_dir):
            if top.is_dir() and not top.is_symlink():
                for dirpath, dirnames, filenames in os.walk(top):
                    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                    candidates.extend(Path(dirpath) / f for f in filenames)
        unnameable: list[str] = []
        for p in sorted(candidates):
            rel = self.relpath(p)
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                log.warning("ignored %s: its name is not valid UTF-8; rename it to index it", shown)
                unnameable.append(shown)
                continue
            layer = layer_of(rel)
            if layer is not None:
                yield rel, layer
        self.unnameable = unnameable

    # -- confinement ----------------------------------------------------------------------------

    def resolve(self, relpath: str, *, base: Path | None = None) -> Path:
        """Resolve a path given by a client to a regular file inside the root (or inside `base`).

        Refuses absolute paths, `..` escapes, symlinks that lead out, hard links to outside files,
        NUL bytes, and anything that is not a regular file.
        """
        base = (base or self.path).resolve()
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
        if st.st_nlink > 1 and not self._hard_link_stays_inside(candidate, st, base):
            raise PathRefusedError(f"{relpath!r} is a hard link to a file outside the memory root and is refused")
        return candidate

    @staticmethod
    def _hard_link_stays_inside(candidate: Path, st: os.stat_result, base: Path) -> bool:
        # A hard link cannot be traced to its other names cheaply; accept it only when every link is
        # accounted for inside the root (common for editors that keep backup links), else refuse.
        found = 0
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                try:
                    other = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                if other.st_ino == st.st_ino and other.st_dev == st.st_dev:
                    found += 1
                    if found >= st.st_nlink:
                        return True
        return False

    # -- reading ------------------------------------------------------------------------------

    def read_text(self, relpath: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileText:
        """Read a memory file for indexing; raise FileSkipped (with the reason) when it cannot be.

        The file is checked before it is opened (size limit, regular file, a symlink that leads out of the
        root), so an oversized file, a FIFO or a device is never opened. Its size, mtime and identity are
        taken before and after the read, from the path and from the open descriptor; when they moved, the
        file is read again (a few times), so the size, mtime and sha256 returned always describe the bytes
        returned. A file that keeps changing is skipped for this pass: the indexer records the size and
        mtime it saw first, which the later writes changed, so the next pass reads it again.
        """
        not_regular = "not a regular file (a FIFO, socket or device); only plain files are indexed"
        path = self.path / relpath
        attempts = 4
        for attempt in range(attempts):
            if attempt:
                time.sleep(0.01 * 2**attempt)  # 20, 40, 80 ms: let a writer finish
            try:
                before = os.stat(path)
            except FileNotFoundError as exc:
                raise FileSkipped("file disappeared while being read") from exc
            except OSError as exc:
                raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc
            if not stat.S_ISREG(before.st_mode):
                raise FileSkipped(not_regular)
            real = Path(os.path.realpath(path))
            if real != self.path and self.path not in real.parents:
                raise FileSkipped(
                    "a symlink that leads outside the memory root; not indexed (copy the file into the root "
                    "to index it)"
                )
            if real.relative_to(self.path).parts[:1] == (STATE_DIR,):
                raise FileSkipped(f"a symlink into {STATE_DIR}/ (derived index state); not indexed")
            if before.st_size > max_bytes:
                raise FileSkipped(
                    f"{before.st_size} bytes is over the {max_bytes}-byte limit "
                    "(raise index.max_file_bytes in memory.yaml)"
                )
            # O_NONBLOCK: should a FIFO be swapped in after the stat, opening it must not wait for a writer
            flags = os.O_RDONLY
            for name in ("O_NONBLOCK", "O_NOFOLLOW", "O_CLOEXEC"):
                flags |= getattr(os, name, 0)
            try:
                fd = os.open(real, flags)
            except FileNotFoundError:
                continue  # replaced or renamed between the stat and the open: look again
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue  # became a symlink since realpath: look again
                raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc
            try:
                opened = os.fstat(fd)
                if not stat.S_ISREG(opened.st_mode):
                    raise FileSkipped(not_regular)
                parts: list[bytes] = []
                left = max_bytes + 1
                while left > 0:
                    part = os.read(fd, min(left, 1 << 20))
                    if not part:
                        break
                    parts.append(part)
                    left -= len(part)
                data = b"".join(parts)
                after = os.fstat(fd)
            except OSError as exc:
                raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc
            finally:
                os.close(fd)
            try:
                again = os.stat(path)
            except OSError:
                continue  # renamed away or replaced while being read: look again
            if len(data) > max_bytes:
                raise FileSkipped(f"grew past the {max_bytes}-byte limit while being read")
            seen = {(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in (before, opened, after, again)}
            if len(seen) == 1 and len(data) == after.st_size:
                break
        else:
            raise FileSkipped("kept changing while being read; it will be indexed on the next pass")
        for bom, encoding in (
            (b"\xff\xfe\x00\x00", "UTF-32"),
            (b"\x00\x00\xfe\xff", "UTF-32"),
            (b"\xff\xfe", "UTF-16"),
            (b"\xfe\xff", "UTF-16"),
        ):
            if data.startswith(bom):
                raise FileSkipped(f"{encoding} text (byte-order mark); save it as UTF-8 to index it")
        if b"\x00" in data:
            raise FileSkipped("binary file (contains NUL bytes)")
        warnings: list[str] = []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", errors="replace")
            warnings.append(f"not valid UTF-8 (byte {exc.start}); undecodable bytes shown as U+FFFD")
        if text.startswith("\ufeff"):
            text = text[1:]
        return FileText(text, sha256_bytes(data), len(data), after.st_mtime_ns, tuple(warnings))

    def read_lines(self, relpath: str) -> list[str]:
        """The lines of a file a client asked for (confined to the root), without line endings."""
        path = self.resolve(relpath)
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            raise PathRefusedError(f"{relpath!r} is a binary file; read_memory only returns text")
        return data.decode("utf-8", errors="replace").splitlines()

    # -- writing ------------------------------------------------------------------------------

    def write_new(self, relpath: str, text: str) -> Path:
        """Create a file that must not exist yet (append-only layers); atomic, never overwrites."""
        dest = self._inside(relpath)
        atomic_write(dest, text, exclusive=True)
        return dest

    def write(self, relpath: str, text: str) -> Path:
        """Create or replace a file atomically (proposals, settings, the files `init` makes)."""
        dest = self._inside(relpath)
        atomic_write(dest, text)
        return dest

    def _inside(self, relpath: str) -> Path:
        dest = (self.path / relpath).resolve()
        if self.path not in dest.parents:
            raise PathRefusedError(f"refusing to write {relpath!r}: it resolves outside the memory root")
        return dest


def atomic_write(dest: Path, text: str | bytes, *, exclusive: bool = False) -> None:
    """Write `text` to `dest` through a temp file in the same folder, fsync, then rename.

    With exclusive=True the final step is a hard link, which fails if `dest` exists: a crash leaves either
    no file or the whole file, and an existing file is never replaced. Raises FileExistsError then.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        # mkstemp makes the file 0600: keep a replaced file's mode, else what the umask gives a new file
        try:
            mode = stat.S_IMODE(os.stat(dest).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        crash_point("atomic-write-before-rename")
        if exclusive:
            os.link(tmp, dest)
        else:
            os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def remove_stale_temps(folder: Path, older_than: float = STALE_TEMP_SECONDS,
                       pattern: re.Pattern[str] = TEMP_FILE) -> list[Path]:
    """Remove the temp files a killed writer left in `folder` (not its subfolders); return what was removed.

    Only names atomic_write makes (`pattern`), and only files last modified more than `older_than` seconds
    ago, so a write in progress in another process is never disturbed. Such files are dot-files: nothing
    indexes or reads them, this only keeps them from piling up.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    cutoff = time.time() - older_than
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    if removed:
        log.warning("removed %d temporary file(s) left in %s by an interrupted write", len(removed), folder)
    return removed


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise NotFoundError(f"{what} {path} does not exist")
    return path
