"""The Python API: `Memory` covers what the command line does, one call per command, as a context manager, and
hides no state (properties do not write, listings do not set fields, its worker changes it only by calling it)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import click
import pytest
from conftest import write
from test_dream import NOW, good_items, make_root, write_items

from memory_server import Memory
from memory_server.files.root import STATE_DIR, MemoryRoot
from memory_server.testing import FakeEmbedder

PACKAGE = Path(__file__).resolve().parents[1] / "memory_server"
SID = "7c1e2d3f-0000-4000-8000-00000000beef"


def transcript(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "sessionId": SID, "timestamp": "2026-03-01T10:00:00Z",
         "message": {"role": "user", "content": "Move the retry loop into the uploader"}},
        {"type": "assistant", "sessionId": SID, "timestamp": "2026-03-01T10:01:00Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "text", "text": "Done."}]}},
    ]  # fmt: skip
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_init_index_compress_and_search_are_one_call_each(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "CLAUDE.md").write_text("# Project\n", encoding="utf-8")
    made = Memory.init(root)
    assert "MEMORY.md" in made.created and [w.path for w in made.wired if w.added] == ["CLAUDE.md"]
    assert Memory.init(root).created == [] and not [w for w in Memory.init(root).wired if w.added]  # idempotent
    write(root, "topics/uploads.md", "# Uploads\n\nThe uploader retries three times.\n")
    with Memory(root, keyword_only=True) as memory:
        compressed = memory.compress([transcript(tmp_path / "projects")])
        assert compressed.ok and len(compressed.written) == 1
        assert memory.compress([transcript(tmp_path / "projects")]).written == []  # nothing new
        memory.index()
        assert memory.search_exact("retries three times")[0].path == "topics/uploads.md"
        # the session's transcript is kept in the root (sessions/transcripts/), and searchable as its transcript
        assert memory.status().files_by_layer == {"topic": 3, "session": 1, "transcript": 1}


def test_every_dream_command_is_one_call(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    with Memory(root, keyword_only=True) as memory:
        memory.dream.clock = lambda: NOW
        assert memory.dream.status()["unprocessed_sessions"] > 0
        gathered = memory.dream.gather()
        assert gathered.path is not None and gathered.path.is_file()
        proposed = memory.dream.propose(write_items(root, good_items()))
        assert proposed.id is not None and not proposed.refusals, proposed.refusals
        shown = memory.dream.show()
        assert shown["id"] == proposed.id and "apply cleanly" in shown["check"]
        changes = [c["n"] for c in shown["changes"]]
        applied = memory.dream.apply(changes=changes[:1])
        assert applied["changes"] == changes[:1] and applied["files"]
        rejected = memory.dream.reject(changes=changes[1:2])
        assert rejected["action"] == "reject" and rejected["changes"] == changes[1:2]
        assert "turns around line" in memory.dream.record(good_items()[0]["evidence"][0]["ref"], 1)
        assert memory.dream.run().message


def test_memory_is_a_context_manager_that_closes_its_indices(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    with Memory(root, embedder=FakeEmbedder()) as memory:
        memory.index()
        assert memory.search_memory("uv sync")[0]
        assert memory.fts.open_connections >= 1
    assert memory.closing and memory.fts.open_connections == 0


def test_keyword_only_is_a_mode_of_its_own(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    with Memory(root, keyword_only=True) as memory:
        assert memory.embedder is None and memory.vectors is None
        memory.index()
        assert memory.search_memory("uv sync")[1] == "keyword"
    with pytest.raises(ValueError, match="keyword-only"):
        Memory(root, keyword_only=True, embedder=FakeEmbedder())


def test_the_state_folder_is_made_by_a_call_never_by_reading_a_property(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, "MEMORY.md", "# Memory\n")
    mroot = MemoryRoot(root)
    assert mroot.state_path == root / STATE_DIR and not mroot.state_path.exists()
    assert mroot.ensure_state_dir().is_dir()


def test_listing_the_files_says_what_it_left_out_without_being_iterated(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "topics" / "linked").symlink_to(outside)
    listed = MemoryRoot(root).memory_files()
    assert [path for path, _why in listed.left_out] == ["topics/linked/"]
    assert dict(listed)["topics/tooling.md"] == "topic" and len(listed) == len(listed.layers)


def test_the_background_worker_changes_its_memory_only_by_calling_it() -> None:
    tree = ast.parse((PACKAGE / "background.py").read_text(encoding="utf-8"))
    writes = [
        ast.unparse(target)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if ast.unparse(target).startswith("self.memory.")
    ]
    assert writes == []


def test_the_python_api_document_shows_every_command_s_call() -> None:
    """docs/python-api.md names each memory command of the command line beside the call that does it (the
    wiring commands, serve and the hooks aside)."""
    from memory_server.cli import cli

    text = (PACKAGE.parent / "docs" / "python-api.md").read_text(encoding="utf-8")
    wiring = {"serve", "hook", "plugin", "hooks"}
    commands = [name for name in cli.commands if name not in wiring and name != "dream"]
    dream = cli.commands["dream"]
    assert isinstance(dream, click.Group)
    commands += [f"dream {name}" for name in dream.commands]
    assert [c for c in commands if f"memory-server {c}" not in text] == []
