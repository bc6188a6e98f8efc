"""Redaction finishes in linear time on text crafted to make patterns backtrack, in sessions and in queries,
and a stray `<private>` hides only the rest of its own text, teaching nothing.

The hang guards run the work in a child process with a deadline far above what linear time needs (the
benchmark `bench/redaction_timing.py` measures the time itself): the patterns these texts defeated took
minutes, and a regex in C cannot be interrupted from inside the process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import memory_server
from memory_server import Memory
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions import redact
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.redact import PRIVATE_MARK, SessionRedactor, clean

CODE = Path(memory_server.__file__).resolve().parents[1]  # the children import the same code as the test
DEADLINE_SECONDS = 120.0
# The texts the old patterns took 15 s to minutes on (x-x-x-: 135 s for 30 KB in one compression).
CRAFTED = ["x-", "a.", "mysql ", "ldap", "*", "curl -u ", "password=", "eyJ-", "key: ", "\\n", "%22", "sk-ant-"]


def _run_child(code: str) -> str:
    """Run `code` in a child process importing the same code; its stdout (a hang fails the test)."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=CODE,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_crafted_texts_of_100_kb_are_redacted_without_backtracking() -> None:
    out = _run_child(
        f"""
        from memory_server.sessions import redact
        for unit in {CRAFTED!r}:
            redact.clean((unit * (100_000 // len(unit) + 1))[:100_000])
        print(redact.budget_fired())
        """
    )
    assert out.split() == ["0"]  # every text checked in full: the last-resort budget never fired


def test_a_session_with_a_crafted_tool_output_compresses(tmp_path: Path) -> None:
    root = tmp_path / "root"
    init_root(root)
    folder = tmp_path / "projects"
    folder.mkdir()
    sid = "0badf00d-0000-4000-8000-000000000001"
    records = [
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": "Check the build output"}},
        {
            "type": "assistant",
            "sessionId": sid,
            "message": {
                "role": "assistant",
                "id": "m1",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}],
            },
        },
        {
            "type": "user",
            "sessionId": sid,
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "x-" * 30_000 + "\n" + "a." * 15_000}
                ],
            },
        },
    ]
    transcript = folder / f"{sid}.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = _run_child(
        f"""
        from memory_server.files.root import MemoryRoot
        from memory_server.sessions.compress import compress_transcript
        from memory_server.sessions import redact
        print(len(compress_transcript({str(transcript)!r}, MemoryRoot({str(root)!r}))), redact.budget_fired())
        """
    )
    assert out.split() == ["1", "0"]


def test_a_long_crafted_query_is_answered(root: Path) -> None:
    out = _run_child(
        f"""
        from memory_server import Memory
        from memory_server.sessions import redact
        m = Memory({str(root)!r}, keyword_only=True)
        m.index()
        for i in range(20):  # each a query of its own (no cache helps): 7 s each for the old patterns
            m.search_exact(("x-" * 5000)[: 9_999 - i] + "y" * i)
        m.close()
        print(redact.budget_fired())
        """
    )
    assert out.split() == ["0"]
    # and what the recall log keeps of such a query is checked too (the query is redacted before it is logged)
    memory = Memory(root, keyword_only=True)
    try:
        memory.search_exact("deploy with password=hunter2x " + "x-" * 4000)
        logged = (root / ".memory" / "recall.sqlite3").read_bytes()
    finally:
        memory.close()
    assert b"hunter2x" not in logged


def test_a_base64_blob_longer_than_any_cap_is_redacted_whole() -> None:
    """A `.dockerconfigjson` with many registries runs past 20,000 base64 characters: read to its end (a capped
    pattern left the whole blob in the text)."""
    import base64

    auths = {
        f"registry{i}.example.com": {"auth": base64.b64encode(f"ci:pw{i}Xq93kd".encode()).decode()} for i in range(600)
    }
    blob = base64.b64encode(json.dumps({"auths": auths}).encode()).decode()
    assert len(blob) > 40_000 and blob.startswith("eyJhdXRocyI6")
    out = redact.redact_secrets(f"data:\n  .dockerconfigjson: {blob}\n")
    assert "[REDACTED]" in out and blob[:40] not in out and blob[-40:].rstrip("=") not in out


# -- a stray <private> ---------------------------------------------------------------------------------------


def test_a_stray_private_tag_in_tool_output_hides_its_rest_and_teaches_nothing() -> None:
    r = SessionRedactor()
    stray = "grep output:\n<private>\nclass AccountRepository:\n    def rename_customer(self): ...\n" * 50
    assert r.text(stray, carries=False) == "grep output:\n"
    # the hidden rest was not learned: later text naming the same things is kept whole
    later = "Rename CustomerRepository to AccountRepository and keep rename_customer"
    assert r.text(later) == later
    assert PRIVATE_MARK not in r.text("class AccountRepository: def rename_customer")


def test_a_closed_private_span_is_still_learned_and_hidden_later() -> None:
    r = SessionRedactor()
    assert r.text("<private>Project Bluefinch</private> go") == " go"
    assert r.text("ship Bluefinch on Monday") == f"ship {PRIVATE_MARK} on Monday"


def test_stray_private_tags_cost_no_more_than_plain_text(tmp_path: Path) -> None:
    """Many tool outputs with a stray tag: nothing is learned, so later texts are matched against nothing
    (the old code grew one alternation per span and took 32 s to parse such a session)."""
    r = SessionRedactor()
    for i in range(300):
        r.text(f"log {i}\n<private> secret-{i} Widget{i}Factory build-{i}.tar.gz\n" * 20, carries=False)
    assert r._words == set() and r._phrases == {}
    assert r.text("Widget7Factory and build-7.tar.gz") == "Widget7Factory and build-7.tar.gz"


def test_unclosed_private_in_a_message_still_hides_what_follows(tmp_path: Path) -> None:
    r = SessionRedactor()
    assert r.text("before <private>the rest") == "before "
    assert r.private_open and r.text("a later message") == ""


def test_the_last_resort_budget_replaces_the_text_and_is_counted(root: Path, monkeypatch) -> None:
    before = redact.budget_fired()
    monkeypatch.setattr(redact, "BUDGET_SECONDS", -1.0)  # every text is over budget
    assert redact.redact_secrets("token=ghp_abc and more") == redact.TOO_COSTLY
    assert redact.budget_fired() == before + 1
    memory = Memory(root, keyword_only=True)
    try:
        notes = memory.status().notes
    finally:
        memory.close()
    assert any("too costly to check for secrets" in n for n in notes)


def test_clean_of_report_text_is_bounded_in_what_it_keeps() -> None:
    before = redact.budget_fired()
    assert clean("<private>x</private>" * 10_000 + "end") == "end"
    assert redact.budget_fired() == before


def test_a_session_with_stray_tags_keeps_later_words(tmp_path: Path) -> None:
    """End to end: the summary of a session whose tool output had a stray `<private>` still names what the
    person said later (the old code turned it into `Rename [private] to AccountRepository`)."""
    root = tmp_path / "root"
    init_root(root)
    sid = "0badf00d-0000-4000-8000-000000000002"
    tool_out = "src/repo.py:\n<private>\nclass CustomerRepository:\n    pass\n"
    records = [
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": "Look at the repositories"}},
        {
            "type": "assistant",
            "sessionId": sid,
            "message": {
                "role": "assistant",
                "id": "m1",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat src/repo.py"}}],
            },
        },
        {
            "type": "user",
            "sessionId": sid,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": tool_out}]},
        },
        {
            "type": "user",
            "sessionId": sid,
            "message": {"role": "user", "content": "Rename CustomerRepository to AccountRepository"},
        },
    ]
    transcript = tmp_path / f"{sid}.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    [summary] = compress_transcript(transcript, MemoryRoot(root))
    text = summary.read_text(encoding="utf-8")
    assert "Rename CustomerRepository to AccountRepository" in text
    assert PRIVATE_MARK not in text
