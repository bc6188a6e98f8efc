"""Safe reads of memory files: checked before opening, bounded, consistent, and never of non-text.

The file is checked before it is opened (size limit, regular file, a symlink that leads out of the root, a
hard link with a name outside the root),
so an oversized file, a FIFO or a device is never opened. Its size, mtime and identity are taken before
and after the read, from the path and from the open descriptor; when they moved, the file is read again
(a few times), so the size, mtime and sha256 returned always describe the bytes returned.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memory_server.errors import FileSkipped, NotFoundError, PathRefusedError
from memory_server.files.paths import HardLinks, is_inside

# Files larger than this are skipped (with a warning in status) unless memory.yaml raises it.
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024

NOT_REGULAR = "not a regular file (a FIFO, socket or device); only plain files are indexed"
BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileText:
    """What a safe read of one memory file gives back."""

    text: str
    sha256: str
    size: int
    mtime_ns: int
    warnings: tuple[str, ...] = field(default_factory=tuple)


def read_memory_file(
    root: Path,
    relpath: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    state_dir: str = ".memory",
    links: HardLinks | None = None,
) -> FileText:
    """Read `relpath` under `root` for indexing; raise FileSkipped (with the reason) when it cannot be.

    A file that keeps changing is skipped for this pass: the indexer records the size and mtime it saw
    first, which the later writes changed, so the next pass reads it again. `links`: the root's hard-link
    census for a pass over many files (one is made when not given).
    """
    path = root / relpath
    for attempt in range(4):
        if attempt:
            time.sleep(0.01 * 2**attempt)  # 20, 40, 80 ms: let a writer finish
        before = _stat(path)
        real = Path(os.path.realpath(path))
        _check(root, real, before, max_bytes, state_dir)
        if not (links or HardLinks(root)).all_inside(before):
            raise FileSkipped(
                "a hard link to a file with a name outside the memory root; not indexed (copy the file into the "
                "root instead of linking it)"
            )
        got = _read_once(real, max_bytes)
        if got is None:
            continue  # replaced, renamed or turned into a symlink meanwhile: look again
        data, opened, after = got
        try:
            again = os.stat(path)
        except OSError:
            continue  # renamed away or replaced while being read: look again
        if len(data) > max_bytes:
            raise FileSkipped(f"grew past the {max_bytes}-byte limit while being read")
        seen = {(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in (before, opened, after, again)}
        if len(seen) == 1 and len(data) == after.st_size:
            return decode(data, after.st_mtime_ns)
    raise FileSkipped("kept changing while being read; it will be indexed on the next pass")


def _stat(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError as exc:
        raise FileSkipped("file disappeared while being read") from exc
    except OSError as exc:
        raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc


def _check(root: Path, real: Path, st: os.stat_result, max_bytes: int, state_dir: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise FileSkipped(NOT_REGULAR)
    if not is_inside(real, root):
        raise FileSkipped(
            "a symlink that leads outside the memory root; not indexed (copy the file into the root to index it)"
        )
    if real.relative_to(root).parts[:1] == (state_dir,):
        raise FileSkipped(f"a symlink into {state_dir}/ (derived index state); not indexed")
    if st.st_size > max_bytes:
        raise FileSkipped(
            f"{st.st_size} bytes is over the {max_bytes}-byte limit (raise index.max_file_bytes in memory.yaml)"
        )


def _read_once(real: Path, max_bytes: int) -> tuple[bytes, os.stat_result, os.stat_result] | None:
    """(data, fstat before, fstat after) of one read through a descriptor, or None to look again."""
    # O_NONBLOCK: should a FIFO be swapped in after the stat, opening it must not wait for a writer
    flags = os.O_RDONLY
    for name in ("O_NONBLOCK", "O_NOFOLLOW", "O_CLOEXEC"):
        flags |= getattr(os, name, 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise FileSkipped(NOT_REGULAR)
        parts: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts), opened, os.fstat(fd)
    except OSError as exc:
        raise FileSkipped(f"cannot be read ({exc.strerror}); fix the file or its permissions") from exc
    finally:
        os.close(fd)


def decode(data: bytes, mtime_ns: int) -> FileText:
    """Text from a file's bytes: UTF-8 (a BOM dropped, bad bytes as U+FFFD with a warning); never UTF-16/32
    or binary (FileSkipped)."""
    for bom, encoding in BYTE_ORDER_MARKS:
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
    return FileText(text, sha256_bytes(data), len(data), mtime_ns, tuple(warnings))


def read_lines(path: Path, shown: str) -> list[str]:
    """The lines of an already confined text file, without line endings; binary files are refused.
    For files the program itself wrote (sessions, proposals); a client's request goes through read_window."""
    with open(path, "rb") as fh:
        if b"\x00" in fh.read(BINARY_SNIFF_BYTES):
            raise PathRefusedError(f"{shown!r} is a binary file; read_memory only returns text")
        fh.seek(0)
        data = fh.read()
    return data.decode("utf-8", errors="replace").splitlines()


BINARY_SNIFF_BYTES = 8192
READ_MAX_LINES = 400
READ_MAX_CHARS = 24_000
READ_MAX_LINE_CHARS = 4_000
_COUNT_BLOCK = 1 << 20


@dataclass(frozen=True)
class Window:
    """Lines `start`..`end` of a file as read_memory answers them: bounded in lines, characters and per line."""

    start: int
    end: int
    total: int
    lines: tuple[str, ...]
    cut_lines: tuple[int, ...]  # line numbers shown cut to the per-line limit
    truncated: bool  # the answer stopped before the requested end (line or character limit)


def read_window(
    path: Path,
    shown: str,
    start: int,
    end: int | None,
    *,
    max_lines: int = READ_MAX_LINES,
    max_chars: int = READ_MAX_CHARS,
    max_line_chars: int = READ_MAX_LINE_CHARS,
) -> Window:
    """Stream lines `start`..`end` (1-based, inclusive; None: to the end) of an already confined file.

    Memory stays bounded whatever the file: a binary file is refused from its first bytes, only the
    answered lines are kept, a long line is kept up to `max_line_chars` and the rest of it skipped, and the
    lines after the answer are only counted. `start` past the end raises NotFoundError."""
    with open(path, "rb") as fh:
        if b"\x00" in fh.read(BINARY_SNIFF_BYTES):
            raise PathRefusedError(f"{shown!r} is a binary file; read_memory only returns text")
        fh.seek(0)
        last = start + max_lines - 1 if end is None else min(end, start + max_lines - 1)
        window = _collect(fh, start, end, last, max_chars, max_line_chars)
    if start > max(window.total, 1):
        raise NotFoundError(f"{shown} has {window.total} lines; start_line {start} is past the end")
    return window


def _collect(fh: BinaryIO, start: int, end: int | None, last: int, max_chars: int, max_line_chars: int) -> Window:
    """Lines `start`..`last` of `fh` within `max_chars`, and how many lines the file has."""
    kept: list[str] = []
    cut: list[int] = []
    used = n = 0
    truncated = False
    for n, (raw, long_line) in enumerate(_raw_lines(fh, max_line_chars * 4), start=1):  # UTF-8: 4 bytes a char
        if n < start:
            continue
        if n > last:
            truncated = end is None or n <= end
            n += _count_lines(fh)
            break
        line, was_cut = _shown_line(raw, n, long_line, max_line_chars)
        if was_cut:
            cut.append(n)
        if used + len(line) > max_chars and kept:
            truncated = True
            n += _count_lines(fh)
            break
        kept.append(line)
        used += len(line) + 1
    return Window(start, start + len(kept) - 1, n, tuple(kept), tuple(cut), truncated)


def _raw_lines(fh: BinaryIO, line_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """Each line's first `line_bytes` bytes, and whether the line was longer (its rest is skipped)."""
    while True:
        raw = fh.readline(line_bytes + 1)
        if not raw:
            return
        long_line = len(raw) > line_bytes and not raw.endswith(b"\n")
        if long_line:
            _skip_rest_of_line(fh)
        yield raw, long_line


def _shown_line(raw: bytes, n: int, long_line: bool, max_line_chars: int) -> tuple[str, bool]:
    """Line `n` as read_memory shows it, and whether it was cut to `max_line_chars`."""
    line = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
    if n == 1:
        line = line.lstrip("\ufeff")
    if long_line or len(line) > max_line_chars:
        return line[:max_line_chars] + f" … [line cut at {max_line_chars} characters]", True
    return line, False


def _skip_rest_of_line(fh: BinaryIO) -> None:
    while True:
        rest = fh.readline(_COUNT_BLOCK)
        if not rest or rest.endswith(b"\n"):
            return


def _count_lines(fh: BinaryIO) -> int:
    """Lines from the current position (which starts a line) to the end of the file."""
    count = 0
    last = b"\n"
    while True:
        block = fh.read(_COUNT_BLOCK)
        if not block:
            break
        count += block.count(b"\n")
        last = block[-1:]
    return count + (0 if last == b"\n" else 1)
