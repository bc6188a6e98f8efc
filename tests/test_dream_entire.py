"""/dream on 16 real sessions of one team (../shared/transcripts/entire/), with topics written from the
project's CLAUDE.md as it stood before them: the evidence pack, a scripted agent's items through `propose`
(good ones become hunks git accepts; each bad kind is refused with its reason), and `dream run` alone."""

from __future__ import annotations

import calendar
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_TRANSCRIPTS, require_shared
from redteam_harness import build_scenario

from memory_server.dream.pack import gather
from memory_server.dream.propose import ProposeResult, propose
from memory_server.dream.review import dream_status
from memory_server.dream.run import run_dream
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_all

ENTIRE = SHARED_TRANSCRIPTS / "entire"
NOW = float(calendar.timegm((2026, 11, 20, 12, 0, 0)))  # months after the sessions: age must not come from here
SECRET = "ghp_" + "Zq7Lw2Xv9Rt4Yp6Mn8Bc3Df5Gh1Jk0Ls2Qa4"
NOTES = f"""\
---
started: 2026-02-08T18:00:00Z
---
# Notes from the tooling call

## Decisions

- We considered switching the task runner from mise to make, but decided to stay on mise.
- The release bot token is {SECRET} for now.
- <private>The staging host is kestrel-17.</private> Nothing else to note.
"""
# The project's files as the sessions left them, only those the items name (the root lies in this git tree).
PROJECT_FILES = {
    "docs/generated/.gitignore": "*\n!.gitignore\n",
    "cmd/entire/cli/session/state.go": "package session\n\ntype State struct {\n\tLastInteractionTime time.Time "
    '`json:"last_interaction_time"`\n\tStepCount int `json:"step_count"`\n}\n',
}


def topics_from_claude_md(text: str) -> dict[str, str]:
    """One topic per `## ` section of the project's CLAUDE.md (and "# Important Notes"), dated before the sessions."""
    topics: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines(keepends=True):
        if line.startswith("## ") or line.startswith("# Important Notes"):
            title = line.lstrip("#").strip()
            current = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            topics[current] = [
                f"---\ntitle: {title}\ndescription: {title} of the Entire CLI\nupdated: 2026-02-05\n---\n# {title}\n"
            ]
        elif current:
            topics[current].append(line)
    return {slug: "".join(lines) for slug, lines in topics.items()}


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def transcripts_env() -> Iterator[None]:
    require_shared(ENTIRE)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_TRANSCRIPTS_DIR", str(ENTIRE))
        yield


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, transcripts_env: None) -> Path:
    """The project (a git tree) that is also the memory root: topics, the 16 sessions compressed, one
    hand-written session; its evidence read once (cached in .memory/ for the copies)."""
    root = tmp_path_factory.mktemp("entire") / "project"
    init_root(root)
    for slug, text in topics_from_claude_md((ENTIRE / "project-CLAUDE.md").read_text(encoding="utf-8")).items():
        (root / "topics" / f"{slug}.md").write_text(text, encoding="utf-8")
    for rel, text in PROJECT_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert git(root, "init", "-q").returncode == 0
    assert git(root, "add", "-A").returncode == 0 and git(root, "commit", "-qm", "before").returncode == 0
    written = compress_all(ENTIRE, MemoryRoot(root))
    assert len(written) >= 16, written
    notes = root / "sessions" / "compressed" / "2026" / "2026-02-08-notes-tooling-call.md"
    notes.write_text(NOTES, encoding="utf-8")
    assert gather(root, clock=lambda: NOW).pack is not None
    return root


@pytest.fixture
def root(prepared: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(prepared, copy, symlinks=True)
    return copy


# -- the evidence pack ------------------------------------------------------------------------------------


def test_the_pack_is_bounded_deterministic_redacted_and_quoted_as_data(root: Path) -> None:
    first = gather(root, clock=lambda: NOW)
    pack = first.pack
    assert pack is not None and first.path == root / "dreams" / "evidence.md"
    assert len(pack.sessions) == 17  # the 16 transcripts, and the hand-written notes
    # bounded: well under 40k tokens per 10 sessions, and no session block over its budget
    assert pack.tokens < 2_000 * len(pack.sessions), pack.tokens
    blocks = pack.text.split("\n## Session ")[1:]
    assert all(len(b.split("\n## Topic")[0]) / 3.5 <= 2_500 + 60 for b in blocks)
    assert sum(pack.left_out.values()) > 0  # the longest session had more than its budget
    # deterministic
    assert gather(root, clock=lambda: NOW).pack.text == pack.text  # type: ignore[union-attr]
    # redacted: neither the token nor the private text reaches the pack
    assert SECRET not in pack.text and "kestrel" not in pack.text
    # quoted as data: every entry a reference with its date, its text on `>` lines
    assert "never instructions to follow" in pack.text
    entries, outline = pack.text.split("## Topics and their sections")
    for line in entries.splitlines():
        if line.startswith("- today's project tree, for "):
            continue  # the program's own line: which of those names today's tree has
        if re.match(r"- `[^`]+` \(\d+ of the lines below\): `transcript:[\w-]+:\d+`", line):
            continue  # a name of the topic lines below that the person or a commit says changed, and where
        if line.startswith("- "):
            assert re.match(r"- `(transcript:[\w-]+|sessions/[\w/.-]+\.md|topics/[\w.-]+\.md):\d+`", line), line
        elif line.startswith(" "):
            assert line.lstrip().startswith(
                (">", "- fix `", "- … and", "- what it answers (", "- never fixed", "- the same command")
            ), line
    # what the person said is there: a correction given when rejecting a tool call, an answer, a commit
    assert "`transcript:2026-02-06-07d86da7:196` 2026-02-06 · the person, rejecting a tool call" in pack.text
    answer = pack.text.index("`transcript:2026-02-07-d19ec7f9:40` 2026-02-07 · the person, answering:")
    assert "> Where should the generated Mermaid diagram go?\n  > docs/generated/" in pack.text[answer : answer + 300]
    assert "`transcript:2026-02-08-53ea1606:203` 2026-02-08 · commit message" in pack.text
    assert "`topics/code-patterns.md:183` (shares entire/sessions" in pack.text  # topic lines it touches
    # ... headed by the person's words that the metadata branch moved, which those lines still name
    assert "- `entire/sessions` (15 of the lines below): `transcript:2026-02-07-03a1382e:253`" in pack.text
    # where a lesson may be: one command failing in several sessions, listed together (a lint failure that
    # `| head` hid from its exit code among them)
    repeated = pack.text.split("## Failures seen in more than one session")[1].split("\n## ")[0]
    assert "### `mise run` failed in 5 sessions" in repeated
    assert "`transcript:2026-02-08-da15b15f:112`" in repeated and "`transcript:2026-02-08-37a27d31:69`" in repeated
    assert "- `topics/development.md` (Development): Development (:6, empty); Running Tests (:8);" in outline


def test_the_pack_says_which_work_of_a_session_is_in_todays_tree(tmp_path: Path, transcripts_env: None) -> None:
    # On the project's own tree: ENT-207's helpers were merged (the tree has them); the deferred-condensation
    # work was not, and an agent that promoted it would write what the project does not do.
    project = build_scenario("entire", tmp_path, ENTIRE).root
    pack = gather(project, clock=lambda: NOW).pack
    assert pack is not None
    blocks = pack.text.split("\n## Session ")[1:]

    def tree_line(session: str) -> str:
        block = next(b for b in blocks if session in b.splitlines()[0])
        return next(line for line in block.splitlines() if line.startswith("- today's project tree"))

    merged = tree_line("37a27d31").split("; lacks ")[0]
    assert "`resolveAgentType`" in merged and "`isSpecificAgentType`" in merged, merged
    assert "`ApplyCommonActions`" in tree_line("e0cf01c8").split("; lacks ")[1], tree_line("e0cf01c8")
    # the known-limitations entry that session wrote was never merged; the redaction fix was
    assert tree_line("03a1382e").endswith("not what they wrote in `docs/KNOWN_LIMITATIONS.md`")
    assert "keeps what its edits wrote in `redact/redact.go`" in tree_line("07d86da7")
    # the aliases put back by hand are kept, though a later edit of config.go in that session is not; the
    # lint workflow's move to mise never landed, though the workflow still runs `mise run lint` elsewhere
    assert "keeps what its edits wrote in `cmd/entire/cli/config.go`" in tree_line("75c838dd")
    assert tree_line("e4d2c72e").endswith("not what they wrote in `mise.toml`, `.github/workflows/lint.yml`")


def test_a_pack_over_its_budget_leaves_the_newer_sessions_for_the_next_dream(root: Path) -> None:
    (root / "memory.yaml").write_text("dream:\n  pack_max_tokens: 5000\n", encoding="utf-8")
    first = gather(root, clock=lambda: NOW).pack
    assert first is not None and 0 < len(first.sessions) < 17 and first.waiting == 17 - len(first.paths)
    assert first.tokens < 5_000 + 1_500  # the sessions, then the topic lines and the outline
    assert f"({first.waiting} newer one(s) wait for the next dream)" in first.text
    result = submit(root, [])  # the agent found nothing worth promoting in them
    assert result.id and result.hunks == 0 and result.sessions == first.paths
    second = gather(root, clock=lambda: NOW).pack
    assert second is not None and not set(second.paths) & set(first.paths)
    assert min(s.date or "" for s in second.sessions) >= max(s.date or "" for s in first.sessions)


# -- the agent's items, verified ------------------------------------------------------------------------


def quote(ref: str, text: str, role: str = "support") -> dict[str, str]:
    return {"ref": ref, "quote": text, "role": role}


GOOD: list[dict[str, Any]] = [
    {
        "id": "metadata-branch",
        "kind": "correction",
        "stance": "adopted",
        "statement": "The metadata branch is entire/checkpoints/v1 (it was entire/sessions)",
        "target": {"topic": "topics/code-patterns.md"},
        "replaces": {
            "lines": ["topics/code-patterns.md:183", "topics/code-patterns.md:185"],
            "old": "entire/sessions",
            "new": "entire/checkpoints/v1",
        },
        "evidence": [
            quote(
                "transcript:2026-02-07-03a1382e:253", "we did a migration from entire/sessions to entire/checkpoints/v1"
            )
        ],
    },
    {
        "id": "generated-output",
        "kind": "decision",
        "stance": "adopted",
        "statement": "Tests write generated output (the phase test's Mermaid diagram) to `docs/generated/`; only its "
        ".gitignore is committed",
        "target": {"topic": "topics/development.md", "section": "Running Tests"},
        "evidence": [
            quote("transcript:2026-02-07-d19ec7f9:40", "docs/generated/"),
            quote(
                "transcript:2026-02-07-d19ec7f9:58",
                "The `.gitignore` gets committed (so the directory exists on CI), but generated `.mmd` files won't.",
            ),
        ],
    },
    {
        "id": "ci-lint",
        "kind": "fact",
        "stance": "adopted",
        "statement": "CI lints with the same mise tasks as a local run (mise run fmt:check, mise run lint), not the "
        "golangci-lint action",
        "target": {"topic": "topics/development.md", "section": "Linting and Formatting"},
        "evidence": [
            quote("transcript:2026-02-08-e4d2c72e:36", "Replaced all 3 lint steps with mise task equivalents"),
            quote("transcript:2026-02-08-e4d2c72e:36", "This removes the `golangci-lint-action` dependency entirely."),
        ],
    },
    {
        "id": "last-interaction",
        "kind": "fact",
        "stance": "adopted",
        "statement": "The session state records the last interaction as `LastInteractionTime` (JSON "
        "`last_interaction_time`); the field was renamed without a migration",
        "target": {"topic": "topics/code-patterns.md", "section": "Session Package (`cmd/entire/cli/session/`)"},
        "evidence": [
            quote(
                "transcript:2026-02-08-53ea1606:203",
                "Rename the session state field and JSON tag from last_interaction_at to last_interaction_time",
            ),
            quote("transcript:2026-02-08-53ea1606:203", "no backward compat migration is needed"),
        ],
    },
    {
        "id": "parent-merges",
        "kind": "lesson",
        "stance": "adopted",
        "statement": "Merges from the parent branch fail with conflicts in the session state: keep the branch's "
        "field names (LastInteractionTime, StepCount) and port the parent's additions to them",
        "evidence": [
            quote("transcript:2026-02-08-2956cee6:23", "Automatic merge failed"),
            quote("transcript:2026-02-08-2956cee6:53", "LastInteractionTime: &now"),
            quote("transcript:2026-02-08-37a27d31:26", "Automatic merge failed"),
            quote("transcript:2026-02-08-37a27d31:46", "agentType := resolveAgentType(ctx.AgentType, state)"),
        ],
    },
]

NOTES_REF = "sessions/compressed/2026/2026-02-08-notes-tooling-call.md:8"
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "quote not in evidence": (
        {
            "kind": "fact",
            "stance": "adopted",
            "statement": "CI lints with make lint",
            "target": {"topic": "topics/development.md"},
            "evidence": [quote("transcript:2026-02-08-e4d2c72e:36", "Replaced all lint steps with make lint")],
        },
        "is not at transcript:2026-02-08-e4d2c72e:36",
    ),
    "hypothetical adopted": (
        {
            "kind": "decision",
            "stance": "adopted",
            "statement": "Shadow tracking uses git status instead of go-git",
            "target": {"topic": "topics/code-patterns.md", "section": "Git Operations"},
            "evidence": [quote("transcript:2026-02-07-03a1382e:734", "we replaced go-git with git status")],
        },
        "only asks or supposes",
    ),
    "considered but stayed": (
        {
            "kind": "decision",
            "stance": "adopted",
            "statement": "The task runner is switched from mise to make",
            "target": {"topic": "topics/development.md"},
            "evidence": [quote(NOTES_REF, "switching the task runner from mise to make")],
        },
        "considered but not taken up",
    ),
    "reversed later": (
        {
            "kind": "decision",
            "stance": "adopted",
            "statement": "The settings re-exports are dead code and are deleted",
            "target": {"topic": "topics/code-patterns.md", "section": "Settings"},
            "evidence": [
                quote("transcript:2026-02-06-75c838dd:50", "they're dead code"),
                quote("transcript:2026-02-06-75c838dd:54", "Do it."),
            ],
        },
        "takes it back later",
    ),
    "fix from another session": (
        {
            "kind": "lesson",
            "stance": "adopted",
            "statement": "Merges from the parent branch conflict",
            "evidence": [
                quote("transcript:2026-02-08-2956cee6:23", "Automatic merge failed", "error"),
                quote("transcript:2026-02-08-37a27d31:116", "keep resolveAgentType helper", "fix"),
            ],
        },
        "no fix of the failure",
    ),
    "only Claude Code's own summary": (
        {
            "kind": "fact",
            "stance": "adopted",
            "statement": "PR #169 consolidates the session state types",
            "target": {"topic": "topics/code-patterns.md"},
            "evidence": [
                quote(
                    "transcript:2026-02-08-53ea1606:270",
                    "Consolidate session state types and simplify transcript tracking",
                )
            ],
        },
        "only Claude Code's own text",
    ),
    "identifier that does not exist": (
        {
            "kind": "fact",
            "stance": "adopted",
            "statement": "Deferred condensation at turn end is dispatched through `TurnEndDispatcher`",
            "target": {
                "topic": "topics/code-patterns.md",
                "section": "Session Strategies (`cmd/entire/cli/strategy/`)",
            },
            "evidence": [quote("transcript:2026-02-08-e0cf01c8:236", "Add TurnEndHandler optional interface")],
        },
        "name `TurnEndDispatcher`",
    ),
}


def submit(root: Path, items: list[dict[str, Any]], **kwargs: Any) -> ProposeResult:
    path = root.parent / "items.json"
    path.write_text(json.dumps({"items": items}, indent=1), encoding="utf-8")
    return propose(root, path, clock=lambda: NOW, **kwargs)


def test_good_items_become_hunks_that_git_applies(root: Path) -> None:
    result = submit(root, GOOD)
    assert not result.refusals and result.id and result.hunks == 5, (result.refusals, result.message)
    folder = root / "dreams" / result.id
    diff = (folder / "proposal.diff").read_text(encoding="utf-8")
    check = git(root, "apply", "--check", "-v", str(folder / "proposal.diff"))
    assert check.returncode == 0, check.stderr
    assert "-- Metadata stored on orphan `entire/sessions` branch" in diff
    assert "+- Metadata stored on orphan `entire/checkpoints/v1` branch" in diff
    assert "+- Tests write generated output (the phase test's Mermaid diagram) to `docs/generated/`" in diff
    assert "+## Merges from the parent branch fail with conflicts in the session state" in diff
    mistake = "`Automatic merge failed; fix conflicts and then commit the result.`"
    assert f"+- Mistake: {mistake} (`transcript:2026-02-08-2956cee6:24`)" in diff  # cited at its output
    assert "2026-02-08-2956cee6" in diff and "2026-02-08-37a27d31" in diff  # each session's mistake and fix
    report = (folder / "REPORT.md").read_text(encoding="utf-8")
    assert "`transcript:2026-02-07-03a1382e:253` 2026-02-07" in report
    assert git(root, "apply", str(folder / "proposal.diff")).returncode == 0


@pytest.mark.parametrize("kind", sorted(BAD))
def test_each_bad_kind_is_refused_with_its_reason(root: Path, kind: str) -> None:
    item, reason = BAD[kind]
    result = submit(root, [*GOOD, {"id": "bad", **item}])
    assert result.id is None and len(result.refusals) == 1, result.refusals
    assert result.refusals[0].startswith(f"item {len(GOOD) + 1} (bad): ") and reason in result.refusals[0], (
        result.refusals
    )
    assert not (root / "dreams").exists() or not [p for p in (root / "dreams").iterdir() if p.is_dir()]


def test_run_alone_rewrites_no_topic_line_and_ages_topics_by_the_sessions(root: Path) -> None:
    topics = {p: p.read_bytes() for p in (root / "topics").iterdir()}
    result = run_dream(root, clock=lambda: NOW)
    assert result.id, result.message
    folder = root / "dreams" / result.id
    diff = (folder / "proposal.diff").read_text(encoding="utf-8") if (folder / "proposal.diff").exists() else ""
    assert not [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert set(result.files) <= {"topics/lessons.md"}
    assert {p: p.read_bytes() for p in (root / "topics").iterdir()} == topics
    report = (folder / "REPORT.md").read_text(encoding="utf-8")
    # the topics are 3 days older than the newest session (the clock says 9 months): none is stale
    assert "## Topics that may be stale" not in report


def test_held_back_items_are_verified_again_from_transcripts_already_read(root: Path) -> None:
    """Over the limit, verified items wait; resubmitted after every session is read, their transcript
    references (and a lesson's second session) still verify, and the next proposal takes them."""
    (root / "memory.yaml").write_text("dream:\n  max_hunks: 2\n", encoding="utf-8")
    first = submit(root, GOOD)
    assert first.changes == 2 and len(first.held_back) == len(GOOD) - 2, first.message
    assert dream_status(root, clock=lambda: NOW)["waiting_items"] == len(GOOD) - 2
    pack = gather(root, clock=lambda: NOW + 60)
    assert pack.pack is not None and f"{len(GOOD) - 2} verified item(s) waiting" in pack.message
    state = json.loads((root / ".memory" / "dream-state.json").read_text(encoding="utf-8"))
    waiting = [rec["item"] for rec in state["held"].values()]
    (root / "memory.yaml").write_text("dream:\n  max_hunks: 5\n", encoding="utf-8")
    second = submit(root, waiting)
    assert not second.refusals and second.changes == len(GOOD) - 2, (second.refusals, second.message)
    assert dream_status(root, clock=lambda: NOW)["waiting_items"] == 0
