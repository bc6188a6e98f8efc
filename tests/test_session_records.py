"""Session records that keep the why: the person's words, corrections, answers, real errors, commits and
Claude Code's own summaries, from small synthetic transcripts and from real ones in ../shared/transcripts."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import yaml
from conftest import SHARED_TRANSCRIPTS, require_shared

from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.digest import Digest
from memory_server.sessions.events import read_session_events
from memory_server.sessions.failures import command_key, commit_messages, error_line
from memory_server.sessions.reader import parse_transcript
from memory_server.sessions.render import SPEAKER, render

ENTIRE = SHARED_TRANSCRIPTS / "entire"
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)


def entire(name: str) -> Path:
    return require_shared(ENTIRE / name)


def shared(name: str) -> Path:
    return require_shared(SHARED_TRANSCRIPTS / name)


# -- a tiny transcript writer -------------------------------------------------------------------------------


class Session:
    """Builds a Claude Code JSONL transcript line by line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.n = 0

    def _rec(self, rtype: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        self.n += 1
        rec: dict[str, Any] = {
            "type": rtype,
            "sessionId": "0f0f0f0f-1111-2222-3333-444444444444",
            "cwd": "/work/app",
            "uuid": f"u{self.n}",
            "timestamp": f"2026-02-01T10:{self.n // 60:02d}:{self.n % 60:02d}Z",
            "version": "2.1.33",
            **extra,
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
        self._rec(
            "assistant",
            {
                "role": "assistant",
                "id": f"m{self.n}",
                "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}],
            },
        )
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
    s.tool(
        "Edit",
        {"file_path": "/work/app/.goreleaser.yml", "old_string": "a", "new_string": "b"},
        REJECTED + "no, GoReleaser has no native app auth, use actions/create-github-app-token",
        error=True,
    )
    s.say("Understood, switching to actions/create-github-app-token.")
    path = s.write(tmp_path / "s.jsonl")

    (c,) = read_session_events(path).corrections
    assert c.speaker == "user" and c.line == 3 and c.timestamp is not None
    assert c.text.startswith("no, GoReleaser has no native app auth") and ".goreleaser.yml" in c.rejected
    body = section(record(path), "Corrections")
    assert (
        "- User: no, GoReleaser has no native app auth, use actions/create-github-app-token "
        "(line 3, rejecting Edit `.goreleaser.yml`)"
    ) in body
    assert "goreleaser" not in section(record(path), "Files")  # the rejected edit never touched the file


def test_an_ask_user_question_answer_appears(tmp_path: Path) -> None:
    question = {
        "question": "Where should the generated diagram go?",
        "header": "Output",
        "options": [{"label": "docs/generated/"}, {"label": "docs/diagrams/"}],
        "multiSelect": False,
    }
    s = Session().user("the diagram test writes into the repo root, fix it")
    s.tool(
        "AskUserQuestion",
        {"questions": [question]},
        'User has answered your questions: "Where should the generated diagram go?"="docs/generated/".',
        data={"questions": [question], "answers": {"Where should the generated diagram go?": "docs/generated/"}},
    )
    path = s.write(tmp_path / "s.jsonl")

    (qa,) = read_session_events(path).questions
    assert (qa.question, qa.answer, qa.question_line, qa.line) == (
        "Where should the generated diagram go?",
        "docs/generated/",
        2,
        3,
    )
    assert section(record(path), "Questions and answers") == (
        "\n- Assistant asked: Where should the generated diagram go? (line 2)\n"
        "- User answered: docs/generated/ (line 3)\n"
    )


def test_a_go_fail_line_is_chosen_over_run_lines(tmp_path: Path) -> None:
    output = (
        "Exit code 1\n=== RUN   TestParse\n=== RUN   TestParse/empty\n"
        "    parse_test.go:41: got 2 items, want 0\n--- FAIL: TestParse (0.00s)\n"
        "    --- FAIL: TestParse/empty (0.00s)\nFAIL\nFAIL\tgithub.com/x/app\t0.2s\n"
    )
    s = Session().user("make the parser accept empty input")
    s.bash("go test ./...", output, error=True)
    s.tool(
        "Edit", {"file_path": "/work/app/parse.go", "old_string": "if len(s) < 0 {", "new_string": 'if s == "" {'}, "ok"
    )
    s.bash("go test ./...", "ok  \tgithub.com/x/app\t0.2s")
    path = s.write(tmp_path / "s.jsonl")

    (f,) = read_session_events(path).failures
    assert f.error == "--- FAIL: TestParse (0.00s) parse_test.go:41: got 2 items, want 0" and f.key == "go test"
    assert f.fixed_line == 6 and [x.action for x in f.fix] == ["edit"] and "parse.go" in f.fix[0].text
    errors = section(record(path), "Errors and fixes")
    assert "--- FAIL: TestParse" in errors and "=== RUN" not in errors
    assert 'passed at line 6 after: `parse.go`: `if len(s) < 0 {` -> `if s == "" {`' in errors


def test_a_failure_a_pager_hid_is_recorded(tmp_path: Path) -> None:
    """`lint | head` exits with head's 0: the failure is read from the output (for a command that does work),
    and the same command passes only when its output shows no error."""
    lint = "mise run lint 2>&1 | head -30"
    failing = (
        "[lint] $ golangci-lint run ./...\n"
        "strategy/auto_commit.go:1: : # github.com/x/app/strategy [github.com/x/app/strategy.test]\n"
        "strategy/phase_test.go:24:68: not enough arguments in call to s.InitializeSession\n"
    )
    s = Session().user("fix the merge")
    s.bash("cat build.log | head -5", "main.go:3:1: undefined: Foo")  # an old log looked at: no failure
    s.bash(lint, failing)
    s.tool(
        "Edit",
        {"file_path": "/work/app/strategy/phase_test.go", "old_string": "(a, b)", "new_string": "(a, b, c)"},
        "ok",
    )
    s.bash(lint, failing)  # still failing: not the fix
    s.tool(
        "Edit",
        {"file_path": "/work/app/strategy/phase_test.go", "old_string": "(d, e)", "new_string": "(d, e, f)"},
        "ok",
    )
    s.bash(lint, "[lint] $ golangci-lint run ./...\n0 issues.")
    path = s.write(tmp_path / "s.jsonl")

    first, second = read_session_events(path).failures
    assert first.error == "strategy/phase_test.go:24:68: not enough arguments in call to s.InitializeSession"
    assert (first.line, first.fixed_line) == (4, 12) and (second.line, second.fixed_line) == (8, 12)
    assert "not enough arguments" in section(record(path), "Errors and fixes")


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
        "rename explain to describe everywhere"
    )
    s.user("<command-message>review</command-message>\n<command-name>/review</command-name>")
    s.user("You are an expert code reviewer. Review the diff for bugs.")  # the command's expansion
    s.say("Renamed.")
    text = record(s.write(tmp_path / "s.jsonl")).split("\n---\n", 1)[1]  # the body
    title = next(ln for ln in text.splitlines() if ln.startswith("# "))
    assert title == "# rename explain to describe everywhere"
    assert "ide_" not in text and "opened the file" not in text and "expert code reviewer" not in text
    assert "- User: /review (line 2)" in text


def test_an_accepted_plan_is_titled_by_its_heading(tmp_path: Path) -> None:
    s = Session().user(
        "Implement the following plan:\n\n# Plan: Use `mise run lint` in CI\n\n## Context\n\nCI runs "
        "golangci-lint directly."
    )
    s.bash("gh pr view --json number -q .number", "172").bash("gh api repos/x/y/pulls/172/comments", "[]")
    s.bash("gh api repos/x/y/pulls/comments/1/replies -f body=done", "{}").say("Done.")
    text = record(s.write(tmp_path / "s.jsonl"))
    assert "\n# Use `mise run lint` in CI\n" in text
    assert "User: Use `mise run lint` in CI · Context · CI runs golangci-lint directly. (line 1)" in text
    commands = section(text, "Commands")  # the GitHub CLI reading is no work; replying is
    assert "gh pr view" not in commands and "pulls/172/comments`" not in commands and "-f body=done" in commands


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
    assert "- User: From now on, never replace the git CLI with go-git for reset --hard. (line 5)" in decisions
    assert "- User agreed: Add that rule to CLAUDE.md (line 7)" in decisions


def test_a_compaction_summary_is_included(tmp_path: Path) -> None:
    summary = (
        "This session is being continued from a previous conversation that ran out of context. The summary "
        "below covers the earlier portion of the conversation.\n\nAnalysis:\nLet me trace it.\n\nSummary:\n"
        "1. Primary Request and Intent:\n   The user wants the flaky checkpoint test fixed.\n\n"
        "2. Key Technical Concepts:\n   - go-git\n\n7. Pending Tasks:\n   - Remove debug hooks\n"
    )
    s = Session().user("fix the flaky checkpoint test").say("Looking.")
    s._rec("system", subtype="compact_boundary", content="Conversation compacted")
    s.user(summary, isCompactSummary=True)
    s.say("Continuing.")
    path = s.write(tmp_path / "s.jsonl")
    (cs,) = read_session_events(path).summaries
    assert cs.speaker == "claude-code" and cs.source == "compaction" and cs.text.startswith("Analysis:")
    body = section(record(path), "Claude Code's own summary")
    assert body.startswith("\n- Claude Code: ") and "(compaction summary, routing only, line 4)" in body
    assert "The user wants the flaky checkpoint test fixed" in body and "Remove debug hooks" in body
    assert "Let me trace it" not in body


def test_commits_are_recorded(tmp_path: Path) -> None:
    heredoc = (
        "git add -A && git commit -m \"$(cat <<'EOF'\nFix deferred condensation on TurnEnd\n\n"
        'The turn-end handler ignored the actions.\nEOF\n)" && git push'
    )
    assert commit_messages(heredoc) == [
        "Fix deferred condensation on TurnEnd\n\nThe turn-end handler ignored the actions."
    ]
    assert commit_messages("git commit -am 'Bump version' -m 'second paragraph'") == [
        "Bump version\n\nsecond paragraph"
    ]
    s = Session().user("commit and push").bash(heredoc, "[main abc123] Fix deferred condensation on TurnEnd")
    path = s.write(tmp_path / "s.jsonl")
    (c,) = read_session_events(path).commits
    assert c.succeeded and c.speaker == "assistant" and c.line == 2
    assert "`Fix deferred condensation on TurnEnd` (line 2)" in section(record(path), "Commits")


def test_what_mcp_tools_changed_elsewhere_is_recorded(tmp_path: Path) -> None:
    s = Session().user("log a linear issue for the gc problem")
    s.tool("mcp__linear-server__list_projects", {"query": "Troy"}, '{"projects": []}')
    s.tool(
        "mcp__linear-server__create_issue",
        {"title": "Run git gc at safe points", "team": "Entire", "description": "long text", "priority": 3},
        '{"id": "1879e1f3-c444-45fa-9e5b-ae644e57f599", "identifier": "ENT-241", "title": "Run git gc"}',
    )
    s.tool(
        "mcp__linear-server__update_issue", {"id": "ENT-241", "description": "more"}, REJECTED + "not yet", error=True
    )
    s.tool("mcp__linear-server__update_issue", {"id": "ENT-241", "state": "Cancelled"}, '{"identifier": "ENT-241"}')
    body = section(record(s.write(tmp_path / "s.jsonl")), "Actions in other tools")
    assert body.strip().splitlines() == [
        "- linear-server create_issue: ENT-241 “Run git gc at safe points” priority: 3 (line 4)",
        "- linear-server update_issue: ENT-241 state: Cancelled (line 8)",
    ]


def test_harness_errors_are_left_out(tmp_path: Path) -> None:
    s = Session().user("update the readme")
    s.tool(
        "Edit",
        {"file_path": "/work/app/README.md", "old_string": "a", "new_string": "b"},
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        error=True,
    )
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
    todos = [
        {"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
        {"content": "Add the fuzz test", "status": "in_progress", "activeForm": "Adding"},
        {"content": "Update the changelog", "status": "pending", "activeForm": "Updating"},
    ]
    s = Session().user("write the parser").tool("TodoWrite", {"todos": todos}, "ok").say("Parser written.")
    body = section(record(s.write(tmp_path / "s.jsonl")), "Open at the end")
    assert "Write the parser" not in body and "[x]" not in body
    assert "- [ ] Add the fuzz test (in progress)" in body and "- [ ] Update the changelog" in body


def test_open_tasks_of_the_task_tools_are_kept(tmp_path: Path) -> None:
    s = Session().user("fix the deferred condensation")
    for n, subject in enumerate(["Add TurnEndHandler", "Write tests for TurnEnd", "Update the docs"], start=1):
        s.tool(
            "TaskCreate",
            {"subject": subject, "description": "x"},
            f"Task #{n} created successfully: {subject}",
            data={"task": {"id": str(n), "subject": subject}},
        )
    s.tool("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1 status")
    s.tool("TaskUpdate", {"taskId": "2", "status": "in_progress"}, "Updated task #2 status")
    s.say("Handler added; tests next.")
    body = section(record(s.write(tmp_path / "s.jsonl")), "Open at the end")
    assert "TurnEndHandler" not in body
    assert "- [ ] Write tests for TurnEnd (in progress)\n- [ ] Update the docs\n" in body


def test_a_long_message_keeps_every_item_it_lists(tmp_path: Path) -> None:
    filler = "It matters because the checkpoint metadata would break and nobody would notice for weeks. " * 2
    items = [
        "The JSONLContent function only handles JSON objects.",
        "In jsonEncodeString we return an empty string.",
        "Add test coverage for shouldSkipJSONLField.",
        "Add test coverage for shouldSkipJSONLObject.",
    ]
    s = Session().user("address the review").say("Go ahead.")
    s.user("\n\n".join(f"* {item} {filler}" for item in items)).say("Done.")
    said = section(record(s.write(tmp_path / "s.jsonl")), "What the user said")
    assert said.strip() == "- User: " + " · ".join(items) + " (line 3)"


def test_every_event_says_where_when_and_who(tmp_path: Path) -> None:
    s = Session().user("run the tests")
    s.bash("pytest -q", "Exit code 1\nE   assert 1 == 2\nFAILED t.py::test_x", error=True)
    s.say("One test fails.").user('Traceback (most recent call last):\n  File "a.py", line 1\nValueError: boom')
    s.say("That is the ValueError from a.py.")
    ev = read_session_events(s.write(tmp_path / "s.jsonl"))
    items = ev.all()
    assert [e.kind for e in items] == [
        "user_message",
        "failure",
        "closing_reply",
        "failure",
        "user_message",
        "closing_reply",
    ]
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
    old_text = (
        "---\nsession_id: 0f0f0f0f-1111-2222-3333-444444444444\npart: 1\ntranscript: "
        + str(path)
        + "\nlines: [1, 2]\n---\n\n# first request\n"
    )  # a format 1 file: no `format` key
    old.write_text(old_text, encoding="utf-8")
    s.user("second request").say("Done again.").write(path)
    (new,) = compress_transcript(path, root)
    assert old.read_text(encoding="utf-8") == old_text
    meta = yaml.safe_load(new.read_text(encoding="utf-8").split("---\n")[1])
    assert meta["format"] == 2 and meta["part"] == 2 and meta["lines"] == [3, 4]


def test_every_line_says_who_said_it(tmp_path: Path) -> None:
    question = {"question": "Which registry?", "options": [{"label": "ghcr"}, {"label": "docker hub"}]}
    s = Session().user("publish the image")
    s.tool(
        "AskUserQuestion",
        {"questions": [question]},
        '"Which registry?"="ghcr"',
        data={"answers": {"Which registry?": "ghcr"}},
    )
    s.tool("Bash", {"command": "docker push x"}, REJECTED + "tag it with the version first", error=True)
    s.user("from now on, always tag images with the git sha.")
    s.say("I can also add a CI step for that. Want me to add a CI job that pushes on every tag?")
    s.user("yes")
    s.user("Error: denied: permission_denied: write_package")
    s._rec("summary", summary="Publishing the container image")
    s.say("Pushed ghcr.io/x:1.2.")
    body = record(s.write(tmp_path / "s.jsonl")).split("\n---\n", 1)[1]

    def speakers(heading: str) -> set[str]:
        lines = [ln for ln in section(body, heading).splitlines() if ln.strip()]
        found = [SPEAKER.match(ln) for ln in lines]
        assert all(found), (heading, lines)
        return {f.group(0).strip("- ").rstrip(": ") for f in found if f}

    assert speakers("Goal") == {"User"}
    assert speakers("What the user said") == {"User"}
    assert speakers("Corrections") == {"User"}
    assert speakers("Questions and answers") == {"Assistant asked", "User answered"}
    assert speakers("Decisions") == {"User", "User agreed"}
    assert speakers("Claude Code's own summary") == {"Claude Code"}
    errors = section(body, "Errors and fixes")
    assert "- User pasted: Error: denied: permission_denied: write_package (line 9)" in errors
    assert "Assistant: Pushed ghcr.io/x:1.2. (last reply, line 11)" in section(body, "Open at the end")
    # The assistant's prose never carries the person's own label ("User agreed" names what they agreed to).
    said = [ln for ln in body.splitlines() if (m := SPEAKER.match(ln)) and m.group(0).strip("- ") == "User:"]
    assert said and not any("Pushed" in ln or "CI job" in ln for ln in said), said


def test_exploring_is_not_a_decision(tmp_path: Path) -> None:
    s = Session().user("let's see how the parser handles tabs. Let's try the old flag first.")
    s.say("Tabs work.")
    s.user("ok, let's use tabs in the fixtures from now on.")
    s.say("Let me know what you'd like to do with the merge conflicts.")
    s.user("we need to fix some merge conflicts. Let's have a look at the review feedback first.")
    decisions = section(record(s.write(tmp_path / "s.jsonl")), "Decisions")
    assert "see how" not in decisions and "old flag" not in decisions
    assert "merge conflicts" not in decisions and "review feedback" not in decisions  # a task, a look around
    assert decisions.strip() == "- User: ok, let's use tabs in the fixtures from now on. (line 3)"


# -- real sessions ----------------------------------------------------------------------------------------------


def test_real_corrections_answers_and_errors_are_kept() -> None:
    text = record(entire("2026-02-06-07d86da7.jsonl"))
    assert (
        "- User: don't run CI or integration tests, too slow. (line 196, rejecting Bash `mise run test:ci 2>&1`)"
        in section(text, "Corrections")
    )
    text = record(entire("2026-02-07-d19ec7f9.jsonl"))
    assert "- User answered: docs/generated/ (line 40)" in section(text, "Questions and answers")
    text = record(entire("2026-02-08-23986045.jsonl"))
    errors = section(text, "Errors and fixes")
    assert "--- FAIL: TestUpdateCommand" in errors and "=== RUN" not in errors and "passed at line" in errors


def test_real_compaction_summaries_and_commits_are_kept() -> None:
    text = record(entire("2026-02-08-53ea1606.jsonl"))
    assert "(compaction summary, routing only, line 270)" in section(text, "Claude Code's own summary")
    assert "`Rename LastInteractionAt to LastInteractionTime`" in section(text, "Commits")
    assert "- User: /github-pr-review (line 4)" in text and "Base directory for this skill" not in text
    text = record(entire("2026-02-07-03a1382e.jsonl"))
    actions = section(text, "Actions in other tools")
    assert "create_issue: ENT-242 “Replace go-git worktree.Status() with git CLI" in actions
    assert (
        "update_issue: ENT-241 “Run git gc at safe points to prevent worktree index corruption” state: Cancelled"
        in actions
    )


def test_real_records_leave_out_harness_errors_and_stay_small() -> None:
    paths = sorted(require_shared(ENTIRE).glob("*.jsonl"))
    ratios = []
    for path in paths:
        text = record(path)
        for harness in ("File has not been read yet", "Sibling tool call errored", "=== RUN", "ERROR task failed"):
            assert harness not in section(text, "Errors and fixes"), (path.name, harness)
        assert "[x]" not in section(text, "Open at the end")
        ratios.append(len(text.encode()) / path.stat().st_size)
    assert statistics.median(ratios) < 0.02 and max(ratios) < 0.06, ratios


def test_a_top_level_session_keeps_its_commit_and_claude_codes_title() -> None:
    path = shared("chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    text = record(path)
    assert "- `Add AI music generation implementations and project setup` (line 8)" in section(text, "Commits")
    assert "- Claude Code: AI Music Generation: Diverse Embedding Mapping (title, line 1)" in section(
        text, "Claude Code's own summary"
    )
    ev = read_session_events(path)  # its one rejection came with no words: neither a correction nor an error
    assert ev.corrections == () and ev.failures == ()


def test_fixture_sessions_keep_only_open_todos_and_real_decisions() -> None:
    todos = record(shared("fixtures/daaain__claude-code-log__todowrite_examples.jsonl"))
    open_items = section(todos, "Open at the end")
    assert "Design the feature architecture" not in open_items and "[x]" not in open_items
    assert "- [ ] Conduct security review and penetration testing" in open_items
    edge = record(shared("fixtures/daaain__claude-code-log__edge_cases.jsonl"))
    assert "how it renders" not in section(edge, "Decisions")
    assert "- User: /test-command --verbose --output /tmp/test.log (line 7)" in section(edge, "What the user said")
