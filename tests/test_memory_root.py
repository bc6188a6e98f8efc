"""What makes a folder a memory root, and serving roots that are not plain writable folders.

- Nothing writes `.memory/` (or anything else) into a folder that was never set up as a memory root.
- A read-only root is served read-only: search works from its existing index, writes are refused.
- Symlinked folders inside the root are followed; ones that lead outside are named in status.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PRINTER_TOPIC, TOOLING_TOPIC, run_cli, write

from memory_server import Memory
from memory_server.errors import RootError
from memory_server.files.root import MemoryRoot, is_memory_root
from memory_server.files.scaffold import init_root


def etc_like(tmp_path: Path) -> Path:
    """A folder that is not a memory root but has files and folders, like /etc."""
    folder = tmp_path / "etc"
    write(folder, "hosts", "127.0.0.1 localhost\n")
    write(folder, "ssh/sshd_config", "PermitRootLogin no\n")
    write(folder, "notes.md", "# Not memory\n")
    return folder


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- set up or not -----------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["MEMORY.md", "topics/", "memory.yaml"])
def test_a_folder_is_a_memory_root_when_it_has_one_of_the_markers(tmp_path: Path, marker: str) -> None:
    assert not is_memory_root(tmp_path) and not MemoryRoot(tmp_path).is_set_up
    if marker.endswith("/"):
        (tmp_path / marker).mkdir()
    else:
        (tmp_path / marker).write_text("", encoding="utf-8")
    assert is_memory_root(tmp_path) and MemoryRoot(tmp_path).is_set_up
    assert MemoryRoot(tmp_path).ensure_state_dir().is_dir()


def test_the_state_folder_is_never_made_in_a_folder_that_is_not_set_up(tmp_path: Path) -> None:
    folder = etc_like(tmp_path)
    before = listing(folder)
    with pytest.raises(RootError, match="memory-server init") as info:
        MemoryRoot(folder).ensure_state_dir()
    assert "MEMORY_ROOT" in str(info.value)
    with pytest.raises(RootError, match="not a memory root"):
        Memory(folder, keyword_only=True)
    assert listing(folder) == before


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["search", "localhost"],
        ["index"],
        ["index", "--rebuild"],
        ["dream", "run"],
        ["dream", "status"],
        ["dream", "show"],
        ["dream", "gather"],
        ["dream", "apply"],
        ["compress", "--all"],
    ],
)
def test_no_command_writes_into_a_folder_that_is_not_set_up(tmp_path: Path, command: list[str]) -> None:
    folder = etc_like(tmp_path)
    before = listing(folder)
    done = run_cli("--root", str(folder), *command, cwd=folder, env={"MEMORY_ROOT": ""}, timeout=60)
    assert listing(folder) == before, (command, done.stdout, done.stderr)
    assert not (folder / ".memory").exists()
    if command[0] in ("status", "search", "index", "dream"):
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "memory-server init" in done.stderr and "traceback" not in done.stderr.lower()


def test_state_left_in_a_project_does_not_make_it_a_memory_root(tmp_path: Path) -> None:
    """`.memory/` and session records that a hook once wrote into a project never set up: still not a root."""
    folder = etc_like(tmp_path)
    write(folder, ".memory/logs/compress.log", "old log\n")
    write(folder, "sessions/compressed/2026/2026-03-02-abcd1234-belt-tuning.md", "# Belt tuning\n")
    before = listing(folder)
    with pytest.raises(RootError, match="not a memory root"):
        Memory(folder, keyword_only=True)
    done = run_cli("--root", str(folder), "status", env={"MEMORY_ROOT": ""}, timeout=60)
    assert done.returncode == 2 and "memory-server init" in done.stderr, done.stderr
    assert listing(folder) == before


def test_init_makes_a_root_with_its_state_folder_ignored(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    init_root(root)
    assert MemoryRoot(root).is_set_up and (root / ".memory").is_dir()
    ignored = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".memory/" in ignored and ".dream-pending" in ignored
    assert "@MEMORY.md" in (root / "CLAUDE.md").read_text(encoding="utf-8").splitlines()


# -- read-only roots ---------------------------------------------------------------------------------


@contextlib.contextmanager
def read_only_view(folder: Path) -> Iterator[Path]:
    """`folder` mounted read-only at a new path (a bind mount: even root cannot write through it)."""
    target = folder.parent / f"ro-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no `mount` command: cannot make a read-only bind mount")
    made = subprocess.run([mount, "--bind", "-o", "ro", str(folder), str(target)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {made.stderr.strip()}")
    try:
        if os.access(target, os.W_OK):
            pytest.skip("the bind mount is writable (the kernel ignored `-o ro`)")
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)
        target.rmdir()


def test_a_read_only_root_is_searched_from_its_index_and_refuses_writes(root: Path) -> None:
    built = Memory(root, keyword_only=True)
    built.index()
    built.close()
    with read_only_view(root) as ro:
        m = Memory(ro, keyword_only=True)
        try:
            assert m.root.read_only
            hits = m.search_exact("SAVE_CONFIG")
            assert "topics/printer.md" in {h.path for h in hits}
            assert m.status().files >= 3
            assert m.list_topics()
            with pytest.raises(RootError, match="read-only"):
                m.index()
        finally:
            m.close()
        done = run_cli("--root", str(ro), "search", "SAVE_CONFIG", timeout=60)
        assert done.returncode == 0 and "SAVE_CONFIG" in done.stdout, done.stderr
        for command in (["index"], ["dream", "run"]):
            done = run_cli("--root", str(ro), *command, timeout=60)
            assert done.returncode == 2 and "read-only" in done.stderr, (command, done.stderr)


def test_a_read_only_root_without_an_index_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    write(folder, "topics/tooling.md", TOOLING_TOPIC)
    with read_only_view(folder) as ro:
        with pytest.raises(RootError, match="read-only"):
            Memory(ro, keyword_only=True)
        assert not (folder / ".memory").exists()


# -- symlinked folders -------------------------------------------------------------------------------


def test_a_symlinked_topics_folder_inside_the_root_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    write(root, "MEMORY.md", "# Memory\n")
    write(root, "notes/printer.md", PRINTER_TOPIC)
    (root / "topics").symlink_to(root / "notes", target_is_directory=True)
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        assert [h.path for h in m.search_exact("SAVE_CONFIG")][:1] == ["topics/printer.md"]
        assert not m.status().problem_files
    finally:
        m.close()


def test_symlinked_folders_that_lead_outside_the_root_are_named_in_status(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    write(outside, "secret.md", "# Secret\n\nOUTSIDE_TOKEN\n")
    root = tmp_path / "memory"
    init_root(root)
    write(root, "topics/tooling.md", TOOLING_TOPIC)
    write(root, "notes/printer.md", PRINTER_TOPIC)
    (root / "topics" / "external").symlink_to(outside, target_is_directory=True)
    (root / "topics" / "shared").symlink_to(root / "notes", target_is_directory=True)
    (root / "topics" / "loop").symlink_to(root / "topics", target_is_directory=True)
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        assert not m.search_exact("OUTSIDE_TOKEN")
        assert [h.path for h in m.search_exact("SAVE_CONFIG")][:1] == ["topics/shared/printer.md"]
        problems = {p.path: p for p in m.status().problem_files}
        assert set(problems) == {"topics/external/"}, json.dumps(problems)
        assert "outside the memory root" in str(problems["topics/external/"].reason)
    finally:
        m.close()


def test_the_server_serves_a_read_only_root(root: Path, tmp_path: Path) -> None:
    import anyio
    from mcp_client import connect, payload

    built = Memory(root, keyword_only=True)
    built.index()
    built.close()

    async def search(ro: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        with open(tmp_path / "server.err", "w") as err:
            async with connect(ro, errlog=err) as s:
                found = payload(await s.call_tool("search_exact", {"query": "SAVE_CONFIG"}))
                return found, payload(await s.call_tool("memory_status", {}))

    with read_only_view(root) as ro:
        found, status = anyio.run(search, ro)
    assert "topics/printer.md" in json.dumps(found)
    assert status["files"] >= 3
