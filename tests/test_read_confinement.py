"""read_memory is confined to the root: traversal, absolute paths, symlinks and hard links out, devices."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_server import Memory, NotFoundError, PathRefusedError


def test_reads_lines_of_a_hit(memory: Memory):
    hit = memory.search_exact("SAVE_CONFIG", layers=["topic"])[0]
    got = memory.read(hit.path, hit.start_line, hit.end_line)
    assert "SAVE_CONFIG" in got.text and got.start_line == hit.start_line
    whole = memory.read("topics/printer.md")
    assert whole.start_line == 1 and whole.end_line == whole.total_lines


@pytest.mark.parametrize(
    "path",
    ["../outside.md", "topics/../../outside.md", "/etc/passwd", "~/x", "topics/\x00x.md", "", ".memory/index.sqlite3"],
)
def test_refused_paths(memory: Memory, path: str):
    (memory.root.path.parent / "outside.md").write_text("secret")
    with pytest.raises((PathRefusedError, NotFoundError)):
        memory.read(path)


def test_symlink_out_is_refused(memory: Memory, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    os.symlink(secret, memory.root.path / "topics" / "link.md")
    with pytest.raises(PathRefusedError, match="outside"):
        memory.read("topics/link.md")
    os.symlink(tmp_path, memory.root.path / "topics" / "dirlink")
    with pytest.raises(PathRefusedError, match="outside"):
        memory.read("topics/dirlink/secret.txt")


def test_hard_link_out_is_refused(memory: Memory, tmp_path: Path):
    secret = tmp_path / "secret2.txt"
    secret.write_text("SECRET")
    os.link(secret, memory.root.path / "topics" / "hard.md")
    with pytest.raises(PathRefusedError, match="hard link"):
        memory.read("topics/hard.md")


def test_device_and_directories_are_refused(memory: Memory):
    os.symlink("/dev/zero", memory.root.path / "topics" / "zero.md")
    with pytest.raises(PathRefusedError):
        memory.read("topics/zero.md")
    with pytest.raises(PathRefusedError, match="not a regular file"):
        memory.read("topics")


def test_missing_file_and_bad_lines(memory: Memory):
    with pytest.raises(NotFoundError):
        memory.read("topics/nope.md")
    with pytest.raises(NotFoundError, match="past the end"):
        memory.read("topics/printer.md", 999)
    with pytest.raises(PathRefusedError):
        memory.read("topics/printer.md", 0)


# -- memory files only, streamed with caps (read_memory never serves the project around the memory) --------


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        (".env", "STRIPE_KEY=sk_live_abc123\n"),
        (".git/config", '[remote "origin"]\n\turl = https://x-access-token:ghp_secret@github.com/a/b.git\n'),
        ("src/settings.py", "DB_PASSWORD = 'hunter2'\n"),
        ("memory.yaml", "search:\n  default_k: 5\n"),
        ("topics/.env", "TOKEN=abc\n"),
        ("sessions/.secret.md", "hidden\n"),
        ("notes.md", "not memory\n"),
    ],
)
def test_files_that_are_not_memory_are_refused(memory: Memory, rel: str, text: str):
    path = memory.root.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PathRefusedError, match="not a memory file"):
        memory.read(rel)


def test_a_link_from_a_memory_folder_to_a_file_that_is_not_memory_is_refused(memory: Memory):
    (memory.root.path / ".env").write_text("API_TOKEN=abc123\n", encoding="utf-8")
    os.symlink(memory.root.path / ".env", memory.root.path / "topics" / "env.md")
    with pytest.raises(PathRefusedError, match="not a memory file"):
        memory.read("topics/env.md")


def test_memory_files_are_served(memory: Memory):
    for rel in ("MEMORY.md", "CLAUDE.md", "topics/printer.md"):
        assert (memory.read(rel).total_lines or 0) >= 1
    proposal = memory.root.path / "dreams" / "20260101-000000" / "proposal.diff"
    proposal.parent.mkdir(parents=True)
    proposal.write_text("--- a/topics/x.md\n+++ b/topics/x.md\n", encoding="utf-8")
    assert memory.read("dreams/20260101-000000/proposal.diff").total_lines == 2


def test_a_long_line_is_cut_and_the_answer_is_bounded(memory: Memory):
    long_line = "A" * 3_000_021
    (memory.root.path / "topics" / "wide.md").write_text(f"# Wide\n{long_line}\nafter\n", encoding="utf-8")
    got = memory.read("topics/wide.md")
    assert len(got.text) < 30_000
    assert got.cut_lines == [2] and "line cut at" in got.text
    assert got.total_lines == 3 and got.text.endswith("after")
    many = "\n".join(f"line {i} " + "x" * 200 for i in range(5000))
    (memory.root.path / "topics" / "long.md").write_text(many, encoding="utf-8")
    got = memory.read("topics/long.md")
    assert len(got.text) <= 24_000 and got.total_lines == 5000
    assert "start_line=" in str(got.more)
    assert got.end_line is not None
    rest = memory.read("topics/long.md", got.end_line + 1)
    assert rest.start_line == got.end_line + 1 and rest.text.startswith(f"line {got.end_line}")


CHILD = """
import json, resource, sys
from memory_server import Memory
from memory_server.errors import MemoryServerError
m = Memory(sys.argv[1], keyword_only=True)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {}
for rel in sys.argv[2:]:
    try:
        got = m.read(rel, 1, 3)
        out[rel] = {"chars": len(got.text), "total": got.total_lines}
    except MemoryServerError as exc:
        out[rel] = {"error": str(exc)}
out["rss_growth_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
m.close()
print(json.dumps(out))
"""


def test_huge_files_are_read_in_bounded_memory(root: Path):
    """A 1.5 GB sparse file is refused as binary from its first bytes; a 300 MB one-line text file is
    answered with the line cut, without holding either in memory."""
    import json
    import subprocess
    import sys

    sparse = root / "topics" / "sparse.md"
    with open(sparse, "wb") as fh:
        fh.truncate(1_500_000_000)
    wide = root / "topics" / "wide.md"
    with open(wide, "wb") as fh:
        block = b"B" * (1 << 20)
        for _ in range(300):
            fh.write(block)
        fh.write(b"\nlast line\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), "topics/sparse.md", "topics/wide.md"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "binary" in out["topics/sparse.md"]["error"]
    assert out["topics/wide.md"]["total"] == 2 and out["topics/wide.md"]["chars"] < 10_000
    assert out["rss_growth_kb"] < 50 * 1024, out
