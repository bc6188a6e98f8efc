"""The one atomic write: temp file in the same folder, fsync, rename (or link), fsync the folder.

A crash leaves either the old file or the whole new one, never a mix. Multi-file writes (a dream apply)
use the two halves, `stage` then `commit_staged`, with a journal between them.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import re
import secrets
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_server.files.crashpoints import crash_point

log = logging.getLogger(__name__)

# The temp files `stage` makes (`.<name>.<8 random characters><suffix>`), and how old one must be before a
# writer in the same folder removes it as litter from a killed process (a live write takes milliseconds).
TEMP_FILE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
STALE_TEMP_SECONDS = 300.0
SETTLE_SECONDS = 0.05  # how long swap_into_place waits for a save already under way in the file it replaced


def file_mode(dest: Path) -> int:
    """The permissions a written file gets: the replaced file's, else what the umask gives a new file."""
    try:
        return stat.S_IMODE(os.stat(dest).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def stage(dest: Path, data: str | bytes, *, suffix: str = ".tmp") -> Path:
    """Write `data` to a new temp file beside `dest` (same mode `dest` would get), fsynced; return its path."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix, dir=dest.parent)
    try:
        os.fchmod(fd, file_mode(dest))  # mkstemp makes the file 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # a full disk, say: name the file the write was for, as a failed open does
        unlink_quietly(tmp)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(dest)) from exc
        raise
    except BaseException:
        unlink_quietly(tmp)
        raise
    return Path(tmp)


def commit_staged(temp: Path, dest: Path, *, exclusive: bool = False) -> None:
    """Move a staged temp file into place and fsync the folder. `exclusive`: a hard link that fails with
    FileExistsError rather than replace a file made meanwhile (the temp file is then left to the caller)."""
    if exclusive:
        os.link(temp, dest)
        os.unlink(temp)
    else:
        os.replace(temp, dest)
    fsync_dir(Path(dest).parent)


AT_FDCWD = -100
RENAME_EXCHANGE = 2


@functools.lru_cache(maxsize=1)
def _renameat2() -> Callable[..., int] | None:
    """Linux's renameat2(2) from the C library, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        func: Callable[..., int] = libc.renameat2
    except (OSError, AttributeError):
        return None
    return func


def exchange(a: Path, b: Path) -> bool:
    """Swap two files atomically (each name then holds the other's content); False where the system cannot."""
    func = _renameat2()
    if func is None:
        return False
    if func(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False  # a file system without exchange
    raise OSError(code, os.strerror(code), str(b))


def swap_into_place(temp: Path, dest: Path, expected: bytes) -> bytes | None:
    """Put `temp` in place of `dest`, which must still hold `expected`; None when done.

    An editor takes no lock, so a person's save can land between a check of `dest` and the rename. Here the
    two files are exchanged atomically and the content taken out is compared with `expected`: when a save
    landed meanwhile, they are exchanged back (the person's version stays) and that version is returned.
    Where the system cannot exchange, the old file is kept open across the rename and read again after it,
    which catches a save written into the file (not one renamed over it in that instant). Either way the old
    content is read again after SETTLE_SECONDS: an editor that opened the file before the exchange may write
    into it just after (a save written later than that into a file it kept open is not seen).
    """
    if exchange(temp, dest):
        try:
            taken_out = _settled(temp.read_bytes, expected)
        except OSError:
            taken_out = b""  # unreadable: never taken for the expected content
        if taken_out != expected:
            exchange(temp, dest)  # the person's save goes back where it was
            unlink_quietly(temp)
            return taken_out
        unlink_quietly(temp)
        fsync_dir(dest.parent)
        return None
    return _swap_by_link(temp, dest, expected)


def _swap_by_link(temp: Path, dest: Path, expected: bytes) -> bytes | None:
    """`swap_into_place` where files cannot be exchanged (macOS, some file systems): the old file keeps a
    second name (a hard link) while the new one is renamed into place; when a save went into the old file, the
    old file itself is renamed back, whole, so the rest of a save still under way goes on into the file at
    `dest`. Where hard links are refused too, the old file is kept open instead and its content written back."""
    side = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.tmp")  # a killed apply's is a stale temp
    try:
        os.link(dest, side)
    except FileNotFoundError:
        return b""  # the file is gone: never taken for the expected content
    except OSError:
        return _swap_by_open_file(temp, dest, expected)
    try:
        current = side.read_bytes()
        if current != expected:
            return current
        os.replace(temp, dest)
        after = _settled(side.read_bytes, expected)
        if after != expected:
            os.replace(side, dest)  # the person's file goes back where it was
            return after
        fsync_dir(dest.parent)
        return None
    finally:
        unlink_quietly(side)  # gone already when it went back in place


def _swap_by_open_file(temp: Path, dest: Path, expected: bytes) -> bytes | None:
    with open(dest, "rb") as old:
        if old.read() != expected:
            return dest.read_bytes()
        os.replace(temp, dest)

        def read_old() -> bytes:
            old.seek(0)
            return old.read()

        after = _settled(read_old, expected)
    if after != expected:
        atomic_write(dest, after)  # a save written into the old file while it was replaced: put it back
        return after
    fsync_dir(dest.parent)
    return None


def _settled(read: Callable[[], bytes], expected: bytes) -> bytes:
    """What `read` gives, read again after SETTLE_SECONDS when it first gives `expected`."""
    got = read()
    if got != expected:
        return got
    time.sleep(SETTLE_SECONDS)
    return read()


def atomic_write(dest: Path, data: str | bytes, *, exclusive: bool = False) -> None:
    """Write `data` to `dest` atomically; with exclusive=True never replace an existing file
    (FileExistsError then)."""
    dest = Path(dest)
    tmp = stage(dest, data)
    try:
        crash_point("atomic-write-before-rename")
        commit_staged(tmp, dest, exclusive=exclusive)
    finally:
        unlink_quietly(tmp)


def fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable; a folder that cannot be opened or synced is left as it is."""
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


def unlink_quietly(path: str | os.PathLike[str] | None) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_stale_temps(
    folder: Path, older_than: float = STALE_TEMP_SECONDS, pattern: re.Pattern[str] = TEMP_FILE
) -> list[Path]:
    """Remove the temp files a killed writer left in `folder` (not its subfolders); return what was removed.

    Only names `stage` makes (`pattern`), and only files last modified more than `older_than` seconds
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
