"""Kept copies: the evidence outlives Claude Code's clean-up of its transcripts.

Real transcripts (session_script.py and ../shared), real compression, real SQLite FTS5 and Chroma (with the fake
embedder), the real /dream checks. Each test deletes what Claude Code deletes, or shows the copy holds what the
parser reads and nothing it hides."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_TRANSCRIPTS, require_shared, run_cli
from session_script import Script

from memory_server import Memory
from memory_server.dream.pack import gather
from memory_server.dream.propose import propose
from memory_server.dream.record import from_transcript
from memory_server.errors import PathRefusedError
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_all, compress_transcript
from memory_server.sessions.kept import count_lines, find_kept
from memory_server.sessions.kept_budget import LEVELS
from memory_server.sessions.reader import parse_transcript
from memory_server.testing import FakeEmbedder

DAY = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
NOW = DAY.timestamp() + 10 * 86400
SID = "7a1c0e55-1111-4111-8111-111111111111"
TOKEN = "ghp_" + "Zq7XwP2mK9vR4tY6uB1nC3dE5fG8hJ0kL2aS"
PRIVATE = "HELIOTROPE-merger-7731"
L: dict[str, int] = {}


def story() -> Script:
    s = Script(SID, DAY)
    L["ask"] = s.user("Move the project from poetry to uv.")
    L["private"] = s.user(f"Context: <private>{PRIVATE} is why we hurry</private> so keep it short.")
    L["secret"] = s.bash("cat .env", f"GITHUB_TOKEN={TOKEN}\nDEBUG=1")[1]
    L["decide"] = s.user("We use uv from now on; run uv sync after pulling.")
    L["edit"] = s.edit("pyproject.toml", "[tool.poetry]", "[tool.uv]")[0]
    L["echo"] = s.assistant(f"Switched to uv. I did not mention {PRIVATE} anywhere.")
    L["done"] = s.assistant("The lock file is now uv.lock and `uv sync` installs everything.")
    return s


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A memory root, and Claude Code's folder with this project's transcripts (nothing of the real ~/.claude)."""
    claude = tmp_path / "claude"
    folder = claude / "projects" / "-home-dev-project"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(folder))
    transcript = story().save(folder)
    root = tmp_path / "project"
    init_root(root)
    return {"root": root, "folder": folder, "transcript": transcript, "claude": claude}


def kept_of(root: Path, transcript: Path) -> Path:
    found = find_kept(MemoryRoot(root), transcript.name.removesuffix(".jsonl"))
    assert found is not None, "no kept copy"
    return found


def messages(path: Path) -> list[tuple[Any, ...]]:
    return [(m.line, m.end_line, m.role, m.text, m.search_text) for m in parse_transcript(path).messages]


def test_compression_keeps_a_redacted_compressed_copy_line_for_line(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    raw = transcript.read_bytes()
    assert TOKEN.encode() in raw and PRIVATE.encode() in raw  # what must not be kept
    written = compress_transcript(transcript, MemoryRoot(root))
    assert written
    kept = kept_of(root, transcript)
    assert kept.relative_to(root).as_posix() == f"sessions/transcripts/2026/{SID}.jsonl.gz"
    data = gzip.decompress(kept.read_bytes())
    assert TOKEN.encode() not in data and PRIVATE.encode() not in data
    assert data.count(b"\n") == raw.count(b"\n")
    # every record is the one the parser read: the same messages at the same lines, redacted the same way
    assert messages(kept) == messages(transcript)
    assert count_lines(kept) == (raw.count(b"\n"), False)


def test_a_transcript_that_grows_gets_its_new_lines_appended(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    compress_transcript(transcript, MemoryRoot(root))
    kept = kept_of(root, transcript)
    before = kept.read_bytes()
    more = Script(SID, DAY + dt.timedelta(hours=2))
    more.user(f"Also drop the old poetry.lock file, and the token {TOKEN} is revoked.")
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in more.records))
    assert compress_transcript(transcript, MemoryRoot(root))  # a continuation part
    after = kept_of(root, transcript).read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # append-only: a new gzip member
    data = gzip.decompress(after)
    assert data.count(b"\n") == transcript.read_bytes().count(b"\n")
    assert b"poetry.lock file" in data and TOKEN.encode() not in data
    assert messages(kept) == messages(transcript)
    assert compress_transcript(transcript, MemoryRoot(root)) == []  # nothing new: the copy is not touched
    assert kept_of(root, transcript).read_bytes() == after


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout


def test_kept_copies_stay_out_of_git_unless_the_setting_commits_them(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    git(root, "init", "-q")
    compress_transcript(transcript, MemoryRoot(root))
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert "sessions/transcripts/.gitignore" in status and ".jsonl.gz" not in status
    (root / "memory.yaml").write_text("transcripts:\n  keep_commit: true\n", encoding="utf-8")
    result = run_cli("keep", "--root", str(root))
    assert result.returncode == 0, result.stderr
    (root / "sessions/transcripts/2026/new.jsonl.gz").write_bytes(b"")  # any copy is committed now
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert f"sessions/transcripts/2026/{SID}.jsonl.gz" in status


def test_keeping_can_be_turned_off(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    (root / "memory.yaml").write_text("transcripts:\n  keep: false\n", encoding="utf-8")
    assert compress_transcript(transcript, MemoryRoot(root))
    assert find_kept(MemoryRoot(root), SID) is None
    assert not (root / ".memory" / "keep").exists() or not list((root / ".memory" / "keep").iterdir())


def test_a_session_without_a_request_keeps_nothing(env: dict[str, Path]) -> None:
    root, folder = env["root"], env["folder"]
    empty = folder / "0000aaaa-0000-4000-8000-000000000000.jsonl"
    empty.write_text(json.dumps({"type": "summary", "summary": "a title", "leafUuid": "x"}) + "\n")
    assert compress_transcript(empty, MemoryRoot(root)) == []
    assert find_kept(MemoryRoot(root), empty.stem) is None


# -- the original deleted: every reader uses the kept copy and says so -------------------------------------


@pytest.fixture
def deleted(env: dict[str, Path]) -> dict[str, Path]:
    """The session compressed and kept, then Claude Code's transcript deleted (what its clean-up does)."""
    root = env["root"]
    with Memory(root, embedder=FakeEmbedder()) as memory:
        assert compress_all(env["folder"], MemoryRoot(root))
        memory.index()
        assert memory.search_exact("uv sync after pulling", layers=["transcript"])
    shutil.rmtree(env["folder"])
    return env


def test_search_exact_over_transcripts_reads_the_kept_copy_and_says_so(deleted: dict[str, Path]) -> None:
    with Memory(deleted["root"], embedder=FakeEmbedder()) as memory:
        memory.index()
        hits = memory.search_exact("uv sync after pulling", layers=["transcript"])
        assert hits and hits[0].path == f"transcript:{SID}" and hits[0].start_line == L["decide"]
        assert "kept copy" in hits[0].title and "Claude Code's transcript is gone" in hits[0].title
        assert not memory.search_exact(TOKEN, layers=["transcript"])
        assert not memory.search_exact(PRIVATE, layers=["transcript"])


def test_read_memory_on_a_transcript_hit_reads_the_kept_copy_and_says_so(deleted: dict[str, Path]) -> None:
    with Memory(deleted["root"], keyword_only=True) as memory:
        # even before the index notices: the recorded source is gone, the kept copy answers
        got = memory.read(f"transcript:{SID}", L["decide"], L["decide"])
        assert "We use uv from now on" in got.text and f"[lines {L['decide']}-{L['decide']}]" in got.text
        assert got.source is not None
        assert got.source.startswith("the kept copy (Claude Code's transcript is gone): sessions/transcripts/")
        secret = memory.read(f"transcript:{SID}", L["secret"], L["secret"]).text
        assert "GITHUB_TOKEN=" in secret and TOKEN not in secret


def test_the_mcp_tool_says_which_copy_it_read(deleted: dict[str, Path]) -> None:
    import anyio
    from mcp_client import connect, payload

    async def main() -> None:
        claude = {"CLAUDE_CONFIG_DIR": str(deleted["claude"]), "MEMORY_TRANSCRIPTS_DIR": str(deleted["folder"])}
        async with connect(deleted["root"], env=claude) as s:
            read = payload(await s.call_tool("read_memory", {"path": f"transcript:{SID}", "start_line": L["done"]}))
            assert "kept copy" in read["source"]

    anyio.run(main)


def items_file(tmp: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp / "items.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return path


def test_a_dream_verifies_transcript_lines_against_the_kept_copy(deleted: dict[str, Path], tmp_path: Path) -> None:
    root = deleted["root"]
    (root / "topics" / "tooling.md").write_text(
        "---\ntitle: Tooling\n---\n# Tooling\n\n## Dependencies\n\n- Dependencies are installed by hand.\n"
    )
    gathered = gather(root, clock=lambda: NOW)
    assert gathered.pack is not None
    assert f"the kept copy `sessions/transcripts/2026/{SID}.jsonl.gz` of transcript `transcript:{SID}`" in (
        gathered.pack.text
    )
    ref = f"transcript:{SID}:{L['decide']}"  # the line number in Claude Code's transcript
    good = {
        "kind": "decision",
        "statement": "The project uses uv; run uv sync after pulling.",
        "stance": "adopted",
        "target": {"topic": "topics/tooling.md", "section": "Dependencies"},
        "evidence": [{"ref": ref, "quote": "We use uv from now on; run uv sync after pulling."}],
    }
    wrong_line = {**good, "evidence": [{"ref": f"transcript:{SID}:{L['ask']}", "quote": "run uv sync after pulling"}]}
    refused = propose(root, items_file(tmp_path, [good, wrong_line]), clock=lambda: NOW)
    assert refused.id is None and len(refused.refusals) == 1 and "item 2" in refused.refusals[0]
    result = propose(root, items_file(tmp_path, [good]), clock=lambda: NOW)
    assert result.id is not None and result.folder is not None, (result.refusals, result.message)
    report = (result.folder / "REPORT.md").read_text(encoding="utf-8")
    assert ref in report and "We use uv from now on" in report
    assert f"(read from the kept copy `sessions/transcripts/2026/{SID}.jsonl.gz`)" in report


@pytest.mark.parametrize(
    "name", ["2026-02-06-6da7d497.jsonl", "2026-02-08-e4d2c72e.jsonl", "2026-02-07-d19ec7f9.jsonl"]
)
def test_a_records_references_are_the_same_from_the_kept_copy(name: str, tmp_path: Path) -> None:
    original = require_shared(SHARED_TRANSCRIPTS / "entire" / name)
    root = tmp_path / "memory"
    init_root(root)
    copy = tmp_path / "projects" / name
    copy.parent.mkdir()
    shutil.copy(original, copy)
    assert compress_transcript(copy, MemoryRoot(root))
    kept = kept_of(root, copy)
    a, b = from_transcript("s.md", copy), from_transcript("s.md", kept)
    assert a.ref_base == b.ref_base == f"transcript:{copy.stem}"
    assert [(t.ref, t.speaker, t.kind, t.text) for t in a.turns] == [
        (t.ref, t.speaker, t.kind, t.text) for t in b.turns
    ]
    assert [f.ref for f in a.failures] == [f.ref for f in b.failures]


# -- the byte budget ---------------------------------------------------------------------------------------


def test_the_budget_cuts_tool_output_never_the_words_people_wrote(env: dict[str, Path]) -> None:
    root, folder = env["root"], env["folder"]
    (root / "memory.yaml").write_text("transcripts:\n  keep_budget_bytes: 16384\n", encoding="utf-8")
    s = Script("9b9b9b9b-2222-4222-8222-222222222222", DAY)
    s.user("Dump the build log and tell me what failed. " + "Context words of mine. " * 200)
    noise = os.urandom(300_000).hex()  # incompressible tool output, 600 KB
    s.bash("make build", noise)
    s.assistant("The build failed in the linker step.")
    transcript = s.save(folder)
    assert compress_transcript(transcript, MemoryRoot(root))
    kept = kept_of(root, transcript)
    assert kept.stat().st_size <= 16384
    assert messages(kept)[0] == messages(transcript)[0]  # the person's words whole
    assert [m[:3] for m in messages(kept)] == [m[:3] for m in messages(transcript)]  # every line where it was
    tool_output = parse_transcript(kept).messages[2].tool_results[0].text
    assert len(tool_output) <= max(c for c in LEVELS if c) + 20 and "[… cut …]" in tool_output


def test_a_session_over_its_budget_at_every_level_is_kept_and_reported(env: dict[str, Path]) -> None:
    root, folder = env["root"], env["folder"]
    (root / "memory.yaml").write_text("transcripts:\n  keep_budget_bytes: 16384\n", encoding="utf-8")
    s = Script("9c9c9c9c-3333-4333-8333-333333333333", DAY)
    for _ in range(40):  # the person's own words are never cut, so they alone can pass the budget
        s.user(os.urandom(600).hex())
    transcript = s.save(folder)
    assert compress_transcript(transcript, MemoryRoot(root))
    kept = kept_of(root, transcript)
    assert kept.stat().st_size > 16384 and messages(kept) == messages(transcript)
    with Memory(root, keyword_only=True) as memory:
        kept_status = memory.status().kept_transcripts
    assert kept_status is not None
    assert kept_status.over_budget == [f"sessions/transcripts/2026/{transcript.stem}.jsonl.gz"]


# -- damage and confinement -------------------------------------------------------------------------------


def test_a_damaged_kept_copy_is_read_up_to_the_damage_and_never_appended_to(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    compress_transcript(transcript, MemoryRoot(root))
    kept = kept_of(root, transcript)
    whole = kept.read_bytes()
    extra = gzip.compress(b'{"type":"user","message":{"role":"user","content":"late words"}}\n')
    kept.write_bytes(whole + extra[: len(extra) // 2])  # a second member cut short by something else
    assert count_lines(kept) == (transcript.read_bytes().count(b"\n"), True)
    assert messages(kept) == messages(transcript)  # the lines before the damage still read
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "more"}}) + "\n")
    damaged = kept.read_bytes()
    compress_transcript(transcript, MemoryRoot(root))
    assert kept.read_bytes() == damaged  # left as it is
    with Memory(root, keyword_only=True) as memory:
        report = memory.keep_transcripts()
    assert report.failed and "damaged" in report.failed[0].note


def test_a_kept_copy_linked_from_outside_the_root_is_not_read(env: dict[str, Path], tmp_path: Path) -> None:
    root, transcript = env["root"], env["transcript"]
    outside = tmp_path / "outside.jsonl.gz"
    outside.write_bytes(gzip.compress(transcript.read_bytes()))  # unredacted
    folder = root / "sessions" / "transcripts" / "2026"
    folder.mkdir(parents=True)
    (folder / f"{SID}.jsonl.gz").symlink_to(outside)
    shutil.rmtree(env["folder"])
    with Memory(root, keyword_only=True) as memory:
        memory.index()
        assert not memory.search_exact("GITHUB_TOKEN", layers=["transcript"])
        with pytest.raises(PathRefusedError):
            memory.read(f"transcript:{SID}")


def test_another_transcript_of_the_same_name_is_never_appended_to_a_kept_copy(env: dict[str, Path]) -> None:
    root, transcript = env["root"], env["transcript"]
    compress_transcript(transcript, MemoryRoot(root))
    kept = kept_of(root, transcript)
    before = kept.read_bytes()
    other = Script(SID, DAY + dt.timedelta(days=3))  # same file name, another session's records
    for n in range(12):
        other.user(f"Unrelated request number {n} in a copied folder.")
    elsewhere = other.save(env["claude"] / "projects" / "-home-dev-other")
    assert compress_transcript(elsewhere, MemoryRoot(root))
    assert kept.read_bytes() == before
