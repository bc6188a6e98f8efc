"""Claude Code's auto memory as a read-only layer: searchable, reported on, /dream evidence for a fact at most.

A fake auto memory folder where Claude Code 2.x keeps one (`<CLAUDE_CONFIG_DIR>/projects/<project>/memory/`),
real SQLite FTS5 and Chroma (fake embedder), the real /dream checks, the CLI in process. Nothing may ever be
written into Claude Code's folder, and nothing outside it may be read through it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from session_script import Script

from memory_server import Memory
from memory_server.dream.pack import gather
from memory_server.dream.propose import propose
from memory_server.errors import ConfigError, PathRefusedError
from memory_server.files.claude_home import folder_name, project_folder
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions import auto_memory
from memory_server.sessions.compress import compress_transcript
from memory_server.settings import load_settings
from memory_server.testing import FakeEmbedder

NOW = dt.datetime(2026, 3, 10, tzinfo=dt.UTC).timestamp()
SECRET = "sk-ant-api03-" + "Q" * 20 + "x7Yz" * 10
INDEX = (
    "# Project memory\n\n"
    "- [Testing](testing.md): how the integration tests run\n"
    "- [Style](style.md) - code style the user asked for\n"
    "- Outside: [notes](../../elsewhere/notes.md)\n"
    + "".join(f"- Note {n}: the parser handles case {n} of the old format\n" for n in range(1, 200))
    + "- Deploys go through the staging cluster first (this line is past the limit)\n"
    + "- Another entry Claude Code never loads\n"
)
TESTING = (
    """\
---
name: Testing
description: how the integration tests run
type: project
---
# Testing

- The integration tests need REDIS_URL=redis://localhost:6390 in the environment.
- The API key used in CI is """
    + SECRET
    + """ (do not print it).
"""
)
STYLE = "# Style\n\n- Always use tabs for indentation in the Go files.\n"
ORPHAN = "# Old notes\n\n- The cache warmer runs every 15 minutes.\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    root = tmp_path / "project"
    init_root(root)
    folder = project_folder(root.resolve()) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    (folder / "testing.md").write_text(TESTING, encoding="utf-8")
    (folder / "style.md").write_text(STYLE, encoding="utf-8")
    (folder / "orphan.md").write_text(ORPHAN, encoding="utf-8")
    outside = tmp_path / "outside-secret.md"
    outside.write_text("# Private\n\n- The vault password is plutonium-kettle-42.\n", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside)  # a symlink out of the folder: never read
    (folder / "hard.md").hardlink_to(outside) if hasattr(Path, "hardlink_to") else None
    return {"root": root, "folder": folder, "claude": claude, "outside": outside}


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for path in sorted(folder.rglob("*")):
        st = os.lstat(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        out[str(path.relative_to(folder))] = (st.st_mtime_ns, digest)
    return out


def test_the_folder_is_where_claude_code_keeps_it(project: dict[str, Path]) -> None:
    root = project["root"].resolve()
    assert folder_name("/home/dev/my project.v2") == "-home-dev-my-project-v2"
    assert folder_name("/tmp/caf\u00e9/\U0001f600") == "-tmp-caf--" + "--"  # one dash per UTF-16 unit
    found = auto_memory.locate(MemoryRoot(root), load_settings(root))
    assert found is not None and found.path == project["folder"].resolve()


def test_the_main_working_copy_of_a_worktree_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    main = tmp_path / "repo"
    init_root(main)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=main, check=True)
    subprocess.run([*git, "add", "-A"], cwd=main, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=main, check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt"], cwd=main, check=True)
    shared = project_folder(main.resolve()) / "memory"
    shared.mkdir(parents=True)
    (shared / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    worktree = MemoryRoot(tmp_path / "wt")
    found = auto_memory.locate(worktree, load_settings(worktree.path))
    assert found is not None and found.path == shared.resolve()


def test_claude_codes_auto_memory_directory_setting_moves_it(project: dict[str, Path], tmp_path: Path) -> None:
    moved = tmp_path / "moved-memory"
    moved.mkdir()
    (project["claude"] / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(moved)}))
    root = MemoryRoot(project["root"])
    found = auto_memory.locate(root, load_settings(root.path))
    assert found is not None and found.path == moved.resolve() and "autoMemoryDirectory" in found.how


def test_a_repositorys_memory_yaml_may_not_point_the_layer_elsewhere(project: dict[str, Path], tmp_path: Path) -> None:
    (project["root"] / "memory.yaml").write_text(f"auto_memory:\n  dir: {tmp_path}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="auto_memory.dir"):
        load_settings(project["root"])
    (project["root"] / "memory.yaml").write_text(f"auto_memory:\n  dir: {project['folder']}\n", encoding="utf-8")
    assert load_settings(project["root"]).auto_memory.dir == str(project["folder"])


def test_a_relative_auto_memory_dir_is_read_where_it_was_checked(
    project: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked against the root (this project's own Claude Code folders), so read from the root too, not from
    the working directory."""
    relative = os.path.relpath(project["folder"], project["root"])
    (project["root"] / "memory.yaml").write_text(f"auto_memory:\n  dir: {relative}\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)  # from here, the relative path names a folder that does not exist
    root = MemoryRoot(project["root"])
    found = auto_memory.locate(root, load_settings(root.path))
    assert found is not None and found.path == project["folder"].resolve()


def test_its_entries_are_searchable_as_their_own_layer(project: dict[str, Path]) -> None:
    before = snapshot(project["folder"])
    with Memory(project["root"], embedder=FakeEmbedder()) as memory:
        memory.index()
        hits = memory.search_exact("redis://localhost:6390")
        assert hits and hits[0].layer == "auto_memory" and hits[0].path == "auto-memory:testing.md"
        assert hits[0].title == "Claude Code's auto memory (written by the model): Testing"
        assert memory.search_exact("redis://localhost:6390", layers=["auto_memory"])
        assert not memory.search_exact("redis://localhost:6390", layers=["topic", "session"])
        found, mode = memory.search_memory("which port does redis use for the integration tests", k=10)
        assert mode == "hybrid" and any(h.path == "auto-memory:testing.md" for h in found)
        for text in ("plutonium", "x7Yzx7Yz"):  # behind a symlink or hard link out; a secret
            assert not any(text in h.text for h in memory.search_exact(text, k=20, layers=["auto_memory"]))
        got = memory.read("auto-memory:testing.md", 8, 9)
        assert got.text.startswith("- The integration tests need REDIS_URL") and SECRET not in got.text
        assert got.source is not None and "written by the model" in got.source and got.total_lines == 9
        for bad in ("auto-memory:leak.md", "auto-memory:../../x.md", "auto-memory:/etc/passwd.md", "auto-memory:a"):
            with pytest.raises(PathRefusedError):
                memory.read(bad)
        status = memory.status()
        assert status.files_by_layer["auto_memory"] == 6 and status.keyword_index.fresh is True
        skipped = {p.path: p.reason or "" for p in status.problem_files}
        assert "never read" in skipped["auto-memory:leak.md"] and "never read" in skipped["auto-memory:hard.md"]
    assert snapshot(project["folder"]) == before  # nothing written into Claude Code's folder


def test_status_reports_entries_past_the_limit_and_files_nothing_points_to(project: dict[str, Path]) -> None:
    with Memory(project["root"], keyword_only=True) as memory:
        status = memory.status()
    auto, notes = status.auto_memory, status.notes
    assert auto is not None and auto.files == 6  # leak.md and hard.md are listed, never read (they lead out)
    lines = INDEX.splitlines()
    past = [n + 1 for n in range(200, len(lines))]  # Claude Code loads the first 200 lines
    assert auto.past_limit_count == len(past) == 6
    assert auto.past_limit[-2].text.startswith("- Deploys go through the staging cluster first")
    assert sorted(auto.orphans) == ["hard.md", "leak.md", "orphan.md"]
    assert auto.outside_links == ["../../elsewhere/notes.md"]
    assert any("past the 200-line / 25,000-character limit" in n for n in notes)
    assert any("files nothing in MEMORY.md points to" in n for n in notes)
    shown = run_cli("status", "--root", str(project["root"]))
    assert "6 entries past the limit, 3 orphans" in shown.stdout


def test_the_character_limit_counts_too(project: dict[str, Path]) -> None:
    long = "# Memory\n\n" + "".join(f"- entry {n}: " + "x" * 300 + "\n" for n in range(100))
    (project["folder"] / "MEMORY.md").write_text(long, encoding="utf-8")
    with Memory(project["root"], keyword_only=True) as memory:
        auto = memory.status().auto_memory
    # 100 lines of about 312 characters: Claude Code stops at 25,000 characters, inside line 82
    assert auto is not None and auto.past_limit_count == 102 - 81 and auto.past_limit[0].line == 82


def test_the_layer_works_from_a_read_only_folder_and_can_be_turned_off(project: dict[str, Path]) -> None:
    folder = project["folder"]
    os.chmod(folder, 0o555)
    try:
        with Memory(project["root"], keyword_only=True) as memory:
            memory.index()
            assert memory.search_exact("tabs for indentation")
            assert memory.status().auto_memory is not None
        (project["root"] / "memory.yaml").write_text("auto_memory:\n  enabled: false\n", encoding="utf-8")
        with Memory(project["root"], keyword_only=True) as memory:
            memory.index()
            assert not memory.search_exact("tabs for indentation")
            assert memory.status().auto_memory is None
    finally:
        os.chmod(folder, 0o755)


# -- /dream: evidence for a fact at most ---------------------------------------------------------------


@pytest.fixture
def dreamable(project: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """One compressed session, so that a dream has something to read, and a topic to promote into."""
    folder = project["claude"] / "projects" / "-home-dev-project"
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(folder))
    s = Script("5e5e5e5e-1111-4111-8111-111111111111", dt.datetime(2026, 3, 5, tzinfo=dt.UTC))
    s.user("Fix the flaky integration test in the store.")
    s.assistant("Fixed: the test now waits for the server.")
    assert compress_transcript(s.save(folder), MemoryRoot(project["root"]))
    (project["root"] / "topics" / "testing.md").write_text(
        "---\ntitle: Testing\n---\n# Testing\n\n## Integration\n\n- Integration tests live in tests/it.\n"
    )
    return project


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def submit(root: Path, items: list[dict[str, Any]]) -> Any:
    path = root.parent / "items.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return propose(root, path, clock=lambda: NOW)


def fact(kind: str, statement: str, ref: str, quote: str, section: str = "Integration") -> dict[str, Any]:
    return {
        "kind": kind,
        "statement": statement,
        "stance": "adopted",
        "target": {"topic": "topics/testing.md", "section": section},
        "evidence": [{"ref": ref, "quote": quote}],
    }


def test_the_evidence_pack_holds_its_entries_as_the_models_words(dreamable: dict[str, Path]) -> None:
    pack = gather(dreamable["root"], clock=lambda: NOW).pack
    assert pack is not None
    n = line_of(TESTING, "REDIS_URL")
    assert "## Claude Code's auto memory" in pack.text
    assert f"`auto-memory:testing.md:{n}`" in pack.text and "written by the model" in pack.text
    assert "never for a decision" in pack.text
    assert SECRET not in pack.text and "plutonium" not in pack.text


def test_a_fact_citing_the_auto_memory_verifies(dreamable: dict[str, Path]) -> None:
    n = line_of(TESTING, "REDIS_URL")
    item = fact(
        "fact",
        "The integration tests need REDIS_URL=redis://localhost:6390 in the environment.",
        f"auto-memory:testing.md:{n}",
        "The integration tests need REDIS_URL=redis://localhost:6390",
    )
    result = submit(dreamable["root"], [item])
    assert result.id is not None, (result.refusals, result.message)
    report = (result.folder / "REPORT.md").read_text(encoding="utf-8")
    assert f"auto-memory:testing.md:{n}" in report and "Claude Code's auto memory (written by the model)" in report
    diff = (result.folder / "proposal.diff").read_text(encoding="utf-8")
    assert "+- The integration tests need REDIS_URL=redis://localhost:6390 in the environment." in diff
    shown = run_cli("dream", "record", f"auto-memory:testing.md:{n}", "--root", str(dreamable["root"]))
    assert shown.returncode == 0, shown.stderr
    assert f">> `auto-memory:testing.md:{n}`" in shown.stdout and "Claude Code's auto memory" in shown.stdout


def test_a_decision_resting_only_on_the_auto_memory_is_refused(dreamable: dict[str, Path]) -> None:
    n = line_of(STYLE, "tabs")
    item = fact(
        "decision",
        "Always use tabs for indentation in the Go files.",
        f"auto-memory:style.md:{n}",
        "Always use tabs for indentation in the Go files.",
    )
    result = submit(dreamable["root"], [item])
    assert result.id is None and len(result.refusals) == 1
    assert "never rests on Claude Code's auto memory" in result.refusals[0]
    # the same words as a fact are a rule, so a decision all the same: refused too
    as_fact = {**item, "kind": "fact"}
    refused = submit(dreamable["root"], [as_fact])
    assert refused.id is None and "auto memory" in refused.refusals[0]


def test_a_reference_into_the_auto_memory_must_name_a_line_that_holds_the_quote(dreamable: dict[str, Path]) -> None:
    wrong = fact("fact", "The cache warmer runs every 15 minutes.", "auto-memory:orphan.md:1", "every 15 minutes")
    result = submit(dreamable["root"], [wrong])
    assert result.id is None and "is not at auto-memory:orphan.md:1" in result.refusals[0]
    escape = fact("fact", "The vault password is known.", "auto-memory:../leak.md:3", "vault password")
    assert submit(dreamable["root"], [escape]).id is None
    hidden = fact("fact", "The vault password is plutonium-kettle-42.", "auto-memory:leak.md:3", "vault password")
    assert "not a file of Claude Code's auto memory" in submit(dreamable["root"], [hidden]).refusals[0]


def test_over_mcp_its_hits_reads_and_report_reach_the_client_marked_as_the_models(project: dict[str, Path]) -> None:
    import anyio
    from mcp_client import connect, payload

    async def main() -> None:
        async with connect(project["root"], env={"CLAUDE_CONFIG_DIR": str(project["claude"])}) as s:
            for _ in range(300):
                status = payload(await s.call_tool("memory_status", {}))
                if status["keyword_index"]["fresh"] and status["files_by_layer"].get("auto_memory"):
                    break
                await anyio.sleep(0.2)
            assert status["auto_memory"]["orphan_count"] == 3 and status["auto_memory"]["past_limit_count"] == 6
            got = payload(await s.call_tool("search_exact", {"query": "redis://localhost:6390", "k": 3}))
            hit = got["hits"][0]
            assert hit["layer"] == "auto_memory" and "written by the model" in got["titles"][hit["path"]]
            read = payload(await s.call_tool("read_memory", {"path": hit["path"], "start_line": hit["start_line"]}))
            assert "REDIS_URL" in read["text"] and "written by the model" in read["source"]

    anyio.run(main)


def test_a_memory_root_made_in_claude_codes_memory_folder_is_not_read_twice(project: dict[str, Path]) -> None:
    folder = project["folder"]
    init_root(folder)  # the set-up docs/settings.md describes: the memory root is that folder itself
    root = MemoryRoot(folder)
    assert auto_memory.locate(root, load_settings(folder)) is None
    with Memory(folder, keyword_only=True) as memory:
        memory.index()
        assert "auto_memory" not in memory.status().files_by_layer
        assert memory.search_exact("the parser handles case 7")[0].path == "MEMORY.md"
