"""Session records that keep the why: the person's words, corrections, answers, real errors, commits and
Claude Code's own summaries, from small synthetic transcripts and from real ones in ../shared/transcripts."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.digest import Digest
from memory_server.sessions.events import read_session_events
from memory_server.sessions.failures import command_key, commit_messages, error_line
from memory_server.sessions.reader import parse_transcript
from memory_server.sessions.render import render

SHARED = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
ENTIRE = SHARED / "entire"
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)


def entire(name: str) -> Path:
    path = ENTIRE / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (real sessions live in ../shared/transcripts/entire)")
    return path


# -- a tiny transcript writer -------------------------------------------------------------------------------


class Session:
    """Builds a Claude Code JSONL transcript line by line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.n = 0

    def _rec(self, rtype: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        self.n += 1
        rec: dict[str, Any] = {
            "type": rtype, "sessionId": "0f0f0f0f-1111-2222-3333-444444444444", "cwd": "/work/app",
            "uuid": f"u{self.n}", "timestamp": f"2026-02-01T10:{self.n // 60:02d}:{self.n % 60:02d}Z",
            "version": "2.1.33", **extra,
        }
        if message is not None:
            rec["message"] = message
        self.lines.append(rec)

    def user(self, text: str, **extra: Any) -> Session:
        self._rec("user", {"role": "user", "content": text}, **extra)
        return self

    def say(self, text: str) -> Session:
        self._rec("assistant", {"role": "assistant", "id": f"m{self.n}", "content": [{"type": "text", "text": text}]})
        return self

    def tool(self, name: str, args: dict[str, Any], result: str, *, error: bool = False, data: Any = None) -> Session:
        tid = f"toolu_{self.n}"
        self._rec("assistant", {"role": "assistant", "id": f"m{self.n}",
                                "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}]})
        block = {"type": "tool_result", "tool_use_id": tid, "content": result, "is_error": error}
        extra = {"toolUseResult": data} if data is not None else {}
        self._rec("user", {"role": "user", "content": [block]}, **extra)
        return self

    def bash(self, command: str, output: str = "", *, error: bool = False) -> Session:
        return self.tool("Bash", {"command": command}, output, error=error)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.lines), encoding="utf-8")
        return path


def record(path: Path) -> str:
    t = parse_transcript(path)
    return render(Digest.of(t, t), 1, 1, "0" * 64)


def section(text: str, heading: str) -> str:
    """The body of one `## heading` section ("" when absent)."""
    if f"## {heading}\n" not in text:
        return ""
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


# -- each kept item, on a synthetic session ------------------------------------------------------------------


def test_a_rejection_with_feedback_becomes_a_correction(tmp_path: Path) -> None:
    s = Session().user("release the CLI with GoReleaser")
    s.tool("Edit", {"file_path": "/work/app/.goreleaser.yml", "old_string": "a", "new_string": "b"},
           REJECTED + "no, GoReleaser has no native app auth, use actions/create-github-app-token", error=True)
    s.say("Understood, switching to actions/create-github-app-token.")
    path = s.write(tmp_path / "s.jsonl")

    (c,) = read_session_events(path).corrections
    assert c.speaker == "user" and c.line == 3 and c.timestamp is not None
    assert c.text.startswith("no, GoReleaser has no native app auth") and ".goreleaser.yml" in c.rejected
    body = section(record(path), "Corrections")
    assert "Correction (user, line 3, rejecting Edit `.goreleaser.yml`): no, GoReleaser has no native app auth" in body


def test_an_ask_user_question_answer_appears(tmp_path: Path) -> None:
    question = {"question": "Where should the generated diagram go?", "header": "Output",
                "options": [{"label": "docs/generated/"}, {"label": "docs/diagrams/"}], "multiSelect": False}
    s = Session().user("the diagram test writes into the repo root, fix it")
    s.tool("AskUserQuestion", {"questions": [question]},
           'User has answered your questions: "Where should the generated diagram go?"="docs/generated/".',
           data={"questions": [question], "answers": {"Where should the generated diagram go?": "docs/generated/"}})
    path = s.write(tmp_path / "s.jsonl")

    (qa,) = read_session_events(path).questions
    assert (qa.question, qa.answer, qa.question_line, qa.line) == (
        "Where should the generated diagram go?", "docs/generated/", 2, 3)
    assert "User answered (line 3): docs/generated/" in section(record(path), "Questions and answers")


def test_a_go_fail_line_is_chosen_over_run_lines(tmp_path: Path) -> None:
    output = ("Exit code 1\n=== RUN   TestParse\n=== RUN   TestParse/empty\n    parse_test.go:41: got 2 items, want 0\n"
              "--- FAIL: TestParse (0.00s)\n    --- FAIL: TestParse/empty (0.00s)\nFAIL\nFAIL\tgithub.com/x/app\t0.2s\n")
    s = Session().user("make the parser accept empty input")
    s.bash("go test ./...", output, error=True)
    s.tool("Edit", {"file_path": "/work/app/parse.go", "old_string": "if len(s) < 0 {", "new_string": "if s == \"\" {"},
           "ok")
    s.bash("go test ./...", "ok  \tgithub.com/x/app\t0.2s")
    path = s.write(tmp_path / "s.jsonl")

    (f,) = read_session_events(path).failures
    assert f.error == "--- FAIL: TestParse (0.00s) parse_test.go:41: got 2 items, want 0" and f.key == "go test"
    assert f.fixed_line == 6 and [x.action for x in f.fix] == ["edit"] and "parse.go" in f.fix[0].text
    errors = section(record(path), "Errors and fixes")
    assert "--- FAIL: TestParse" in errors and "=== RUN" not in errors
    assert "passed at line 6 after: `parse.go`: `if len(s) < 0 {` -> `if s == \"\" {`" in errors


def test_error_lines_prefer_the_informative_line() -> None:
    lint = "Exit code 1\n[lint] $ golangci-lint run ./...\n[lint] ERROR task failed\n\nx/y.go:12:3: undefined: foo\n"
    assert error_line(lint) == "x/y.go:12:3: undefined: foo"
    assert error_line("a.go:1:1: first\n" + "too many errors\n") == "a.go:1:1: first"
    assert error_line("Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'x'\n") == "KeyError: 'x'"
    assert error_line("Exit code 2\n") == "exit code 2"
    assert command_key("cd app && GOFLAGS=-mod=mod go test ./... 2>&1 | tail -20") == "go test"
    assert command_key("git -C /repo status") == "git status"


def test_an_ide_tag_never_reaches_the_title(tmp_path: Path) -> None:
    s = Session().user(
        "<ide_opened_file>The user opened the file /work/app/explain.go in the IDE. This may or may not be related."
        "</ide_opened_file><ide_selection>The user selected lines 1-9 of explain.go</ide_selection>"
        "rename explain to describe everywhere")
    s.user("<command-message>review</command-message>\n<command-name>/review</command-name>")
    s.user("You are an expert code reviewer. Review the diff for bugs.")  # the command's expansion
    s.say("Renamed.")
    text = record(s.write(tmp_path / "s.jsonl")).split("\n---\n", 1)[1]  # the body
    title = next(ln for ln in text.splitlines() if ln.startswith("# "))
    assert title == "# rename explain to describe everywhere"
    assert "ide_" not in text and "opened the file" not in text and "expert code reviewer" not in text
    assert "User (line 2): /review" in text


def test_a_what_if_is_not_a_decision(tmp_path: Path) -> None:
    s = Session().user("what if we switched from go-git to git2go?")
    s.say("I would not do it: git2go needs cgo.")
    s.user("we considered switching from mise to make, but decided to stay on mise.")
    s.say("Noted.")
    s.user("ok. From now on, never replace the git CLI with go-git for reset --hard.")
    s.say("Want me to add that rule to CLAUDE.md?")
    s.user("yes please")
    s.say("Done.")
    decisions = section(record(s.write(tmp_path / "s.jsonl")), "Decisions")
    assert "git2go" not in decisions and "mise" not in decisions
    assert "never replace the git CLI with go-git for reset --hard. (user, line 5)" in decisions
    assert "Add that rule to CLAUDE.md (proposed by the assistant, agreed by the user, line 7)" in decisions


def test_a_compaction_summary_is_included(tmp_path: Path) -> None:
    summary = ("This session is being continued from a previous conversation that ran out of context. The summary "
               "below covers the earlier portion of the conversation.\n\nAnalysis:\nLet me trace it.\n\nSummary:\n"
               "1. Primary Request and Intent:\n   The user wants the flaky checkpoint test fixed.\n\n"
               "2. Key Technical Concepts:\n   - go-git\n\n7. Pending Tasks:\n   - Remove debug hooks\n")
    s = Session().user("fix the flaky checkpoint test").say("Looking.")
    s._rec("system", subtype="compact_boundary", content="Conversation compacted")
    s.user(summary, isCompactSummary=True)
    s.say("Continuing.")
    path = s.write(tmp_path / "s.jsonl")
    (cs,) = read_session_events(path).summaries
    assert cs.speaker == "claude-code" and cs.source == "compaction" and cs.text.startswith("Analysis:")
    body = section(record(path), "Claude Code's own summary")
    assert "Compaction summary (Claude Code, line 4; routing only)" in body
    assert "The user wants the flaky checkpoint test fixed" in body and "Remove debug hooks" in body
    assert "Let me trace it" not in body


def test_commits_are_recorded(tmp_path: Path) -> None:
    heredoc = ('git add -A && git commit -m "$(cat <<\'EOF\'\nFix deferred condensation on TurnEnd\n\n'
               "The turn-end handler ignored the actions.\nEOF\n)\" && git push")
    assert commit_messages(heredoc) == ["Fix deferred condensation on TurnEnd\n\nThe turn-end handler ignored the actions."]
    assert commit_messages("git commit -am 'Bump version' -m 'second paragraph'") == ["Bump version\n\nsecond paragraph"]
    s = Session().user("commit and push").bash(heredoc, "[main abc123] Fix deferred condensation on TurnEnd")
    path = s.write(tmp_path / "s.jsonl")
    (c,) = read_session_events(path).commits
    assert c.succeeded and c.speaker == "assistant" and c.line == 2
    assert "`Fix deferred condensation on TurnEnd` (line 2)" in section(record(path), "Commits")


def test_harness_errors_are_left_out(tmp_path: Path) -> None:
    s = Session().user("update the readme")
    s.tool("Edit", {"file_path": "/work/app/README.md", "old_string": "a", "new_string": "b"},
           "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
           error=True)
    s.tool("Bash", {"command": "ls"}, "<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)
    s.tool("Bash", {"command": "make docs"}, "[Request interrupted by user for tool use]", error=True)
    s.tool("Write", {"file_path": "/work/app/x.md", "content": "x"}, REJECTED.split(" To tell")[0], error=True)
    s.user("[Request interrupted by user for tool use]")
    s.say("Stopped.")
    path = s.write(tmp_path / "s.jsonl")
    ev = read_session_events(path)
    assert ev.failures == () and ev.corrections == ()
    text = record(path)
    assert "## Errors and fixes" not in text and "has not been read" not in text and "Sibling" not in text


def test_open_items_are_only_unfinished_todos(tmp_path: Path) -> None:
    todos = [{"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
             {"content": "Add the fuzz test", "status": "in_progress", "activeForm": "Adding"},
             {"content": "Update the changelog", "status": "pending", "activeForm": "Updating"}]
    s = Session().user("write the parser").tool("TodoWrite", {"todos": todos}, "ok").say("Parser written.")
    body = section(record(s.write(tmp_path / "s.jsonl")), "Open at the end")
    assert "Write the parser" not in body and "[x]" not in body
    assert "- [ ] Add the fuzz test (in progress)" in body and "- [ ] Update the changelog" in body


def test_every_event_says_where_when_and_who(tmp_path: Path) -> None:
    s = Session().user("run the tests").bash("pytest -q", "Exit code 1\nE   assert 1 == 2\nFAILED t.py::test_x", error=True)
    s.say("One test fails.").user("Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: boom")
    s.say("That is the ValueError from a.py.")
    ev = read_session_events(s.write(tmp_path / "s.jsonl"))
    items = ev.all()
    assert [e.kind for e in items] == ["user_message", "failure", "closing_reply", "failure", "user_message",
                                       "closing_reply"]
    assert all(e.line > 0 and e.timestamp is not None and e.speaker in ("user", "assistant", "tool") for e in items)
    pasted = [f for f in ev.failures if f.speaker == "user"]
    assert pasted and pasted[0].error == "ValueError: boom"
    assert ev.closing_replies[-1].final


def test_new_files_say_format_2_and_old_files_are_never_rewritten(tmp_path: Path) -> None:
    root_dir = tmp_path / "root"
    (root_dir / "topics").mkdir(parents=True)
    root = MemoryRoot(root_dir)
    s = Session().user("first request").say("Done.")
    path = s.write(tmp_path / "0f0f0f0f-1111-2222-3333-444444444444.jsonl")
    old = root.sessions_dir / "2026" / "2026-02-01-0f0f0f0f-first-request.md"
    old.parent.mkdir(parents=True)
    old_text = ("---\nsession_id: 0f0f0f0f-1111-2222-3333-444444444444\npart: 1\ntranscript: " + str(path)
                + "\nlines: [1, 2]\n---\n\n# first request\n")  # a format 1 file: no `format` key
    old.write_text(old_text, encoding="utf-8")
    s.user("second request").say("Done again.").write(path)
    (new,) = compress_transcript(path, root)
    assert old.read_text(encoding="utf-8") == old_text
    meta = yaml.safe_load(new.read_text(encoding="utf-8").split("---\n")[1])
    assert meta["format"] == 2 and meta["part"] == 2 and meta["lines"] == [3, 4]


# -- real sessions ----------------------------------------------------------------------------------------------


def test_real_corrections_answers_and_errors_are_kept() -> None:
    text = record(entire("2026-02-06-07d86da7.jsonl"))
    assert "Correction (user, line 196, rejecting Bash `mise run test:ci 2>&1`): don't run CI or integration tests" in text
    text = record(entire("2026-02-07-d19ec7f9.jsonl"))
    assert "User answered (line 40): docs/generated/" in text
    text = record(entire("2026-02-08-23986045.jsonl"))
    errors = section(text, "Errors and fixes")
    assert "--- FAIL: TestUpdateCommand" in errors and "=== RUN" not in errors and "passed at line" in errors


def test_real_compaction_summaries_and_commits_are_kept() -> None:
    text = record(entire("2026-02-08-53ea1606.jsonl"))
    assert "Compaction summary (Claude Code, line 270; routing only)" in text
    assert "`Rename LastInteractionAt to LastInteractionTime`" in section(text, "Commits")
    assert "User (line 4): /github-pr-review" in text and "Base directory for this skill" not in text


def test_real_records_leave_out_harness_errors_and_stay_small() -> None:
    paths = sorted(ENTIRE.glob("*.jsonl")) if ENTIRE.is_dir() else []
    if not paths:
        pytest.skip(f"{ENTIRE} is absent (real sessions live in ../shared/transcripts/entire)")
    ratios = []
    for path in paths:
        text = record(path)
        for harness in ("File has not been read yet", "Sibling tool call errored", "=== RUN", "ERROR task failed"):
            assert harness not in section(text, "Errors and fixes"), (path.name, harness)
        assert "[x]" not in section(text, "Open at the end")
        ratios.append(len(text.encode()) / path.stat().st_size)
    assert statistics.median(ratios) < 0.02 and max(ratios) < 0.06, ratios
