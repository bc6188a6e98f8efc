"""The command line: init, index, search, status; the root from --root, MEMORY_ROOT or the current folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memory_server.files.scaffold import init_root


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memory_server.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_init_never_overwrites(tmp_path: Path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "MEMORY.md").write_text("mine\n")
    created = init_root(root)
    assert "MEMORY.md" not in created and (root / "MEMORY.md").read_text() == "mine\n"
    assert (root / "CLAUDE.md").read_text().count("Wins") == 1
    assert (root / "topics").is_dir() and (root / "sessions/compressed").is_dir()
    assert ".memory/" in (root / ".gitignore").read_text()
    assert init_root(root) == []


def test_cli_index_search_status(root: Path):
    r = run("index", "--keyword-only", "--root", str(root))
    assert r.returncode == 0, r.stderr
    assert "added" in r.stdout
    r = run("search", "--exact", "192.168.1.50", "--json", "--root", str(root))
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert hits[0]["path"] == "topics/printer.md" and hits[0]["start_line"] == 9
    r = run("status", "--json", env={"MEMORY_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["keyword_index"]["fresh"] is True
    r = run("search", "--exact", "E-1042", cwd=root)
    assert "topics/printer.md:14-14" in r.stdout


def test_cli_errors_are_clear(tmp_path: Path):
    r = run("status", "--root", str(tmp_path / "missing"))
    assert r.returncode == 2 and "memory-server init" in r.stderr
    r = run("search", "--exact", "x", "--k", "0", "--root", str(tmp_path))
    assert r.returncode == 2 and "k is 0" in r.stderr
