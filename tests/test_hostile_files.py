"""Hostile files in the memory root: huge, UTF-16, binary past the first 8 KB, empty, symlinks out, FIFOs,
odd names, and files rewritten while the indexer reads them. Each is indexed or skipped with a reason that
`memory_status` shows; the rest of the root is indexed; nothing hangs and nothing outside the root leaks in."""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import write

from memory_server import Memory
from memory_server.files.reading import DEFAULT_MAX_FILE_BYTES
from memory_server.settings import Settings

CHANGING = "kept changing while being read; it will be indexed on the next pass"


def problems(m: Memory) -> dict[str, dict]:
    """The problem files memory_status lists, as the tool shows them."""
    return {p.path: p.model_dump() for p in m.status().problem_files}


def phrase_paths(m: Memory, literal: str) -> set[str]:
    """Files where search_exact finds `literal` as typed (not just some of its words)."""
    return {h.path for h in m.search_exact(literal, k=10) if h.match in ("phrase", "substring")}


def assert_rest_indexed(m: Memory) -> None:
    hits = m.search_exact("SAVE_CONFIG", k=5)
    session = "sessions/compressed/2026/2026-03-02-abcd1234-belt-tuning.md"
    assert {h.path for h in hits} >= {"topics/printer.md", session}
    assert m.search_exact("poetry")[0].path == "topics/tooling.md"


def run_with_deadline(fn, seconds: float, unblock=None):
    """Run fn() in a thread; fail (after calling `unblock` so the thread can end) if it takes too long."""
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the test below
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    hung = t.is_alive()
    if hung and unblock is not None:
        unblock()
        t.join(10)
    assert not hung, f"{fn} did not finish within {seconds}s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# -- a 50 MB file --------------------------------------------------------------------------------------------


class OpenWatch:
    """inotify on one file: did anything open or read it? (Linux; what the kernel saw, not what code claims.)"""

    IN_ACCESS, IN_OPEN = 0x1, 0x20

    def __init__(self, path: Path) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, f"inotify_init1 failed: errno {ctypes.get_errno()}"
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), self.IN_OPEN | self.IN_ACCESS)
        assert wd >= 0, f"inotify_add_watch failed: errno {ctypes.get_errno()}"

    def events(self) -> int:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return 0
        return len(data) // 16  # struct inotify_event with no name: 16 bytes each

    def close(self) -> None:
        os.close(self.fd)


def test_50_mb_file_is_skipped_without_being_opened(root: Path):
    m = Memory(root, keyword_only=True)
    m.index()
    big = root / "topics" / "big.md"
    with open(big, "wb") as fh:  # sparse: 50 MB on paper, a few blocks on disk
        fh.write(b"# Big\n\nBIG_FILE_TOKEN\n")
        fh.truncate(50 * 1024 * 1024)
    write(root, "topics/small.md", "# Small\n\nSMALL_NEIGHBOUR_TOKEN\n")
    watch = OpenWatch(big)
    try:
        report = m.index()
        assert watch.events() == 0, "the indexer opened or read the 50 MB file"
        assert report.skipped == ["topics/big.md"] and "topics/small.md" in report.added
        reason = problems(m)["topics/big.md"]
        assert reason["status"] == "skipped"
        assert f"{50 * 1024 * 1024} bytes is over the {DEFAULT_MAX_FILE_BYTES}-byte limit" in reason["reason"]
        assert "max_file_bytes" in reason["reason"]  # says what to do about it
        assert not phrase_paths(m, "BIG_FILE_TOKEN")
        assert phrase_paths(m, "SMALL_NEIGHBOUR_TOKEN") == {"topics/small.md"}
        assert_rest_indexed(m)
        m.index()  # an unchanged oversized file is not looked at again either
        assert watch.events() == 0
        with open(big, "rb") as fh:  # the watch itself works
            fh.read(16)
        assert watch.events() > 0
    finally:
        watch.close()
        m.close()


# -- encodings, NUL bytes, empty files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,data,reason",
    [
        ("utf16le.md", "\ufeff# Notes\n\nUTF16_TOKEN here\n".encode("utf-16-le"), "UTF-16"),
        ("utf16be.md", "\ufeff# Notes\n\nUTF16_TOKEN here\n".encode("utf-16-be"), "UTF-16"),
        ("utf32.md", "\ufeff# Notes\n\nUTF16_TOKEN here\n".encode("utf-32-le"), "UTF-32"),
    ],
    ids=["utf-16-le", "utf-16-be", "utf-32-le"],
)
def test_utf16_and_utf32_files_are_skipped_with_how_to_fix(root: Path, name: str, data: bytes, reason: str):
    (root / "topics" / name).write_bytes(data)
    m = Memory(root, keyword_only=True)
    report = m.index()
    assert report.skipped == [f"topics/{name}"]
    got = problems(m)[f"topics/{name}"]
    assert got["status"] == "skipped" and reason in got["reason"] and "save it as UTF-8" in got["reason"]
    assert_rest_indexed(m)
    m.close()


def test_nul_byte_after_the_first_8_kb_is_binary(root: Path):
    text = "# Looks like text\n\nEARLY_TEXT_TOKEN\n\n" + "plain words here\n" * 600  # about 10 KB
    (root / "topics" / "late-nul.md").write_bytes(text.encode() + b"\x00\x01\x02 LATE_TOKEN\n")
    m = Memory(root, keyword_only=True)
    m.index()
    got = problems(m)["topics/late-nul.md"]
    assert got["status"] == "skipped" and "binary" in got["reason"]
    assert not phrase_paths(m, "EARLY_TEXT_TOKEN") and not phrase_paths(m, "LATE_TOKEN")
    assert_rest_indexed(m)
    m.close()


@pytest.mark.parametrize(
    "data",
    [b"", b"\xef\xbb\xbf", b"\n\n\n", b"   \t  ", b"---\n---\n", b"---\ntitle: unclosed\n", b"#", b"\r\r\r"],
    ids=["empty", "bom-only", "blank-lines", "spaces", "empty-front-matter", "unclosed-front-matter", "hash", "cr"],
)
def test_empty_and_nearly_empty_files_are_indexed(root: Path, data: bytes):
    (root / "topics" / "hollow.md").write_bytes(data)
    m = Memory(root, keyword_only=True)
    report = m.index()
    assert "topics/hollow.md" in report.added and not report.skipped
    assert m.fts.file("topics/hollow.md") is not None
    assert problems(m).get("topics/hollow.md", {"status": "ok"})["status"] in ("ok", "degraded")
    assert "topics/hollow.md" in {t.path for t in m.list_topics()}
    assert_rest_indexed(m)
    assert m.index().unchanged >= 1  # and it settles: nothing is read again
    m.close()


# -- symlinks, FIFOs, devices, odd names ---------------------------------------------------------------------


def test_symlink_out_of_the_root_is_not_indexed(root: Path, tmp_path: Path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nSECRET_OUTSIDE_TOKEN lives outside the root.\n")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "notes.md").write_text("# Elsewhere\n\nELSEWHERE_TOKEN\n")
    os.symlink(secret, root / "topics" / "leak.md")
    os.symlink("../../secret.md", root / "topics" / "relative-leak.md")  # relative, through ..
    os.symlink("leak.md", root / "topics" / "chain.md")  # to the symlink above
    os.symlink(outside_dir, root / "topics" / "elsewhere")  # a folder: never walked
    os.symlink(root / ".memory" / "index.sqlite3", root / "topics" / "state.md")
    write(root, "topics/real.md", "# Real\n\nINSIDE_TOKEN is here.\n")
    os.symlink("real.md", root / "topics" / "alias.md")  # a symlink that stays inside: fine
    m = Memory(root, keyword_only=True)
    m.index()
    assert not phrase_paths(m, "SECRET_OUTSIDE_TOKEN")
    assert not phrase_paths(m, "ELSEWHERE_TOKEN")
    got = problems(m)
    for rel in ("topics/leak.md", "topics/relative-leak.md", "topics/chain.md"):
        assert got[rel]["status"] == "skipped" and "outside the memory root" in got[rel]["reason"], rel
        assert "copy the file into the root" in got[rel]["reason"]
    assert got["topics/state.md"]["status"] == "skipped"
    assert phrase_paths(m, "INSIDE_TOKEN") == {"topics/real.md", "topics/alias.md"}
    assert_rest_indexed(m)
    m.close()


def test_fifo_and_devices_in_topics_do_not_hang_the_indexer(root: Path):
    fifo = root / "topics" / "pipe.md"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", root / "topics" / "zero.md")
    os.symlink("/dev/null", root / "topics" / "null.md")
    m = Memory(root, keyword_only=True)

    def unblock() -> None:  # a reader stuck in open() of the FIFO gets EOF
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    try:
        report = run_with_deadline(m.index, 30, unblock)
        assert sorted(report.skipped) == ["topics/null.md", "topics/pipe.md", "topics/zero.md"]
        got = problems(m)
        for rel in report.skipped:
            assert got[rel]["status"] == "skipped" and "not a regular file" in got[rel]["reason"]
        assert_rest_indexed(m)
        run_with_deadline(m.list_topics, 30, unblock)
        run_with_deadline(m.index, 30, unblock)
    finally:
        m.close()


def test_symlink_loop_does_not_stop_indexing(root: Path):
    os.symlink("loop.md", root / "topics" / "loop.md")
    os.symlink("ping.md", root / "topics" / "pong.md")
    os.symlink("pong.md", root / "topics" / "ping.md")
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        assert_rest_indexed(m)
    finally:
        m.close()


def test_file_name_that_is_not_utf8_does_not_stop_indexing(root: Path):
    topics = os.fsencode(root / "topics")
    with open(os.path.join(topics, b"caf\xe9.md"), "wb") as fh:  # a Latin-1 name, not valid UTF-8
        fh.write(b"# Cafe\n\nLATIN1_NAME_TOKEN\n")
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        assert_rest_indexed(m)
        status = m.status()
        named = [p for p in status.problem_files if p.path == "topics/caf\\xe9.md"]
        assert named and "not valid UTF-8" in str(named[0].reason), status.problem_files
    finally:
        m.close()


# -- files that change while being read ----------------------------------------------------------------------


class Rewriter(threading.Thread):
    """Keeps rewriting a file until stopped: version i has its own token and mtime, and a length other than
    the last one's (under one page, so a reader sees a write whole or not at all). Every third version is
    written in place (truncate, write, stamp the mtime), the others the way editors save (a new file renamed
    over the old one).

    `states` holds every (size, mtime_ns, sha256) the file has had on disk, under `lock`: whoever holds the
    lock sees the file between two writes, and every state it has been in is listed."""

    EMPTY = hashlib.sha256(b"").hexdigest()

    def __init__(self, path: Path, scratch: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.scratch = path, scratch
        self.stop = threading.Event()
        self.states: dict[tuple[int, int, str], int] = {}
        self.last = -1
        self.lock = threading.Lock()

    @staticmethod
    def token(i: int) -> str:
        return f"churn{i:07d}word"

    def content(self, i: int) -> bytes:
        padding = "x" * (100 + i * 37 % 3800)
        return f"# Churn\n\n{self.token(i)} is the current word.\n\n{padding}\n".encode()

    def put(self, i: int, in_place: bool) -> None:
        data = self.content(i)
        sha = hashlib.sha256(data).hexdigest()
        mtime = 1_600_000_000_000_000_000 + i * 1_000_000
        with self.lock:
            if in_place:
                fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC)
                try:
                    os.write(fd, data)
                    self.states[(len(data), os.fstat(fd).st_mtime_ns, sha)] = i  # before the stamp
                    os.utime(fd, ns=(mtime, mtime))
                finally:
                    os.close(fd)
            else:
                tmp = self.scratch / "churn.tmp"
                tmp.write_bytes(data)
                os.utime(tmp, ns=(mtime, mtime))
                os.replace(tmp, self.path)
            self.states[(len(data), mtime, sha)] = i
            self.last = i

    def version_of(self, size: int, mtime_ns: int, sha: str) -> int | None:
        """The version whose bytes had this size and sha256 while the file had this mtime, if any."""
        if size == 0 and sha == self.EMPTY:
            return -1  # between truncate and write, an in-place rewrite leaves the file empty for a moment
        with self.lock:
            return self.states.get((size, mtime_ns, sha))

    def run(self) -> None:
        i = self.last + 1
        while not self.stop.is_set():
            self.put(i, in_place=i % 3 == 0)
            i += 1
            time.sleep(0.0002)


def test_file_rewritten_while_the_indexer_runs(root: Path, tmp_path: Path):
    rel = "topics/churn.md"
    path = root / rel
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    writer = Rewriter(path, scratch)
    writer.put(0, in_place=False)
    m = Memory(root, keyword_only=True)
    m.index()
    outcomes = {"indexed": 0, "skipped": 0}
    writer.start()
    try:
        deadline = time.monotonic() + 4
        passes = 0
        while time.monotonic() < deadline or passes < 10:
            m.index()  # never raises
            passes += 1
            record = m.fts.file(rel)
            assert record is not None
            if record.status == "skipped":
                assert record.message == CHANGING
                outcomes["skipped"] += 1
                continue
            # whenever it is indexed, size, mtime and sha256 describe one state the file was in, never the size
            # or mtime of one version with the bytes of another
            version = writer.version_of(record.size, record.mtime_ns, record.sha256)
            assert version is not None, (
                f"pass {passes}: indexed {record.size} bytes (sha256 {record.sha256[:12]}) with mtime "
                f"{record.mtime_ns}, which no state of the file had"
            )
            assert record.status == "ok", record.message
            if version >= 0:
                assert phrase_paths(m, Rewriter.token(version)) == {rel}
            outcomes["indexed"] += 1
    finally:
        writer.stop.set()
        writer.join(10)
    assert not writer.is_alive()
    final = writer.last
    assert final > 50, f"the writer only made {final} versions"
    report = m.index()
    record = m.fts.file(rel)
    data = path.read_bytes()
    assert record is not None and record.status == "ok", (record, report.summary())
    assert (record.size, record.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert record.mtime_ns == os.stat(path).st_mtime_ns
    assert phrase_paths(m, Rewriter.token(final)) == {rel}
    assert not phrase_paths(m, Rewriter.token(final - 1)) and not phrase_paths(m, Rewriter.token(0))
    assert "topics/churn.md" not in problems(m)
    assert sum(outcomes.values()) >= 10
    m.close()


APPENDER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
n = 0
while True:
    os.write(fd, b"APPENDED%07d\\n" % n)
    n += 1
    time.sleep(0.0001)
"""


def test_file_that_keeps_growing_is_skipped_then_indexed(root: Path):
    rel = "topics/growing.md"
    path = root / rel
    base = ("# Growing log\n\n" + "".join(f"entry {n} of a steady text to read\n" for n in range(60_000))).encode()
    path.write_bytes(base)  # about 2 MB: each read takes long enough for the writer to append meanwhile
    # The size limit is raised: on a slow machine twenty passes let the appender add megabytes, and the test is
    # about a file that changes while it is read, not one that outgrows the limit.
    settings = Settings()
    settings.index.max_file_bytes = 1 << 30
    m = Memory(root, settings=settings, keyword_only=True)
    # A process of its own, not a thread: a thread appends only when this one lets go of the GIL, and on a
    # busy machine a whole read could pass without one append.
    appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(path)])
    try:
        skipped = False
        for _ in range(20):
            m.index()
            record = m.fts.file(rel)
            assert record is not None
            if record.status == "skipped":
                assert record.message == CHANGING
                got = problems(m)[rel]
                assert got["status"] == "skipped" and got["reason"] == CHANGING
                skipped = True
                break
        assert skipped, "a file appended to all the time was never reported as changing"
    finally:
        appender.kill()
        appender.wait(10)
    m.index()
    record = m.fts.file(rel)
    data = path.read_bytes()
    assert record is not None and record.status == "ok" and record.sha256 == hashlib.sha256(data).hexdigest()
    assert rel not in problems(m)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode()
    assert last.startswith("APPENDED") and phrase_paths(m, last) == {rel}
    assert_rest_indexed(m)
    m.close()
