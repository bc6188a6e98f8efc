"""Compression: real sessions become small, readable, append-only, redacted Markdown summaries."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
import yaml
from conftest import CLI, REPO, SHARED_TRANSCRIPTS, require_shared, run_cli
from filelock import FileLock

from memory_server.errors import LockedError, PathRefusedError, TranscriptError
from memory_server.files.root import MemoryRoot
from memory_server.parse.frontmatter import read_front_matter
from memory_server.sessions.compress import compress_all, compress_transcript
from memory_server.sessions.failures import changes_things
from memory_server.sessions.render import MAX_COMMANDS

FRONT_MATTER_KEYS = [
    "format",
    "session_id",
    "part",
    "started",
    "ended",
    "cwd",
    "branch",
    "claude_code_version",
    "transcript",
    "transcript_sha256",
    "lines",
    "counts",
]
COUNT_KEYS = ["messages", "requests", "tool_calls", "commands", "failed_commands", "errors", "corrections", "commits"]
SECTIONS = {
    "## Goal",
    "## What the user said",
    "## Corrections",
    "## Questions and answers",
    "## Decisions",
    "## Errors and fixes",
    "## Commits",
    "## Actions in other tools",
    "## Files",
    "## Commands",
    "## Claude Code's own summary",
    "## Open at the end",
}


def shared(sub: str = "") -> list[Path]:
    """The shared transcripts; when there are none, the one path that is missing (the folder, else its
    `*.jsonl`), so that their tests skip naming what they need."""
    folder = SHARED_TRANSCRIPTS / sub
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    return files or [folder / "*.jsonl" if folder.is_dir() else folder]


def require(path: Path) -> Path:
    return require_shared(path)


def records(path: Path) -> list[dict]:
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def is_real_session(path: Path) -> bool:
    return any(r.get("type") == "user" for r in records(path))


REAL = [p for p in shared() if not p.is_file() or is_real_session(p)]
SUMMARY_ONLY = [p for p in shared() if p.is_file() and not is_real_session(p)]


@pytest.fixture
def memroot(tmp_path: Path) -> MemoryRoot:
    (tmp_path / "root" / "topics").mkdir(parents=True)  # a memory root: only those are written to
    return MemoryRoot(tmp_path / "root")


def session_files(root: MemoryRoot) -> list[Path]:
    return sorted(root.sessions_dir.rglob("*.md")) if root.sessions_dir.is_dir() else []


def squash(text: str) -> str:
    return " ".join(text.split())


# -- facts pulled from the raw transcript, independently of the parser ------------------------------------


def texts_of(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and "text" in b]
    return []


def first_request(path: Path) -> str:
    """The first thing the person typed: plain text or a slash command's arguments, else a bare /command."""
    commands = []
    for rec in records(path):
        if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isSidechain"):
            continue
        for text in texts_of(rec.get("message", {}).get("content")):
            if "<command-name>" in text:
                args = text.split("<command-args>")[1].split("</command-args>")[0] if "<command-args>" in text else ""
                if args.strip():
                    return args.strip()
                commands.append("/" + text.split("<command-name>")[1].split("</command-name>")[0].lstrip("/"))
                continue
            if text.startswith(("Caveat:", "<local-command", "[Request interrupted")):
                continue
            return text
    assert commands, f"no request in {path}"
    return commands[0]


def tool_uses(path: Path, names: set[str]) -> list[dict]:
    out = []
    for rec in records(path):
        content = rec.get("message", {}).get("content") if isinstance(rec.get("message"), dict) else None
        if isinstance(content, list):
            out += [
                b for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") in names
            ]
    return out


def tool_inputs(path: Path, names: set[str]) -> list[dict]:
    return [u["input"] for u in tool_uses(path, names)]


def failed_tool_ids(path: Path) -> set[str]:
    out: set[str] = set()
    for rec in records(path):
        content = rec.get("message", {}).get("content") if isinstance(rec.get("message"), dict) else None
        if isinstance(content, list):
            out |= {
                str(b.get("tool_use_id"))
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("is_error") is True
            }
    return out


def edited_files(path: Path) -> set[str]:
    """Files a write or edit succeeded on (a rejected or refused one never touched its file)."""
    cwd = next(r["cwd"] for r in records(path) if r.get("cwd"))
    failed = failed_tool_ids(path)
    uses = [u for u in tool_uses(path, {"Write", "Edit", "MultiEdit", "NotebookEdit"}) if u["id"] not in failed]
    paths = {u["input"].get("file_path") or u["input"].get("notebook_path") for u in uses}
    return {os.path.relpath(p, cwd) if p.startswith(cwd + "/") else p for p in paths if p}


def bash_commands(path: Path) -> list[str]:
    """Every distinct shell command, in the order first run."""
    return list(dict.fromkeys(i["command"] for i in tool_inputs(path, {"Bash"}) if i.get("command")))


def split(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    end = text.index("\n---\n", 4)
    return yaml.safe_load(text[4:end]), text[end + 5 :]


# -- real sessions ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:60])
def test_real_session_compresses_to_a_file_naming_its_work(path: Path, memroot: MemoryRoot) -> None:
    written = compress_transcript(require(path), memroot)
    assert len(written) == 1 and written == session_files(memroot)
    out = written[0]
    meta, body = split(out.read_text(encoding="utf-8"))
    raw = [r for r in records(path) if r.get("type") in ("user", "assistant")]

    assert list(meta) == FRONT_MATTER_KEYS and list(meta["counts"]) == COUNT_KEYS
    assert meta["session_id"] == raw[0]["sessionId"] and meta["part"] == 1
    assert meta["started"].startswith(raw[0]["timestamp"][:19]) and meta["ended"].endswith("Z")
    assert meta["cwd"] == raw[0]["cwd"] and meta["claude_code_version"] == raw[-1]["version"]
    assert meta["transcript"] == str(path.absolute())
    assert meta["transcript_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert meta["lines"] == [1, len(path.read_bytes().splitlines())]
    assert meta["counts"]["commands"] == len(tool_inputs(path, {"Bash"}))

    date = meta["started"][:10]
    assert out.parent == memroot.sessions_dir / date[:4]
    assert out.name.startswith(f"{date}-{meta['session_id'][:8]}-") and out.name.isascii()
    assert len(out.stem.split("-", 4)[-1].split("-")) <= 6  # a slug of at most six words

    flat = squash(body)
    assert squash(first_request(path))[:60] in flat
    for rel in edited_files(path):
        assert f"`{rel}`" in body, rel
    changing = [c for c in bash_commands(path) if changes_things(c)]  # looking around is left out
    # A long list keeps its first two thirds (and its last third): the first ones are always there.
    for command in changing if len(changing) <= MAX_COMMANDS else changing[: MAX_COMMANDS - MAX_COMMANDS // 3]:
        assert squash(command)[:60] in flat, command
    for heading in ("# ", "## Goal"):
        assert heading in body
    assert meta["format"] == 2
    assert all(h in SECTIONS for h in (ln for ln in body.splitlines() if ln.startswith("## ")))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:60])
def test_recompressing_is_a_no_op_and_output_is_deterministic(path: Path, tmp_path: Path) -> None:
    roots = []
    for name in ("a", "b"):
        (tmp_path / name / "topics").mkdir(parents=True)
        roots.append(MemoryRoot(tmp_path / name))
    first = compress_transcript(require(path), roots[0])
    before = {p: p.read_bytes() for p in session_files(roots[0])}
    assert compress_transcript(path, roots[0]) == []
    assert {p: p.read_bytes() for p in session_files(roots[0])} == before
    second = compress_transcript(path, roots[1])
    assert [p.name for p in first] == [p.name for p in second]
    assert first[0].read_bytes() == second[0].read_bytes()


def test_big_transcripts_shrink_at_least_tenfold(memroot: MemoryRoot) -> None:
    big = [p for p in REAL if require(p).stat().st_size > 100_000]
    assert len(big) >= 3
    for path in big:
        (out,) = compress_transcript(path, memroot)
        assert out.stat().st_size * 10 <= path.stat().st_size, (path.name, out.stat().st_size)


def test_tool_output_and_thinking_stay_out(memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl")
    (out,) = compress_transcript(path, memroot)
    text = out.read_text(encoding="utf-8")
    outputs = [
        r["toolUseResult"]["stdout"]
        for r in records(path)
        if isinstance(r.get("toolUseResult"), dict) and len(r["toolUseResult"].get("stdout") or "") > 400
    ]
    assert outputs
    for stdout in outputs:
        middle = stdout[len(stdout) // 2 : len(stdout) // 2 + 60]
        assert middle not in text
    large = require(SHARED_TRANSCRIPTS / "fixtures" / "jazzyalex__agent-sessions__large.jsonl")
    (out,) = compress_transcript(large, memroot)
    assert "Do thing" not in out.read_text(encoding="utf-8")  # the thinking block's plan


def test_slash_command_noise_stays_out(memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "fixtures" / "daaain__claude-code-log__edge_cases.jsonl")
    (out,) = compress_transcript(path, memroot)
    text = out.read_text(encoding="utf-8")
    for noise in (
        "<command-",
        "<local-command-stdout>",
        "Caveat:",
        "Command output here",
        "Running a test command",
        "This is the actual command content",
    ):
        assert noise not in text
    assert "/test-command --verbose --output /tmp/test.log" in text  # a prompt command with arguments is a request
    assert "Here's a message with some **markdown** formatting" in text


@pytest.mark.parametrize(
    "path",
    SUMMARY_ONLY + [SHARED_TRANSCRIPTS / "fixtures" / "ryoppippi__ccusage__project-alpha_session-alpha_chat.jsonl"],
    ids=lambda p: p.name[:60],
)
def test_a_transcript_without_a_request_gives_nothing(path: Path, memroot: MemoryRoot) -> None:
    assert compress_transcript(require(path), memroot) == []
    assert session_files(memroot) == []


def test_the_summary_only_session_is_there() -> None:
    require(SHARED_TRANSCRIPTS)
    assert SUMMARY_ONLY, f"expected a summary-only transcript among {SHARED_TRANSCRIPTS}"


# -- append-only continuations ----------------------------------------------------------------------------


def test_a_grown_transcript_gets_a_continuation(tmp_path: Path, memroot: MemoryRoot) -> None:
    original = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl")
    lines = original.read_bytes().splitlines(keepends=True)
    requests = [
        i
        for i, raw in enumerate(lines)
        if json.loads(raw).get("type") == "user" and isinstance(json.loads(raw)["message"]["content"], str)
    ]
    cut = requests[2]  # the session so far: two requests and their work
    copy = tmp_path / original.name
    copy.write_bytes(b"".join(lines[:cut]))

    (part1,) = compress_transcript(copy, memroot)
    first_bytes = part1.read_bytes()
    assert split(part1.read_text())[0]["lines"] == [1, cut]
    assert compress_transcript(copy, memroot) == []

    with open(copy, "ab") as fh:
        fh.write(b"".join(lines[cut:]))
    (part2,) = compress_transcript(copy, memroot)
    assert part1.read_bytes() == first_bytes
    assert part2.parent == part1.parent and part2.name == part1.stem + "-part2.md"
    meta, body = split(part2.read_text())
    assert meta["part"] == 2 and meta["lines"] == [cut + 1, len(lines)]
    assert meta["session_id"] == split(part1.read_text())[0]["session_id"]
    assert meta["transcript_sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest()
    later_request = json.loads(lines[cut])["message"]["content"]
    earlier_request = json.loads(lines[requests[1]])["message"]["content"]
    assert squash(later_request)[:60] in squash(body)
    assert squash(earlier_request)[:60] not in squash(body)
    assert part1.name in body  # it says what it continues
    assert compress_transcript(copy, memroot) == []

    # Only summary records appended: nothing worth a part 3 yet.
    with open(copy, "ab") as fh:
        fh.write(json.dumps({"type": "summary", "summary": "later title", "leafUuid": "x"}).encode() + b"\n")
    assert compress_transcript(copy, memroot) == []
    assert len(session_files(memroot)) == 2


def test_what_was_compressed_is_read_from_the_files_not_from_state(tmp_path: Path, memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    (out,) = compress_transcript(path, memroot)
    for p in sorted(memroot.ensure_state_dir().rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    memroot.ensure_state_dir().rmdir()
    assert compress_transcript(path, memroot) == []
    assert read_front_matter(out)["lines"] == [1, 21]


# -- safety -------------------------------------------------------------------------------------------------

PLANTED = {
    "anthropic": "sk-ant-api03-PLANTEDkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFG-xyz",
    "aws": "AKIAPLANTED0KEY12345",
    "password": "hunter2planted",
    "private": "my very private diary entry",
}


def planted_transcript(tmp_path: Path) -> Path:
    base = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    first = records(base)[1]
    common = {k: first[k] for k in ("sessionId", "cwd", "version", "userType")}

    def rec(kind: str, content: object, ts: str, **extra: object) -> bytes:
        msg = {"role": kind, "content": content, **({"id": extra.pop("mid")} if "mid" in extra else {})}
        return json.dumps({"type": kind, "timestamp": ts, "message": msg, **common, **extra}).encode() + b"\n"

    planted = [
        rec(
            "user",
            f"use key {PLANTED['anthropic']} and {PLANTED['aws']} to deploy; "
            f"db is https://admin:{PLANTED['password']}@db.example.com "
            f"<private>{PLANTED['private']}</private> then push",
            "2025-06-10T12:40:00.000Z",
        ),
        rec(
            "assistant",
            [
                {"type": "text", "text": f"I'll export the key {PLANTED['anthropic']} and deploy."},
                {
                    "type": "tool_use",
                    "id": "toolu_planted",
                    "name": "Bash",
                    "input": {
                        "command": f"export ANTHROPIC_API_KEY={PLANTED['anthropic']} && "
                        f"AWS_ACCESS_KEY_ID={PLANTED['aws']} ./deploy.sh"
                    },
                },
            ],
            "2025-06-10T12:40:01.000Z",
            mid="msg_planted",
        ),
        rec(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_planted",
                    "is_error": True,
                    "content": f"Error: login failed for https://admin:{PLANTED['password']}@db.example.com",
                }
            ],
            "2025-06-10T12:40:02.000Z",
        ),
    ]
    path = tmp_path / "planted.jsonl"
    path.write_bytes(b"".join(planted) + base.read_bytes())
    return path


def test_secrets_and_private_text_never_reach_the_summary(tmp_path: Path, memroot: MemoryRoot) -> None:
    (out,) = compress_transcript(planted_transcript(tmp_path), memroot)
    text = out.read_text(encoding="utf-8")
    for secret in PLANTED.values():
        assert secret not in text
    assert "PLANTED" not in text and "diary" not in text
    assert "[REDACTED]" in text and "./deploy.sh" in text and "then push" in text
    assert out.name.isascii() and "sk-ant" not in out.name


def test_a_transcript_outside_the_transcript_root_is_refused(tmp_path: Path, memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    (tmp_path / "projects").mkdir()
    with pytest.raises(PathRefusedError, match="outside the transcript folder"):
        compress_transcript(path, memroot, transcript_root=tmp_path / "projects")
    assert compress_transcript(path, memroot, transcript_root=SHARED_TRANSCRIPTS)


def test_a_missing_transcript_raises_transcript_error(tmp_path: Path, memroot: MemoryRoot) -> None:
    with pytest.raises(TranscriptError):
        compress_transcript(tmp_path / "gone.jsonl", memroot)


# -- concurrency --------------------------------------------------------------------------------------------


def test_concurrent_compressions_write_one_file_set(tmp_path: Path, memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    results: list[list[Path]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(compress_transcript(path, memroot))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [*CLI, "compress", "--root", str(memroot.path), str(path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert not errors
    assert len(session_files(memroot)) == 1
    assert sum(len(r) for r in results) <= 1


def test_a_held_lock_times_out_with_locked_error(memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    holder = FileLock(str(memroot.ensure_state_dir() / "compress.lock"))
    result: list[BaseException] = []

    def attempt() -> None:  # another thread: a lock held by this thread would be re-entered
        try:
            compress_transcript(path, memroot, lock_timeout=0.3)
        except BaseException as exc:  # noqa: BLE001
            result.append(exc)

    with holder:
        t = threading.Thread(target=attempt)
        t.start()
        t.join()
    assert len(result) == 1 and isinstance(result[0], LockedError)
    assert "compress" in str(result[0]) and session_files(memroot) == []


# -- backfill and the command line ----------------------------------------------------------------------------


def test_compress_all_backfills_and_skips_subagents(tmp_path: Path, memroot: MemoryRoot) -> None:
    project = tmp_path / "projects" / "-Users-me-proj"
    (project / "subagents").mkdir(parents=True)
    names = [
        "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
        "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "chiphuyen__sniffly__ff71dbed-a4f2-4284-a4fc-fe2fb90de929.jsonl",
    ]
    for name in names:
        (project / name).write_bytes(require(SHARED_TRANSCRIPTS / name).read_bytes())
    fixtures = SHARED_TRANSCRIPTS / "fixtures"
    subagent = (
        "jazzyalex__agent-sessions__subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f_subagents_agent-a0ad4f44468bdf20d"
    )
    (project / "subagents" / "agent-a0ad4f44468bdf20d.jsonl").write_bytes(
        require(fixtures / f"{subagent}.jsonl").read_bytes()
    )
    (project / "agent-test-hash-123.jsonl").write_bytes(
        require(fixtures / "d-kimuson__claude-code-viewer__agent-test-hash-123.jsonl").read_bytes()
    )
    (project / "garbage.jsonl").write_bytes(b"\xff\xfe not json\n[1]\n")

    seen: list[tuple[int, int]] = []
    written = compress_all(tmp_path / "projects", memroot, progress=lambda done, total: seen.append((done, total)))
    assert len(written) == 2 and written == session_files(memroot)
    assert seen == [(i, 4) for i in range(1, 5)]
    assert compress_all(tmp_path / "projects", memroot) == []
    with pytest.raises(TranscriptError):
        compress_all(tmp_path / "nowhere", memroot)


def test_the_compress_command_compresses_and_reports_failures(tmp_path: Path, memroot: MemoryRoot) -> None:
    path = require(SHARED_TRANSCRIPTS / "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    r = run_cli("compress", "--root", str(memroot.path), str(path))
    assert r.returncode == 0, r.stderr
    (out,) = session_files(memroot)
    assert r.stdout.strip() == memroot.relpath(out)
    r = run_cli("compress", "--root", str(memroot.path), str(path))
    assert r.returncode == 0 and r.stdout == "" and "nothing new to compress" in r.stderr
    r = run_cli("compress", "--root", str(memroot.path), str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "cannot read transcript" in r.stderr and r.stdout == ""
    (tmp_path / "no-root").mkdir()
    r = run_cli("compress", "--root", str(tmp_path / "no-root"), str(path))
    assert r.returncode == 2 and r.stderr.strip(), r.stderr
    assert not (tmp_path / "no-root" / "sessions").exists()


def _session_lines(sid: str, replies: list[dict[str, object]]) -> str:
    records: list[dict[str, object]] = [
        {"type": "user", "sessionId": sid, "uuid": "u1", "timestamp": "2026-03-01T10:00:00Z",
         "message": {"role": "user", "content": "what does error E-4242 mean?"}},
    ]  # fmt: skip
    for i, reply in enumerate(replies):
        records.append({"type": "assistant", "sessionId": sid, "uuid": f"a{i}",
                        "timestamp": f"2026-03-01T10:0{i + 1}:00Z", **reply})  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in records)


NOT_LOGGED_IN: dict[str, object] = {
    "isApiErrorMessage": True,
    "message": {"role": "assistant", "model": "<synthetic>", "id": "s1",
                "content": [{"type": "text", "text": "Not logged in · Please run /login"}]},
}  # fmt: skip
REAL_REPLY: dict[str, object] = {
    "message": {"role": "assistant", "model": "claude-x", "id": "m1",
                "content": [{"type": "text", "text": "E-4242 means the belt tension is out of range."}]},
}  # fmt: skip


def test_replies_claude_code_wrote_in_the_agents_place_are_not_the_agents(tmp_path: Path, memroot: MemoryRoot) -> None:
    """Claude Code answers "Not logged in" (or an API error) in the agent's place: the record keeps what the
    person said and never shows that text as the agent's reply; a later real reply is recorded as usual."""
    sid = "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
    path = tmp_path / f"{sid}.jsonl"
    path.write_text(_session_lines(sid, [NOT_LOGGED_IN]), encoding="utf-8")
    [first] = compress_transcript(path, memroot)
    text = first.read_text(encoding="utf-8")
    assert "E-4242" in text and "Not logged in" not in text and "Assistant" not in text
    path.write_text(_session_lines(sid, [NOT_LOGGED_IN, REAL_REPLY]), encoding="utf-8")
    [second] = compress_transcript(path, memroot)
    assert "belt tension" in second.read_text(encoding="utf-8")


@pytest.mark.parametrize(("given", "recorded"), [("HEAD", None), ("feature/belts", "feature/belts")])
def test_the_branch_is_recorded_only_when_there_is_one(
    given: str, recorded: str | None, tmp_path: Path, memroot: MemoryRoot
) -> None:
    """Claude Code writes gitBranch "HEAD" for a folder that is not a git repository: that is no branch."""
    sid = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
    lines = [json.loads(line) for line in _session_lines(sid, [REAL_REPLY]).splitlines()]
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps({**r, "gitBranch": given}) + "\n" for r in lines), encoding="utf-8")
    [written] = compress_transcript(path, memroot)
    assert read_front_matter(written).get("branch") == recorded
