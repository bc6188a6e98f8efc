"""/dream on a scripted memory root: the agent's items verified and rendered, `dream run` without an agent,
review (apply / reject / show), real files, real SQLite, real git as the diff oracle."""

from __future__ import annotations

import calendar
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_server import Memory
from memory_server.cli import main as cli_main
from memory_server.dream.gate import DreamGate
from memory_server.dream.pack import gather
from memory_server.dream.patch import Edit, apply_edits, apply_hunks, make_patch, parse_diff
from memory_server.dream.proposals import list_proposals
from memory_server.dream.propose import ProposeResult, propose
from memory_server.dream.recall import RecallLog
from memory_server.dream.review import (
    apply_proposal,
    dismiss_proposal,
    dream_status,
    reject_proposal,
    show_proposal,
)
from memory_server.dream.run import run_dream
from memory_server.dream.start_hook import session_start
from memory_server.dream.topics import split_keep
from memory_server.errors import DreamError, LockedError, NotFoundError, PathRefusedError, StaleProposalError
from memory_server.files.program import program_command
from memory_server.files.scaffold import init_root
from memory_server.testing import FakeEmbedder

SRC = str(Path(__file__).resolve().parents[1])
NOW = float(calendar.timegm((2026, 1, 9, 12, 0, 0)))  # 2026-01-09 12:00 UTC

TOOLING = """\
---
title: Tooling
description: How the project is built, tested and released
updated: 2025-11-01
tags: [tooling]
---
# Tooling

## Dependencies

- Install the dependencies with `poetry install` after pulling.
- The lock file `poetry.lock` is committed.

## Tests

- Run the test suite with pytest from the project root.
- Tests must not touch the network.
"""

DEPLOY = """\
---
title: Deployment
description: How releases reach production
updated: 2025-12-01
---
# Deployment

## Releases

- Releases are tagged vX.Y.Z and built by the release workflow.
"""

YAML_ERROR = "ModuleNotFoundError: No module named 'yaml'"
SWITCH = "Switched from poetry to uv: `uv sync` replaces `poetry install`, and `uv.lock` replaces `poetry.lock`."


def session(
    day: int,
    sid: str,
    slug: str,
    title: str,
    *,
    decisions: tuple[str, ...] = (),
    errors: tuple[str, ...] = (),
    requests: tuple[str, ...] = ("Look at the code",),
) -> tuple[str, str]:
    body = [
        "---",
        "format: 2",
        f"session_id: {sid}-0000-4000-8000-000000000000",
        "part: 1",
        f"started: 2026-01-0{day}T09:00:00Z",
        f"ended: 2026-01-0{day}T10:30:00Z",
        "cwd: /home/dev/project",
        "branch: main",
        f"transcript: /home/dev/.claude/projects/project/{sid}.jsonl",
        "transcript_sha256: " + "0" * 64,
        "lines: 120",
        "---",
        f"# {title}",
        "",
        "## Requests",
        "",
        *[f"- User: {r}" for r in requests],
        "",
        "## Files",
        "",
        "- src/app.py",
        "",
    ]
    if errors:
        body += ["## Errors and fixes", "", *[f"- {e}" for e in errors], ""]
    if decisions:
        body += ["## Decisions", "", *[f"- User: {d}" for d in decisions], ""]
    body += ["## Open at the end", "", "- Nothing.", ""]
    return f"sessions/compressed/2026/2026-01-0{day}-{sid}-{slug}.md", "\n".join(body)


SESSIONS = [
    session(
        3,
        "a1b2c3d4",
        "fix-flaky-tests",
        "Fix the flaky tests",
        errors=(f"{YAML_ERROR} — fixed: ran `.venv/bin/pytest` instead of the system pytest",),
    ),
    session(
        4,
        "b2c3d4e5",
        "search-cli",
        "Add a search command",
        decisions=("Keep command output plain text unless --json is given.",),
    ),
    session(
        5,
        "c3d4e5f6",
        "switch-to-uv",
        "Move dependency management to uv",
        decisions=(SWITCH,),
        requests=(
            "What if we used pdm instead?",
            "We considered moving the CI to Buildkite, but we stay on GitHub Actions.",
        ),
    ),
    session(
        6, "d4e5f6a7", "docs", "Write the README", decisions=("Publish the docs to GitHub Pages from the docs branch.",)
    ),
    session(7, "e5f6a7b8", "ci", "Fix the CI job", errors=(f"{YAML_ERROR} — fixed: `uv sync` before the tests",)),
    session(
        8,
        "f6a7b8c9",
        "refactor",
        "Refactor the store",
        requests=("Revert the GitHub Pages publishing, the docs are hosted on Read the Docs now",),
    ),
]


def ref(day: int, line_text: str) -> str:
    """`sessions/...md:LINE` of the line of session `day` that holds `line_text`."""
    rel, text = next((r, t) for r, t in SESSIONS if r.startswith(f"sessions/compressed/2026/2026-01-0{day}-"))
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if line_text in ln)
    return f"{rel}:{line}"


def good_items() -> list[dict[str, Any]]:
    """What an agent would write for the scripted sessions: two corrections, a lesson, a new topic's fact."""
    switch = {"ref": ref(5, "Switched from poetry"), "quote": SWITCH}
    return [
        {
            "kind": "correction",
            "statement": "Dependencies are installed with `uv sync`",
            "stance": "adopted",
            "target": {"topic": "topics/tooling.md", "section": "Dependencies"},
            "replaces": {"lines": ["topics/tooling.md:11"], "old": "poetry install", "new": "uv sync"},
            "evidence": [switch],
        },
        {
            "kind": "correction",
            "statement": "The lock file is `uv.lock`",
            "stance": "adopted",
            "target": {"topic": "topics/tooling.md"},
            "replaces": {"lines": ["topics/tooling.md:12"], "old": "poetry.lock", "new": "uv.lock"},
            "evidence": [switch],
        },
        {
            "kind": "lesson",
            "statement": "Run the tests from the project's virtualenv: the system pytest lacks yaml",
            "stance": "adopted",
            "evidence": [
                {"ref": ref(3, YAML_ERROR), "quote": YAML_ERROR, "role": "error"},
                {"ref": ref(3, YAML_ERROR), "quote": "ran `.venv/bin/pytest`", "role": "fix"},
                {"ref": ref(7, YAML_ERROR), "quote": YAML_ERROR, "role": "error"},
                {"ref": ref(7, YAML_ERROR), "quote": "`uv sync` before the tests", "role": "fix"},
            ],
        },
    ]


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    init_root(root)
    (root / "topics" / "tooling.md").write_text(TOOLING, encoding="utf-8")
    (root / "topics" / "deployment.md").write_text(DEPLOY, encoding="utf-8")
    with open(root / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("- [Tooling](topics/tooling.md): how the project is built and tested\n")
        fh.write("- [Deployment](topics/deployment.md): how releases reach production\n")
    for rel, text in SESSIONS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def write_items(root: Path, items: list[dict[str, Any]], name: str = "items.json") -> Path:
    path = root.parent / name
    path.write_text(json.dumps({"items": items}, indent=1), encoding="utf-8")
    return path


def dream(root: Path, items: list[dict[str, Any]] | None = None, **kwargs: Any) -> ProposeResult:
    """The agent's pass on the scripted root: its items proposed (verified, rendered) at NOW."""
    return propose(root, write_items(root, good_items() if items is None else items), clock=lambda: NOW, **kwargs)


def snapshot(root: Path) -> dict[str, bytes]:
    files = [root / "MEMORY.md", *sorted((root / "topics").rglob("*")), *sorted((root / "sessions").rglob("*"))]
    return {str(p.relative_to(root)): p.read_bytes() for p in files if p.is_file()}


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


# -- propose: the agent's items, verified, rendered by the program --------------------------------------


def test_good_items_become_a_diff_git_accepts_and_apply_makes_them_true(root: Path) -> None:
    before = snapshot(root)
    result = dream(root)
    # the second correction's line sits next to the first's: it waits, so each change is a hunk of its own
    assert result.id and result.hunks == 2 and result.changes == 2 and not result.refusals, result.message
    assert result.held_back == ["The lock file is `uv.lock`"]
    folder = root / "dreams" / result.id
    diff = (folder / "proposal.diff").read_text(encoding="utf-8")
    report = (folder / "REPORT.md").read_text(encoding="utf-8")
    assert snapshot(root) == before  # a proposal changes nothing
    assert "-- Install the dependencies with `poetry install` after pulling.\n" in diff
    assert "+- Install the dependencies with `uv sync` after pulling.\n" in diff
    assert "uv.lock" not in diff
    assert "+## Run the tests from the project's virtualenv: the system pytest lacks yaml\n" in diff
    assert f"+- Mistake: `{YAML_ERROR}` (`{ref(3, YAML_ERROR)}`)\n" in diff  # quoted as code: data
    assert f"+  Fix: ``ran `.venv/bin/pytest` instead of the system pytest`` (`{ref(3, YAML_ERROR)}`)\n" in diff
    assert "2026-01-03-a1b2c3d4-fix-flaky-tests.md" in diff and "2026-01-07-e5f6a7b8-ci.md" in diff
    # the report: per change its statement, stance, and the record with speaker, reference and date
    assert "## Change 1: Dependencies are installed with `uv sync`" in report
    assert "## Change 2: Run the tests from the project's virtualenv" in report
    assert f"`{ref(5, 'Switched from poetry')}` 2026-01-05, **the person**" in report and "stance: adopted" in report
    assert "Second reading: not done yet." in report
    assert git(root, "init", "-q").returncode == 0
    check = git(root, "apply", "--check", "-v", str(folder / "proposal.diff"))
    assert check.returncode == 0, check.stderr
    shutil.rmtree(root / ".git")  # an empty repository would make every name unknown

    os.chmod(root / "topics" / "tooling.md", 0o640)
    applied = apply_proposal(root, clock=lambda: NOW)  # no id: the newest proposal with changes to review
    assert applied["id"] == result.id and applied["files"] == ["topics/lessons.md", "topics/tooling.md"]
    assert applied["changes"] == [1, 2]
    assert (root / "topics" / "tooling.md").stat().st_mode & 0o777 == 0o640  # permissions kept
    tooling = (root / "topics" / "tooling.md").read_text(encoding="utf-8")
    assert "`uv sync` after pulling" in tooling and "poetry install" not in tooling and "`poetry.lock`" in tooling
    # git applying the same diff to the original gives the same bytes as our own apply
    by_git = root.parent / "by-git"
    shutil.copytree(root, by_git, ignore=shutil.ignore_patterns(".memory", ".git"))
    for rel, data in before.items():
        (by_git / rel).write_bytes(data)
    assert git(by_git, "init", "-q").returncode == 0
    assert git(by_git, "apply", str(folder / "proposal.diff")).returncode == 0
    for rel in ("topics/tooling.md", "topics/lessons.md"):
        assert (by_git / rel).read_bytes() == (root / rel).read_bytes()
    # the waiting change goes in the next pass, against the topic as it is now
    second = dream(root, [good_items()[1]])
    assert second.changes == 1 and not second.held_back, second.message
    apply_proposal(root, clock=lambda: NOW)
    assert "`uv.lock` is committed" in (root / "topics" / "tooling.md").read_text(encoding="utf-8")
    with pytest.raises(DreamError, match="nothing new"):
        dream(root)
    assert [p["id"] for p in list_proposals(root)] == [result.id, second.id]


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "quote not at its reference": (
        {
            "kind": "fact",
            "statement": "Dependencies are managed with pdm",
            "stance": "adopted",
            "target": {"topic": "topics/tooling.md"},
            "evidence": [{"ref": ref(5, "Switched from poetry"), "quote": "Switched from poetry to pdm"}],
        },
        "is not at",
    ),
    "hypothetical adopted": (
        {
            "kind": "decision",
            "statement": "Dependencies are managed with pdm",
            "stance": "adopted",
            "target": {"topic": "topics/tooling.md"},
            "evidence": [{"ref": ref(5, "What if"), "quote": "What if we used pdm instead?"}],
        },
        "only asks or supposes",
    ),
    "considered but stayed": (
        {
            "kind": "decision",
            "statement": "CI runs on Buildkite",
            "stance": "adopted",
            "target": {"topic": "topics/deployment.md"},
            "evidence": [
                {
                    "ref": ref(5, "Buildkite"),
                    "quote": "We considered moving the CI to Buildkite, but we stay on GitHub Actions.",
                }
            ],
        },
        "considered but not taken up",
    ),
    "a one-off error as a lesson": (
        {
            "kind": "lesson",
            "statement": "Do not touch the network",
            "stance": "adopted",
            "evidence": [
                {"ref": ref(3, YAML_ERROR), "quote": YAML_ERROR, "role": "error"},
                {"ref": ref(7, YAML_ERROR), "quote": "`uv sync` before the tests", "role": "fix"},
            ],
        },
        "",  # refused: no fix of that failure is quoted, and the statement is not what its quotes say
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_item_is_refused_by_name_with_its_reason_and_nothing_is_written(root: Path, case: str) -> None:
    item, reason = BAD[case]
    result = dream(root, [*good_items(), {**item, "id": "bad"}])
    assert result.id is None and not (root / "dreams").exists() or not list((root / "dreams").iterdir())
    assert len(result.refusals) == 1 and result.refusals[0].startswith("item 4 (bad): "), result.refusals
    assert reason in result.refusals[0]
    # with --drop-refused the rest is proposed, and the refusal listed in the report
    kept = dream(root, [*good_items(), {**item, "id": "bad"}], drop_refused=True)
    assert kept.hunks == 2
    assert "item 4 (bad)" in (root / "dreams" / str(kept.id) / "REPORT.md").read_text()


def test_a_decision_taken_back_in_a_later_session_is_refused(root: Path) -> None:
    item = {
        "kind": "decision",
        "statement": "The docs are published to GitHub Pages",
        "stance": "adopted",
        "target": {"topic": "topics/deployment.md", "section": "Releases"},
        "evidence": [{"ref": ref(6, "GitHub Pages"), "quote": "Publish the docs to GitHub Pages"}],
    }
    result = dream(root, [item])
    assert result.id is None and "takes it back later" in result.refusals[0], result.refusals
    assert ref(8, "Revert the GitHub Pages") in result.refusals[0] and 'use stance "reverted"' in result.refusals[0]
    # marked reverted, it is listed (not promoted)
    listed = dream(root, [{**item, "stance": "reverted"}])
    assert listed.hunks == 0 and "taken back later" in (root / "dreams" / str(listed.id) / "REPORT.md").read_text()


def test_a_gap_is_reported_not_written(root: Path) -> None:
    gap = {
        "kind": "gap",
        "statement": "Which package manager replaces poetry is undecided",
        "stance": "adopted",
        "evidence": [{"ref": ref(5, "What if"), "quote": "What if we used pdm instead?"}],
    }
    result = dream(root, [*good_items(), gap])
    assert not result.refusals and result.hunks == 2
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "## Not promoted" in report and "- gap, adopted: Which package manager replaces poetry" in report
    assert "pdm" not in (root / "dreams" / str(result.id) / "proposal.diff").read_text()


def test_an_items_file_of_the_wrong_shape_says_what_is_wrong(root: Path) -> None:
    path = root.parent / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DreamError, match="cannot read the items file"):
        propose(root, path, clock=lambda: NOW)
    result = dream(root, [{"kind": "rumour", "statement": "x y z", "stance": "adopted", "evidence": []}])
    assert result.refusals == ["item 1: kind must be one of fact, decision, lesson, correction, gap, not 'rumour'"]


def test_at_most_max_hunks_the_rest_wait_in_the_report(root: Path) -> None:
    (root / "memory.yaml").write_text("dream:\n  max_hunks: 1\n", encoding="utf-8")
    result = dream(root)
    assert result.hunks == 1 and result.held_back, result.message
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "## Verified, waiting for the next proposal" in report


def test_an_item_without_a_section_is_placed_by_meaning_and_not_without_it(tmp_path: Path) -> None:
    """ "Exit codes" shares more words with the item, but only "Output" is close in meaning: the embedding
    model rules the wrong section out; by keywords alone the item lands in "Exit codes"."""
    item = {
        "kind": "decision",
        "statement": "Keep command output plain text unless --json is given",
        "stance": "adopted",
        "target": {"topic": "topics/cli.md"},
        "evidence": [{"ref": ref(4, "plain text"), "quote": "Keep command output plain text unless --json"}],
    }
    cli_topic = (
        "---\ntitle: CLI\ndescription: the command line\nupdated: 2025-12-01\n---\n# CLI\n\n"
        "## Output\n\n- Plain text output by default; --json switches it.\n\n"
        "## Exit codes\n\n- Status 2 on every error, status 3 when a lock is held, status 4 when a network "
        "timeout expires, status 5 for a corrupt database index; a command given plain text or json keeps "
        "them unless killed.\n"
    )
    diffs = {}
    for name, embedder in (("semantic", FakeEmbedder()), ("keywords", None)):
        root = make_root(tmp_path / name)
        (root / "topics" / "cli.md").write_text(cli_topic, encoding="utf-8")
        (root / "memory.yaml").write_text("dream:\n  topic_match_min: 0.3\n  topic_semantic_min: 0.4\n")
        result = dream(root, [item], embedder=embedder)
        diffs[name] = (root / "dreams" / str(result.id) / "proposal.diff").read_text()
        diffs[name + " report"] = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert " - Plain text output by default; --json switches it.\n+- Keep command output" in diffs["semantic"]
    assert "unless killed.\n+- Keep command output" in diffs["keywords"]
    assert "No section given: placed at § Output" in diffs["semantic report"]


def test_an_item_no_section_matches_goes_to_an_updates_section_not_the_last_one(tmp_path: Path) -> None:
    """Nothing in the topic is about it: it goes under "## Updates", not into whatever section comes last."""
    item = {
        "kind": "decision",
        "statement": "Keep command output plain text unless --json is given",
        "stance": "adopted",
        "target": {"topic": "topics/cli.md"},
        "evidence": [{"ref": ref(4, "plain text"), "quote": "Keep command output plain text unless --json"}],
    }
    root = make_root(tmp_path / "r")
    (root / "topics" / "cli.md").write_text(
        "---\ntitle: CLI\nupdated: 2025-12-01\n---\n# CLI\n\n## Releases\n\n1. Tag the commit.\n2. Push the tag.\n",
        encoding="utf-8",
    )
    result = dream(root, [item])
    diff = (root / "dreams" / str(result.id) / "proposal.diff").read_text()
    assert " 2. Push the tag.\n+\n+## Updates\n+\n+- Keep command output" in diff, diff
    assert "placed under § Updates" in (root / "dreams" / str(result.id) / "REPORT.md").read_text()


def test_a_rejected_hunk_is_not_proposed_again(root: Path) -> None:
    first = dream(root)
    meta = json.loads((root / "dreams" / str(first.id) / "proposal.json").read_text())
    tooling = next(h["n"] for h in meta["hunks"] if h["path"] == "topics/tooling.md")
    out = reject_proposal(root, hunks=[tooling], clock=lambda: NOW)  # no id: the newest to review
    assert out["id"] == first.id and out["hunks"] == [tooling]
    # a later session says the same again; the agent proposes the same correction from it
    rel, text = session(9, "0a0b0c0d", "again", "Tidy the packaging", decisions=(SWITCH,))
    (root / rel).write_text(text, encoding="utf-8")
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "Switched from poetry" in ln)
    items = [{**good_items()[0], "evidence": [{"ref": f"{rel}:{line}", "quote": SWITCH}]}]
    again = dream(root, items)
    assert len(again.refusals) == 1 and again.refusals[0].startswith("item 1: a person rejected a change close to it")
    # one word changed is still the same change
    reworded = [{**items[0], "statement": "Dependencies get installed with `uv sync`"}]
    assert dream(root, reworded).refusals[0].startswith("item 1: a person rejected a change close to it")


def test_deterministic_given_the_same_inputs_and_clock(tmp_path: Path) -> None:
    outputs = []
    for name in ("one", "two"):
        root = make_root(tmp_path / name)
        result = dream(root)
        folder = root / "dreams" / str(result.id)
        report = (folder / "REPORT.md").read_text().replace(str(root), "<root>")  # "names not checked: <root> ..."
        outputs.append(((folder / "proposal.diff").read_bytes(), report))
    assert outputs[0] == outputs[1]


# -- review -----------------------------------------------------------------------------------------------


def test_apply_refuses_when_a_target_changed_and_changes_nothing(root: Path) -> None:
    result = dream(root)
    tooling = root / "topics" / "tooling.md"
    tooling.write_text(TOOLING + "- Someone edited this by hand.\n", encoding="utf-8")
    before = snapshot(root)
    with pytest.raises(StaleProposalError, match=r"topics/tooling.md changed .*dream run --redo " + str(result.id)):
        apply_proposal(root, result.id, clock=lambda: NOW)
    assert snapshot(root) == before  # all or nothing: lessons.md was not written either
    assert "changed since proposal" in show_proposal(root, result.id)["check"]
    # regenerate as the message says: the same sessions read again, against the edited file
    redo = dream(root, redo=result.id)
    assert redo.hunks == 2, redo.message
    apply_proposal(root, redo.id, clock=lambda: NOW)
    assert "`uv sync` after pulling" in tooling.read_text() and "edited this by hand" in tooling.read_text()
    # the superseded proposal was never applied: it is gone, so `show`/`apply` cannot pick it
    assert not (root / "dreams" / str(result.id)).exists()
    with pytest.raises(NotFoundError, match="no proposal"):
        apply_proposal(root, result.id, clock=lambda: NOW)


def test_apply_with_hunks_applies_only_those_then_the_rest(root: Path) -> None:
    result = dream(root)
    meta = json.loads((root / "dreams" / str(result.id) / "proposal.json").read_text())
    tooling = [h["n"] for h in meta["hunks"] if h["path"] == "topics/tooling.md"]
    lessons_before = (root / "topics" / "lessons.md").read_bytes()
    out = apply_proposal(root, result.id, tooling, clock=lambda: NOW)
    assert out["files"] == ["topics/tooling.md"]
    assert (root / "topics" / "lessons.md").read_bytes() == lessons_before
    with pytest.raises(DreamError, match="already applied"):
        apply_proposal(root, result.id, tooling, clock=lambda: NOW)
    rest = apply_proposal(root, result.id, clock=lambda: NOW)
    assert rest["files"] == ["topics/lessons.md"]
    assert dream_status(root, clock=lambda: NOW)["proposals_to_review"] == []


APPLY_WITH_FILE_SIZE_LIMIT = """
import resource, signal, sys
from memory_server.dream.review import apply_proposal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    apply_proposal(sys.argv[1], sys.argv[2])
except OSError as exc:
    print("failed:", exc)
    sys.exit(3)
"""


def test_apply_is_all_or_nothing_when_a_write_fails(root: Path) -> None:
    # tooling.md grows past a 4 KB file-size limit; lessons.md (written first) stays under it
    tooling = root / "topics" / "tooling.md"
    tooling.write_text(TOOLING + "".join(f"- Note {i}: {'x' * 60}\n" for i in range(70)), encoding="utf-8")
    result = dream(root)
    before = snapshot(root)
    proc = subprocess.run(
        [sys.executable, "-c", APPLY_WITH_FILE_SIZE_LIMIT, str(root), str(result.id)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert snapshot(root) == before
    assert not [p for p in (root / "topics").iterdir() if p.name.endswith(".tmp")]
    apply_proposal(root, result.id, clock=lambda: NOW)  # nothing was marked applied: it still works
    assert "uv sync" in tooling.read_text() and YAML_ERROR in (root / "topics" / "lessons.md").read_text()


def test_a_diff_edited_to_reach_outside_topics_is_refused(root: Path) -> None:
    result = dream(root)
    path = root / "dreams" / str(result.id) / "proposal.diff"
    path.write_text(path.read_text().replace("topics/lessons.md", "sessions/compressed/2026/evil.md"))
    with pytest.raises((PathRefusedError, DreamError)):
        apply_proposal(root, result.id, clock=lambda: NOW)


def test_improved_wording_on_plus_lines_is_what_gets_applied(root: Path) -> None:
    result = dream(root)
    path = root / "dreams" / str(result.id) / "proposal.diff"
    path.write_text(path.read_text().replace("with `uv sync` after pulling", "with `uv sync --frozen` after pulling"))
    assert "apply cleanly" in show_proposal(root, result.id)["check"]
    apply_proposal(root, result.id, clock=lambda: NOW)
    assert "`uv sync --frozen` after pulling" in (root / "topics" / "tooling.md").read_text()


def test_new_topic_gets_its_memory_pointer_and_git_accepts_it(root: Path) -> None:
    (root / "topics" / "lessons.md").unlink()
    text = (
        (root / "MEMORY.md")
        .read_text()
        .replace("- [Lessons](topics/lessons.md): mistakes made more than once, and their fixes\n", "")
    )
    (root / "MEMORY.md").write_text(text)
    result = dream(root)
    diff = (root / "dreams" / str(result.id) / "proposal.diff").read_text()
    assert "--- /dev/null\n+++ b/topics/lessons.md" in diff and "+- [Lessons](topics/lessons.md):" in diff
    assert git(root, "init", "-q").returncode == 0
    check = git(root, "apply", "--check", str(root / "dreams" / str(result.id) / "proposal.diff"))
    assert check.returncode == 0, check.stderr
    meta = json.loads((root / "dreams" / str(result.id) / "proposal.json").read_text())
    lesson_hunk = next(h["n"] for h in meta["hunks"] if h["path"] == "topics/lessons.md")
    out = apply_proposal(root, result.id, [lesson_hunk], clock=lambda: NOW)
    assert "MEMORY.md" in out["files"] and out["added"]  # the pointer goes with its topic
    assert "(topics/lessons.md)" in (root / "MEMORY.md").read_text()


# -- dream run: no agent, no judgement of meaning --------------------------------------------------------


def run(root: Path) -> ProposeResult:
    return run_dream(root, clock=lambda: NOW)


def test_run_alone_proposes_the_repeated_error_and_rewrites_no_topic_line(root: Path) -> None:
    result = run(root)
    assert result.id and result.files == ["topics/lessons.md"], result.message
    diff = (root / "dreams" / result.id / "proposal.diff").read_text()
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert removed == []  # "switched from poetry to uv" is the agent's to judge: no line rewritten
    assert "poetry" not in diff and "uv.lock" not in diff
    assert f"+## Repeated error: `{YAML_ERROR}`" in diff
    assert "+  Fix: `ran `.venv/bin/pytest` instead" in diff.replace("``", "`")
    report = (root / "dreams" / result.id / "REPORT.md").read_text()
    assert "without an agent" in report


def test_run_reports_gaps_and_stale_topics_by_the_age_of_the_sessions(root: Path) -> None:
    for day, sid in ((6, "1a1a1a1a"), (7, "2b2b2b2b"), (8, "3c3c3c3c")):
        rel, text = session(day, sid, "deploy", "Fix the deployment", requests=("The deployment fails again",))
        (root / rel).write_text(text, encoding="utf-8")
    log = RecallLog(root / ".memory")
    for q in ("how do we deploy to staging", "staging deploy", "deploy staging?"):
        log.record("search_exact", q, [], when=NOW - 7200)
    log.close()
    # a clock two years on changes nothing: staleness counts from the newest session, not from today
    result = run_dream(root, clock=lambda: NOW + 2 * 365 * 86400)
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "## Knowledge gaps" in report and "deploy staging" in report
    assert "## Topics that may be stale" in report
    assert "`topics/deployment.md` (updated 2025-12-01): 38 days older than the newest session" in report
    assert "topics/tooling.md` (updated" not in report.split("## Topics that may be stale")[1]


def test_two_runs_at_once_one_proposal_and_clean_state(root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "memory_server", "dream", "run", "--root", str(root)]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [(*p.communicate(timeout=120), p.returncode) for p in procs]
    for out, err, code in outs:
        assert code == 0 or (code == 2 and "another dream command is running" in err), (out, err)
    assert sum("hunk proposed" in out for out, _err, _code in outs) == 1, outs
    assert len(list_proposals(root)) == 1
    state = json.loads((root / ".memory" / "dream-state.json").read_text())
    assert len(state["run_read"]) == len(SESSIONS) and not state["processed"]  # left for the agent's /dream


def test_a_held_lock_makes_run_exit_with_a_clear_message(root: Path) -> None:
    from filelock import FileLock

    (root / "memory.yaml").write_text("dream:\n  lock_wait_seconds: 0.2\n")
    (root / ".memory").mkdir(exist_ok=True)
    with FileLock(str(root / ".memory" / "dream.lock")):
        proc = subprocess.run(
            [sys.executable, "-m", "memory_server", "dream", "run", "--root", str(root)],
            env={**os.environ, "PYTHONPATH": SRC},
            capture_output=True,
            text=True,
            timeout=60,
        )
        with pytest.raises(LockedError, match="another dream command is running"):
            run(root)
    assert proc.returncode == 2
    assert "another dream command is running" in proc.stderr and "dream show" in proc.stderr
    assert not (root / "dreams").exists() or not list((root / "dreams").iterdir())


def start_note(root: Path, clock: float = NOW) -> str:
    """What the session-start hook tells the agent ("" when no dream is due)."""
    payload = {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(root)}
    return session_start(payload, root, clock=lambda: clock)


def test_a_dream_run_proposal_a_person_applied_counts_its_sessions_read_and_the_due_note_clears(root: Path) -> None:
    note = start_note(root)
    assert "run `/dream`" in note and "This note ends once /dream has read them." in note
    assert "without an agent, run `memory-server dream run`" in (root / ".dream-pending").read_text()
    result = run(root)
    assert result.id and result.hunks, result.message
    assert "session(s) stay for the agent's /dream" in result.message
    assert f"apply or reject its changes (`memory-server dream apply {result.id}`)" in result.message
    assert f"`memory-server dream dismiss {result.id}`" in result.message
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    at_root = shlex.quote(str(root.resolve()))  # a person pastes these into a terminal anywhere
    assert f"`memory-server dream apply {result.id} --root {at_root}`" in report, report[:1500]
    # only proposed: the sessions stay for the agent's /dream, and the note says what ends it
    gate = DreamGate(root, clock=lambda: NOW)
    assert len(gate.unprocessed_sessions()) == len(SESSIONS) and gate.due()[0]
    note = start_note(root)
    assert f"or a person applies or dismisses `dream run` proposal {result.id}." in note, note
    assert f"reviewed the `dream run` proposal {result.id}" in dream_status(root, clock=lambda: NOW)["clears"]

    out = apply_proposal(root, result.id, clock=lambda: NOW + 60)
    assert sorted(out["reviewed"]) == sorted(rel for rel, _text in SESSIONS)
    assert gate.unprocessed_sessions() == [] and not gate.due()[0]
    assert not (root / ".dream-pending").exists()  # cleared at once, not at the next session start
    assert start_note(root) == ""
    assert gather(root, clock=lambda: NOW + 60).message.startswith("nothing new")  # the agent's /dream skips them
    # the review is recorded in the proposal: a state rebuilt from dreams/ agrees
    (root / ".memory" / "dream-state.json").unlink()
    assert gate.unprocessed_sessions() == [] and not gate.due()[0]
    assert gate.load_state()["last_dream"] == NOW + 60


def test_a_dream_run_proposal_with_nothing_to_apply_is_dismissed_and_its_sessions_count_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_root(tmp_path)
    (root / SESSIONS[4][0]).unlink()  # the error no longer repeats: `dream run` proposes nothing
    r = ["--root", str(root)]
    assert cli_main(["dream", "run", *r]) == 0
    out = capsys.readouterr().out
    pid = out.split()[1].rstrip(":")
    assert "no change proposed" in out and f"dismiss it (`memory-server dream dismiss {pid}`)" in out, out
    assert cli_main(["dream", "status", *r]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dream due:") and f"dismissed it (`memory-server dream dismiss {pid}`)" in out, out
    assert cli_main(["dream", "dismiss", *r]) == 0  # no id: the newest `dream run` waiting for review
    out = capsys.readouterr().out
    assert f"`dream run` proposal {pid} is reviewed: its 5 session(s) count as read" in out, out
    assert cli_main(["dream", "status", *r]) == 0
    assert capsys.readouterr().out.startswith("dream not due: 0 sessions closed since")
    assert cli_main(["dream", "dismiss", pid, *r]) == 0
    assert "was already reviewed; nothing changed" in capsys.readouterr().out
    assert cli_main(["dream", "dismiss", *r]) == 2
    assert "no `dream run` proposal waits for review" in capsys.readouterr().err


def test_only_a_dream_run_proposal_is_dismissed_and_its_pending_changes_are_not_remembered(root: Path) -> None:
    agent = dream(root)
    with pytest.raises(DreamError, match="came from the agent's /dream"):
        dismiss_proposal(root, agent.id, clock=lambda: NOW)
    for rel in agent.sessions:  # the agent's pass read them; let `dream run` read them again
        state = json.loads((root / ".memory" / "dream-state.json").read_text())
        state["processed"].pop(rel)
        (root / ".memory" / "dream-state.json").write_text(json.dumps(state))
    result = run_dream(root, clock=lambda: NOW + 60)
    assert result.id and result.hunks
    done = dismiss_proposal(root, clock=lambda: NOW + 120)
    assert done["id"] == result.id and done["left"] == [1] and not done["already"]
    assert not DreamGate(root, clock=lambda: NOW + 120).due()[0]
    assert json.loads((root / "dreams" / result.id / "proposal.json").read_text())["status"] == "dismissed"
    state = json.loads((root / ".memory" / "dream-state.json").read_text())
    assert not any(rec["proposal"] == result.id for rec in state["rejected"].values())  # not turned down


# -- the commands ----------------------------------------------------------------------------------------


def test_the_dream_commands(root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    r = ["--root", str(root)]
    assert cli_main(["dream", "status", *r]) == 0
    assert "6 sessions" in capsys.readouterr().out
    assert cli_main(["dream", "gather", *r]) == 0
    out = capsys.readouterr().out
    assert "evidence pack of 6 session(s), about" in out and (root / "dreams" / "evidence.md").is_file()
    lines = len((root / "dreams" / "evidence.md").read_text(encoding="utf-8").splitlines())
    assert f" in {lines} lines (read them all" in out, out  # so the agent knows when it has read the whole pack
    assert cli_main(["dream", "propose", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "memory-server dream proposal items"
    bad = write_items(root, [*good_items(), BAD["hypothetical adopted"][0]], "bad.json")
    assert cli_main(["dream", "propose", str(bad), *r]) == 1
    assert "refused: item 4: the evidence only asks or supposes" in capsys.readouterr().out
    items = write_items(root, good_items()).read_text(encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO(items))  # `-`: the items on stdin, as the skill gives them
    assert cli_main(["dream", "propose", "-", "--keyword-only", *r]) == 0
    assert (root / "dreams" / "items.json").read_text(encoding="utf-8") == items  # what was submitted, kept
    out = capsys.readouterr().out
    assert "2 changes in 2 hunks proposed" in out
    pid = out.split()[1].rstrip(":")
    assert cli_main(["dream", "show", *r]) == 0
    out = capsys.readouterr().out
    assert f"proposal {pid} (pending" in out and "apply cleanly" in out and "diff --git" in out
    assert "change 1 [pending] (hunk 2): Dependencies are installed with `uv sync`" in out
    assert "second reading: not done" in out
    assert cli_main(["dream", "status", *r]) == 0  # the command to review it, pasteable: program and root
    review = f"to review: {pid} (hunks 1, 2): {program_command()} dream show {pid} --root {root}"
    assert capsys.readouterr().out.startswith(review + "\n")  # before whether a dream is due
    assert cli_main(["dream", "reject", "--changes", "2", *r]) == 0  # no id: the newest to review
    assert f"rejected change(s) 2 of {pid}" in capsys.readouterr().out
    assert cli_main(["dream", "apply", pid, "--changes", "2", *r]) == 2
    assert "was already rejected" in capsys.readouterr().err
    assert cli_main(["dream", "apply", *r]) == 0
    assert f"applied change(s) 1 of {pid}" in capsys.readouterr().out
    assert cli_main(["dream", "status", "--json", *r]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["due"] is False and status["proposals_to_review"] == []
    assert cli_main(["dream", "show", "nope", *r]) == 2
    assert "no proposal 'nope'" in capsys.readouterr().err


def test_the_skill_may_run_only_gather_propose_show_and_status() -> None:
    skill = Path(__file__).resolve().parents[1] / "plugin" / "skills" / "dream" / "SKILL.md"
    head = skill.read_text(encoding="utf-8").split("---")[1]
    allowed = next(ln for ln in head.splitlines() if ln.startswith("allowed-tools:"))
    launcher = '"${CLAUDE_PLUGIN_ROOT}/bin/memory-server"'  # the plugin's launcher: never a memory-server on PATH
    for sub in ("gather", "propose", "show", "status"):
        assert f"Bash({launcher} dream {sub}:*)" in allowed
    assert "dream:*" not in allowed and "apply" not in allowed and "reject" not in allowed
    assert "Edit" not in allowed.replace("Edit(", "")  # no free editing: the program renders the diff


# -- pieces ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence, kind",
    [
        ("Where should the generated Mermaid diagram go? -> docs/generated/", "statement"),
        ("hmm, we made a change where we replaced go-git with git status, could this be related?", "question"),
        ("what if we switched from go-git to git2go", "what-if"),
        ("We considered switching from mise to make, but decided to stay on mise.", "considered"),
        ("We tried make but it did not work, so we switched to just.", "statement"),
        ("no don't set it, let's see if it keeps happening", "declined"),
        ("no, GoReleaser has no native app auth, use actions/create-github-app-token", "statement"),
        ("No.", "declined"),
        ("let's not make this change in this branch", "declined"),
        ("Do it.", "statement"),
    ],
)
def test_what_a_sentence_commits_to(sentence: str, kind: str) -> None:
    from memory_server.dream.stance import classify

    assert classify(sentence) == kind


def _session(base: str, turns: list[tuple[int, str, str, str]]) -> Any:
    """A hand-made session record: (line, speaker, kind, text) turns."""
    from memory_server.dream.record import SessionRecord, Turn

    made = [Turn(f"{base}:{n}", n, "2026-01-05", 0.0, who, kind, text) for n, who, kind, text in turns]
    return SessionRecord(f"sessions/{base}.md", "transcript", base, "2026-01-05", 0.0, made)


def test_a_reversal_is_a_sentence_that_says_so_and_names_the_item() -> None:
    from memory_server.dream.items import Quote
    from memory_server.dream.locate import Recorded
    from memory_server.dream.reversals import later_mentions

    s = _session(
        "transcript:t",
        [
            (1, "person", "request", "We switched the lock handling to uv for the release build."),
            (2, "agent", "reply", "Done. Want me to revert the uv release build later? We use git for the index."),
            (3, "person", "request", "Tests pass, thanks."),
            (4, "agent", "reply", "We switched back to poetry."),
            (5, "person", "request", "We switched back to poetry, uv broke the build."),
        ],
    )
    recorded = Recorded([s])
    located = [recorded.locate(Quote("transcript:t:1", "switched the lock handling to uv"))]
    later = later_mentions("Release builds use uv", located, [s], {"transcript:t": 0})
    # the question at 2 reverts nothing; 4 does not name uv; 5 takes it back
    assert later.reversal is not None and later.reversal.ref == "transcript:t:5", later
    assert [m.ref for m in later.mentions] == ["transcript:t:2", "transcript:t:5"]
    # a later "thanks" cited as well does not hide the revert after the decision
    located.append(recorded.locate(Quote("transcript:t:3", "Tests pass, thanks.")))
    assert later_mentions("Release builds use uv", located, [s], {"transcript:t": 0}).reversal is not None


def test_a_name_exists_when_the_project_has_it_not_when_only_the_memory_says_it(tmp_path: Path) -> None:
    from memory_server.dream.names import GitTree

    project = tmp_path / "project"
    root = project / "memory"
    init_root(root)
    (root / "topics" / "design.md").write_text("# Design\n\n- `GhostThing` keeps the cache.\n")
    (project / "src").mkdir()
    (project / "src" / "cache.go").write_text("// CommentThing is only named here.\ntype RealThing struct{}\n")
    (project / "src" / "load.go").write_text('package src\n\nfunc LoadAll() { println("StringThing") }\n')
    assert git(project, "init", "-q").returncode == 0 and git(project, "add", "-A").returncode == 0
    tree = GitTree(root)
    assert tree.problem("RealThing") is None and tree.problem("src/cache.go") is None
    assert tree.problem("src/") is None and tree.problem("RealThing", "src/cache.go") is None
    assert "is not defined in `src/load.go`" in str(tree.problem("RealThing", "src/load.go"))  # where it lives counts
    assert tree.problem("GhostThing") is not None  # only a topic names it
    assert tree.problem("CommentThing") is not None  # only a comment names it
    assert tree.problem("StringThing") is not None  # only a string names it
    assert tree.problem("Load") is not None  # whole words: `LoadAll` is not `Load`
    assert tree.problem("src.LoadAll") is None and tree.problem("cache.LoadAll") is not None  # package and name
    assert GitTree(tmp_path / "elsewhere").problem("RealThing") is None  # outside a git tree: cannot tell


def test_stance_is_judged_on_the_whole_sentence_a_quote_was_cut_from() -> None:
    from memory_server.dream.locate import sentence_of

    text = "Fixed it. Hmm, we replaced go-git with git status, could this be related? v1.2 is out."
    assert sentence_of(text, "we replaced go-git") == "Hmm, we replaced go-git with git status, could this be related?"
    assert sentence_of(text, "v1.2 is out") == "v1.2 is out."


def test_diff_round_trip_without_final_newline_and_crlf() -> None:
    for old_text in ("a\nb\nc", "a\r\nb\r\nc\r\n", ""):
        old = split_keep(old_text)
        eol = "\r\n" if "\r\n" in old_text else "\n"
        open_last = bool(old) and not old[-1].endswith("\n")
        edits = [
            Edit(
                len(old) - 1 if open_last else len(old),
                1 if open_last else 0,
                ([old[-1] + eol] if open_last else []) + [f"new{eol}"],
                ("k",),
            )
        ]
        new, kept = apply_edits(old, edits)
        patch = make_patch("topics/x.md", old if old_text else None, new, kept)
        parsed = parse_diff(patch.text())
        assert "".join(apply_hunks(old, parsed[0].hunks)) == "".join(new)
        assert patch.hunks[0].keys == ["k"]


# -- the recall log -------------------------------------------------------------------------------------

RECORD_MANY = """
import sys
from memory_server.dream.recall import RecallLog
log = RecallLog(sys.argv[1], max_events=10_000)
for i in range(150):
    assert log.record("search_exact", f"query {sys.argv[2]} {i}", [{"path": "topics/a.md", "start_line": 1,
                      "end_line": 2, "layer": "topic", "score": 1.5}])
"""


def test_query_key_normalises() -> None:
    from memory_server.dream.recall import query_key

    assert query_key("How do we deploy to Staging?") == query_key("staging: deploy!") == "deploy staging"
    assert query_key("the") == "the"  # only stop words: keep them rather than nothing


def test_recall_log_records_hits_and_rolls_off(tmp_path: Path, root: Path) -> None:
    memory = Memory(root, keyword_only=True)
    memory.index()
    hits = memory.search_exact("poetry install", layers=["topic"])
    memory.close()
    log = RecallLog(tmp_path / "state", max_events=5)
    assert log.record("search_exact", "poetry install", hits, when=100.0)
    event = log.events()[0]
    assert (event.tool, event.query, event.key) == ("search_exact", "poetry install", "install poetry")
    assert event.time == 100.0
    assert event.hits[0]["path"] == "topics/tooling.md" and event.hits[0]["match"] == "phrase"
    assert event.coverage == 1.0
    for i in range(10):
        log.record("search_memory", f"q{i}", [], when=200.0 + i)
    assert log.count() == 5 and [e.query for e in log.events()] == [f"q{i}" for i in range(5, 10)]
    assert [e.query for e in log.events(since=208.0)] == ["q8", "q9"]


def test_recall_log_several_processes_at_once(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [subprocess.Popen([sys.executable, "-c", RECORD_MANY, str(tmp_path), str(n)], env=env) for n in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    log = RecallLog(tmp_path)
    assert log.count() == 600 and len({e.query for e in log.events()}) == 600


# -- after the end-to-end trials ----------------------------------------------------------------------------


def fact(statement: str, section: str | None, topic: str = "topics/tooling.md") -> dict[str, Any]:
    """A fact backed by the scripted decision on command output."""
    target = {"topic": topic, **({"section": section} if section else {})}
    return {
        "kind": "fact",
        "statement": statement,
        "stance": "adopted",
        "target": target,
        "evidence": [{"ref": ref(4, "plain text"), "quote": "Keep command output plain text unless --json"}],
    }


def test_held_back_items_wait_in_the_state_and_the_next_gather_lists_them_first(root: Path) -> None:
    from memory_server.dream.pack import gather

    (root / "memory.yaml").write_text("dream:\n  max_hunks: 1\n", encoding="utf-8")
    first = dream(root)
    assert first.changes == 1 and len(first.held_back) == 2, first.message
    status = dream_status(root, clock=lambda: NOW)
    assert status["unprocessed_sessions"] == 0 and status["waiting_items"] == 2
    report = (root / "dreams" / str(first.id) / "REPORT.md").read_text()
    assert "2 verified items wait in the dream state with their evidence" in report
    pack = gather(root, clock=lambda: NOW)  # every session is read: only the waiting items are packed
    assert pack.pack is not None and "2 verified item(s) waiting" in pack.message
    text = pack.pack.text
    assert text.index("## Verified items waiting from an earlier pass") < text.index("## Topics and their sections")
    # the agent resubmits them as listed (the lesson and the second correction); they are verified again
    waiting = [rec["item"] for rec in json.loads((root / ".memory" / "dream-state.json").read_text())["held"].values()]
    held_section = report[report.index("## Verified, waiting") :]
    for item in waiting:  # the reviewer sees each waiting item whole, with where its evidence is
        assert item["statement"][-40:] in held_section and item["evidence"][0]["ref"] in held_section
    assert {i["statement"] for i in waiting} == set(first.held_back)
    assert json.dumps(waiting[0], ensure_ascii=False, indent=1) in text
    second = propose(root, write_items(root, waiting), clock=lambda: NOW + 60)
    assert second.changes == 1 and len(second.held_back) == 1, second.message
    assert dream_status(root, clock=lambda: NOW)["waiting_items"] == 1
    # a waiting item the pack listed and the agent left out stops waiting (the report says so)
    rel, text = session(9, "a9b8c7d6", "output", "Output", decisions=("Command output is plain text by default.",))
    (root / rel).write_text(text, encoding="utf-8")
    gather(root, clock=lambda: NOW + 120)
    item = fact("Command output is plain text by default.", "Tests")
    item["evidence"] = [
        {
            "ref": f"{rel}:{text.splitlines().index('- User: Command output is plain text by default.') + 1}",
            "quote": "Command output is plain text by default.",
        }
    ]
    third = propose(root, write_items(root, [item]), clock=lambda: NOW + 180)
    assert third.changes == 1 and dream_status(root, clock=lambda: NOW)["waiting_items"] == 0
    assert "was not resubmitted, so it no longer waits" in (root / "dreams" / str(third.id) / "REPORT.md").read_text()


def test_the_limit_counts_changes_not_hunks_and_follows_the_agents_order(root: Path) -> None:
    spread = TOOLING.replace(
        "- Tests must not touch the network.\n",
        "- Tests must not touch the network.\n"
        + "".join(f"- Filler line {n}.\n" for n in range(12))
        + "- CI runs `poetry install` first.\n"
        + "".join(f"- More filler {n}.\n" for n in range(12))
        + "- The release job runs `poetry install` too.\n",
    )
    (root / "topics" / "tooling.md").write_text(spread, encoding="utf-8")
    lines = [n for n, ln in enumerate(spread.splitlines(), 1) if "poetry install" in ln]
    (root / "memory.yaml").write_text("dream:\n  max_hunks: 2\n", encoding="utf-8")
    items = [
        fact("Command output is plain text by default.", "Releases", topic="topics/deployment.md"),
        {
            **good_items()[0],
            "replaces": {"lines": [f"topics/tooling.md:{n}" for n in lines], "old": "poetry install", "new": "uv sync"},
        },
        good_items()[2],
    ]
    result = dream(root, items)
    # the fact (listed first) and the whole correction (over three hunks: one change); the lesson waits
    meta = json.loads((root / "dreams" / str(result.id) / "proposal.json").read_text())
    correction = [h["n"] for h in meta["hunks"] if good_items()[0]["statement"] in h["summary"]]
    assert result.changes == 2 and len(correction) == 3, result.message
    assert result.held_back == [good_items()[2]["statement"]]
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert f"2 changes in {result.hunks} hunks" in report
    assert "- In proposal.diff: hunks " + ", ".join(f"#{n} (`topics/tooling.md`)" for n in correction) in report
    assert "in the order given" in report


def test_two_items_whose_lines_would_share_a_hunk_are_two_changes_the_second_waits(root: Path) -> None:
    """One change never shares a hunk with another: each can be applied or rejected alone."""
    items = [fact("Command output is plain text by default.", "Tests"), fact("JSON output only with --json.", "Tests")]
    result = dream(root, items)
    assert result.changes == 1 and result.hunks == 1 and result.held_back == ["JSON output only with --json."]
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "its lines would sit next to another change's" in report


def test_a_second_new_topic_waits_and_says_why(root: Path) -> None:
    """Two new topics' pointer lines in MEMORY.md would be one hunk: the second topic waits, and says so."""
    new = [
        {**fact("Command output is plain text by default.", None), "target": {"topic": "topics/output.md",
         "title": "Output", "description": "What commands print"}},
        {**fact("JSON output only with --json.", None), "target": {"topic": "topics/json.md", "title": "JSON",
         "description": "The JSON output"}},
    ]  # fmt: skip
    result = dream(root, new)
    assert result.changes == 1 and result.held_back == ["JSON output only with --json."], result.message
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "it makes a new topic and this proposal makes one already" in report
    diff = (root / "dreams" / str(result.id) / "proposal.diff").read_text()  # the title and description given
    assert "+- [Output](topics/output.md): What commands print\n" in diff and "\n+# Output\n" in diff, diff


def test_an_item_that_would_show_no_line_of_its_own_waits_instead(root: Path) -> None:
    """Two items changing the same topic line: the second one's edit cannot apply beside the first. It used
    to be listed as proposed with no line in the diff; now it waits for the next proposal, saying why."""
    first, second = good_items()[0], dict(good_items()[0])
    second.update(
        statement="Dependencies come from uv sync, not poetry",
        replaces={"lines": ["topics/tooling.md:11"], "old": "poetry", "new": "uv sync"},
    )
    result = dream(root, [first, second])
    assert result.changes == 1 and result.held_back == [second["statement"]], result.message
    report = (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    assert "changes lines another change of this proposal changes" in report


SETTINGS_TOPIC = """\
---
title: Code
updated: 2025-12-01
---
# Code

### Git

We use a git library for most operations, with exceptions:

#### Checkout

The library's checkout deletes ignored folders.

Use the git command line instead:
```sh
git checkout main
```

Regression tests cover it.

### Settings

All settings go through the `settings` package.

**Usage:**
```go
s, err := settings.Load()
```

**Do NOT:**
- Read `.entire/settings.json` directly

**Key files:**
- `settings/settings.go` - the struct and `Load()`

#### Loading

- Load once per command.

### Logging

- Log to stderr.
"""


def test_a_line_for_a_section_follows_its_prose_not_into_a_labelled_list(root: Path) -> None:
    (root / "topics" / "code.md").write_text(SETTINGS_TOPIC, encoding="utf-8")
    result = dream(
        root,
        [
            fact("Command output is plain text by default.", "Settings", "topics/code.md"),
            fact("Log lines are plain text too.", "Logging", "topics/code.md"),
            fact("Git errors are plain text too.", "Git", "topics/code.md"),
            fact("Checkout output is plain text too.", "Checkout", "topics/code.md"),
        ],
    )
    apply_proposal(root, result.id, clock=lambda: NOW)
    text = (root / "topics" / "code.md").read_text()
    assert ("```\n\n- Command output is plain text by default.\n\n**Do NOT:**") in text, (
        text
    )  # not after the "Do NOT" list, where it would read as one more thing not to do
    assert "- Log to stderr.\n- Log lines are plain text too.\n" in text  # the section's own list: joined
    assert "### Git\n\n- Git errors are plain text too.\n\nWe use a git library" in text  # not one of the exceptions
    assert "Regression tests cover it.\n\n- Checkout output is plain text too.\n" in text  # the example stays whole


def test_propose_says_when_names_were_not_checked(root: Path, tmp_path: Path) -> None:
    result = dream(root)
    note = f"names not checked: {root} is not in a git repository"
    assert result.notes == [note]
    assert note in (root / "dreams" / str(result.id) / "REPORT.md").read_text()
    checked = make_root(tmp_path / "in-git")
    git(checked, "init", "-q")
    assert dream(checked).notes == []


def test_a_too_long_statement_is_refused_with_its_length(root: Path) -> None:
    result = dream(root, [fact("x" * 450, "Dependencies")])
    assert result.id is None and any("it has 450" in r for r in result.refusals), result.refusals


def test_pack_cuts_a_long_reply_at_a_sentence_end() -> None:
    from memory_server.dream.pack import _cut

    reply = "The fix is in. " * 10 + "Then a long sentence that goes on and on past the limit without stopping"
    cut = _cut(reply, 200)
    assert cut.endswith("The fix is in. …") and len(cut) <= 200, cut
    assert _cut("no sentence end " * 30, 100).endswith("…")


def test_redo_of_a_partly_applied_proposal_marks_it_superseded(root: Path) -> None:
    result = dream(root)
    meta = json.loads((root / "dreams" / str(result.id) / "proposal.json").read_text())
    lessons = [h["n"] for h in meta["hunks"] if h["path"] == "topics/lessons.md"]
    apply_proposal(root, result.id, lessons, clock=lambda: NOW)
    redo = dream(root, [good_items()[0]], redo=result.id)
    assert redo.id != result.id and (root / "dreams" / str(result.id)).is_dir()  # kept: part of it was applied
    with pytest.raises(DreamError, match="superseded"):
        apply_proposal(root, result.id, clock=lambda: NOW)


def test_an_item_made_by_the_program_can_wait_and_be_resubmitted() -> None:
    """`dream run` builds its items itself: held back, they wait in the same written form an agent's do."""
    from memory_server.dream.items import ProposalItem, Quote, parse_item

    made = ProposalItem(
        0,
        "",
        "lesson",
        "Run the tests from the virtualenv",
        "adopted",
        "topics/lessons.md",
        evidence=[
            Quote(ref(3, YAML_ERROR), YAML_ERROR, "error"),
            Quote(ref(3, YAML_ERROR), "ran `.venv/bin/pytest`", "fix"),
        ],
    )
    again = parse_item(1, json.loads(json.dumps(made.as_json())))
    assert again.fingerprint == made.fingerprint and again.evidence == made.evidence


def test_a_new_updates_section_after_a_blank_last_line_adds_no_second_blank(root: Path) -> None:
    (root / "topics" / "cli.md").write_text(
        "---\ntitle: CLI\nupdated: 2025-12-01\n---\n# CLI\n\n## Releases\n\n- Tag the commit.\n\n", encoding="utf-8"
    )
    result = dream(root, [fact("Command output is plain text by default.", None, "topics/cli.md")])
    diff = (root / "dreams" / str(result.id) / "proposal.diff").read_text()
    assert " - Tag the commit.\n \n+## Updates\n+\n+- Command output is plain text" in diff, diff


def test_a_waiting_items_references_are_listed_once_each() -> None:
    from memory_server.dream.items import parse_item
    from memory_server.dream.report import _refs

    raw = {
        "kind": "fact",
        "stance": "adopted",
        "statement": "The field is renamed",
        "target": {"topic": "topics/tooling.md", "section": "Tasks"},
        "evidence": [
            {"ref": "transcript:s:203", "quote": "rename"},
            {"ref": "transcript:s:27", "quote": "nobody"},
            {"ref": "transcript:s:203", "quote": "field"},
        ],
    }
    assert _refs(parse_item(1, raw)) == "`transcript:s:203`, `transcript:s:27`"
