"""The transcript parser reads every Claude Code transcript shape it is given and never fails on a bad line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_TRANSCRIPTS, require_shared

from memory_server.errors import TranscriptError
from memory_server.sessions.reader import (
    Message,
    messages_between,
    parse_transcript,
    request_text,
    transcript_messages,
)


def shared(sub: str = "") -> list[Path]:
    """The shared transcripts; when there are none, the one path that is missing (the folder, else its
    `*.jsonl`), so that their tests skip naming what they need."""
    folder = SHARED_TRANSCRIPTS / sub
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    return files or [folder / "*.jsonl" if folder.is_dir() else folder]


def require(path: Path) -> Path:
    return require_shared(path)


ALL = shared() + shared("fixtures")


def raw_records(path: Path) -> list[tuple[int, object]]:
    """(line, decoded JSON or None) for every non-blank line: an independent reading of the file."""
    out = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if raw.strip():
            try:
                out.append((n, json.loads(raw.decode("utf-8", "replace"))))
            except ValueError:
                out.append((n, None))
    return out


def test_shared_transcripts_are_there() -> None:
    for sub in ("", "fixtures"):
        for path in shared(sub):
            require(path)
    assert len(shared()) >= 5 and len(shared("fixtures")) >= 5


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:60])
def test_every_shared_transcript_parses(path: Path) -> None:
    t = parse_transcript(require(path))
    records = raw_records(path)
    assert t.line_count == len(path.read_bytes().rstrip(b"\n").split(b"\n"))
    assert t.bad_lines == [n for n, rec in records if not isinstance(rec, dict)]
    lines = [m.line for m in t.messages]
    assert lines == sorted(lines)
    by_line = dict(records)
    for m in t.messages:
        assert 1 <= m.line <= m.end_line <= t.line_count
        assert isinstance(by_line[m.line], dict), "a message must start on a JSON object line"
        assert m.role in ("user", "assistant", "system", "summary")
    # Every tool call and tool result in the file is read, wherever it sits.
    raw_uses = sum(
        1
        for _, rec in records
        if isinstance(rec, dict)
        and isinstance(rec.get("message"), dict)
        and isinstance(rec["message"].get("content"), list)
        for b in rec["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )
    raw_uses += sum(1 for _, rec in records if isinstance(rec, dict) and rec.get("type") == "tool_use")
    assert sum(len(m.tool_uses) for m in t.messages) == raw_uses
    for m in transcript_messages(path):
        assert m.search_text
        if m.thinking.strip() and m.thinking.strip() not in m.text:
            assert m.thinking.strip() not in m.search_text


@pytest.mark.parametrize("path", shared(), ids=lambda p: p.name[:60])
def test_real_sessions_have_their_facts(path: Path) -> None:
    records = [rec for _, rec in raw_records(require(path)) if isinstance(rec, dict)]
    t = parse_transcript(path)
    messages = [r for r in records if r.get("type") in ("user", "assistant")]
    if not messages:  # the summary-only file
        assert [m.role for m in t.messages] == ["summary"]
        return
    assert t.session_id == messages[0]["sessionId"]
    assert t.cwd == messages[0]["cwd"]
    assert t.version == messages[-1]["version"]
    assert t.started is not None and t.started.isoformat().startswith(messages[0]["timestamp"][:19])
    # Each tool result is paired with the call it answers (the last call may have none: the session ended).
    answered = {
        b["tool_use_id"]
        for r in messages
        if isinstance(r["message"].get("content"), list)
        for b in r["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    for m in t.messages:
        for use in m.tool_uses:
            assert (t.result_of(use) is not None) == (use.id in answered), f"{use.name} at line {m.line}"


def write_lines(path: Path, lines: list[bytes | str | dict]) -> Path:
    out = []
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line)
        out.append(line if isinstance(line, bytes) else line.encode("utf-8"))
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def user(text: object, **extra: object) -> dict:
    return {
        "type": "user",
        "sessionId": "s-1",
        "cwd": "/w",
        "timestamp": "2026-01-02T03:04:05Z",
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(blocks: list, mid: str = "m1", **extra: object) -> dict:
    return {
        "type": "assistant",
        "sessionId": "s-1",
        "timestamp": "2026-01-02T03:04:06Z",
        "message": {"id": mid, "role": "assistant", "content": blocks},
        **extra,
    }


def test_bad_lines_are_counted_never_raised(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            user("first"),
            b"",
            b"   ",
            b"this is not json {",
            b"[1, 2, 3]",
            b"42",
            b'"a string"',
            b'{ "type" :   "user" ,"message":{ "role":"user",  "content" : "spaced out" } }',
            b'{"type": "user", "message": {"role": "user", "content": "caf\xe9 \xff bytes"}}',
            {"message": {"role": "assistant", "content": "no type field"}},
            {"type": "some-future-record", "payload": {"x": 1}},
            {"type": "summary", "summary": "A summary line"},
            {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
            {"type": "user", "message": "not an object"},
            {"type": "user", "message": {"role": "user", "content": ["bare string block", {"type": "image"}]}},
            b"{" * 100000 + b"}" * 100000,
        ],
    )
    t = parse_transcript(path)
    assert t.bad_lines == [4, 5, 6, 7, 16]
    assert t.blank_lines == 2
    assert t.record_types["some-future-record"] == 1
    texts = {m.line: m.text for m in t.messages}
    assert texts[1] == "first" and texts[8] == "spaced out" and texts[10] == "no type field"
    assert "caf\ufffd \ufffd bytes" == texts[9]
    assert texts[12] == "A summary line"
    assert [m.subtype for m in t.messages if m.role == "system"] == ["compact_boundary"]
    assert 14 not in texts
    assert texts[15] == "bare string block" and next(m for m in t.messages if m.line == 15).images == 1


def test_an_unfinished_last_line_is_left_for_later(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(user("one")).encode() + b"\n" + b'{"type": "user", "mess')
    t = parse_transcript(path)
    assert t.incomplete_tail and t.line_count == 1 and t.bad_lines == []
    path.write_bytes(json.dumps(user("one")).encode() + b"\n" + json.dumps(user("two")).encode())
    t = parse_transcript(path)  # complete JSON without a final newline counts
    assert not t.incomplete_tail and t.line_count == 2 and [m.text for m in t.messages] == ["one", "two"]


def test_split_api_message_is_merged_and_blocks_are_read(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            user("please list files"),
            assistant([{"type": "thinking", "thinking": "secret plan"}], mid="msg_1"),
            assistant([{"type": "text", "text": "Listing."}], mid="msg_1"),
            assistant([{"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"command": "ls"}}], mid="msg_1"),
            {
                "type": "user",
                "toolUseResult": {"stdout": "a\nb", "stderr": ""},
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "a\nb"}],
                },
            },
            assistant([{"type": "text", "text": "Done."}], mid="msg_2"),
        ],
    )
    t = parse_transcript(path)
    merged = t.messages[1]
    assert (merged.line, merged.end_line) == (2, 4)
    assert merged.text == "Listing." and merged.thinking == "secret plan"
    assert merged.tool_uses == [("Bash", {"command": "ls"}, "tu_1", 4)]
    assert merged.text_lines == [(3, "Listing.")]  # each text block where it was written
    result = t.result_of(merged.tool_uses[0])
    assert result is not None and result[:3] == ("tu_1", "a\nb", False)
    assert result.data == {"stdout": "a\nb", "stderr": ""}
    assert "secret plan" not in merged.search_text and "[Bash]" in merged.search_text
    assert [m.line for m in messages_between(path, 3, 5)] == [2, 5]


def test_calls_and_results_without_ids_are_paired_in_order(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            user("go"),
            {"type": "tool_use", "name": "bash", "input": {"command": "cat README.md"}},
            {"type": "tool_result", "name": "bash", "output": "# Title"},
            assistant([{"type": "tool_use", "name": "bash", "input": {"command": "false"}}], mid=""),
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "tool_result", "content": "boom", "is_error": True}]},
            },
        ],
    )
    t = parse_transcript(path)
    uses = [u for m in t.messages for u in m.tool_uses]
    results = [t.result_of(u) for u in uses]
    assert [r.text if r else None for r in results] == ["# Title", "boom"]
    assert results[1] is not None and results[1].is_error


def test_session_id_prefers_a_uuid_file_name(tmp_path: Path) -> None:
    name = "0b9f7a52-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    t = parse_transcript(write_lines(tmp_path / f"{name}.jsonl", [user("hi", sessionId="older-session")]))
    assert t.session_id == name
    t = parse_transcript(write_lines(tmp_path / "copy.jsonl", [user("hi", sessionId="from-record")]))
    assert t.session_id == "from-record"
    t = parse_transcript(write_lines(tmp_path / "bare.jsonl", [{"type": "summary", "summary": "x"}]))
    assert t.session_id == "bare"


def test_flags_from_the_schema_zoo() -> None:
    t = parse_transcript(require(SHARED_TRANSCRIPTS / "fixtures" / "jazzyalex__agent-sessions__small.jsonl"))
    records = dict(raw_records(SHARED_TRANSCRIPTS / "fixtures" / "jazzyalex__agent-sessions__small.jsonl"))
    compact = [n for n, r in records.items() if isinstance(r, dict) and r.get("isCompactSummary")]
    assert compact and all(m.is_compact_summary for m in t.messages if m.line in compact)
    boundaries = [n for n, r in records.items() if isinstance(r, dict) and r.get("subtype") == "compact_boundary"]
    assert boundaries and {m.line for m in t.messages if m.subtype == "compact_boundary"} == set(boundaries)
    subagent = (
        "jazzyalex__agent-sessions__subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f_subagents_agent-a0ad4f44468bdf20d"
    )
    sub = parse_transcript(require(SHARED_TRANSCRIPTS / "fixtures" / f"{subagent}.jsonl"))
    assert sub.messages and all(m.is_sidechain for m in sub.messages if m.role in ("user", "assistant"))
    assert {m.agent_id for m in sub.messages if m.role == "assistant"} == {"a0ad4f44468bdf20d"}


def test_unreadable_transcript_raises_transcript_error(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read transcript"):
        parse_transcript(tmp_path / "nope.jsonl")
    with pytest.raises(TranscriptError):
        parse_transcript(tmp_path)


def msg(text: str, **kw: object) -> Message:
    return Message(line=1, end_line=1, role=kw.pop("role", "user"), text=text, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.",
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        "<local-command-stdout>Total cost: $0.12</local-command-stdout>",
        "[Request interrupted by user for tool use]",
        "<bash-input>ls</bash-input>",
        "<system-reminder>only a reminder</system-reminder>",
    ],
)
def test_noise_is_not_a_request(text: str) -> None:
    assert request_text(msg(text)) is None


def test_what_counts_as_a_request() -> None:
    assert request_text(msg("fix the login bug")) == ("fix the login bug", True)
    orchestrate = (
        "<command-message>x is running…</command-message>\n<command-name>/orchestrator</command-name>\n"
        "<command-args>create TODO app</command-args>"
    )
    assert request_text(msg(orchestrate)) == ("/orchestrator create TODO app", True)
    assert request_text(msg("<command-name>/init</command-name>")) == ("/init", False)
    assert request_text(msg("expanded prompt", is_meta=True)) is None
    assert request_text(msg("subagent prompt", is_sidechain=True)) is None
    assert request_text(msg("summary of earlier", is_compact_summary=True)) is None
    assert request_text(msg("a task finished", origin="task-notification")) is None
    assert request_text(msg("the reply", role="assistant")) is None
