"""read_memory is confined to the root: traversal, absolute paths, symlinks and hard links out, devices."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_server import Memory, NotFoundError, PathRefusedError


def test_reads_lines_of_a_hit(memory: Memory):
    hit = memory.search_exact("SAVE_CONFIG", layers=["topic"])[0]
    got = memory.read(hit.path, hit.start_line, hit.end_line)
    assert "SAVE_CONFIG" in got["text"] and got["start_line"] == hit.start_line
    whole = memory.read("topics/printer.md")
    assert whole["start_line"] == 1 and whole["end_line"] == whole["total_lines"]


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
