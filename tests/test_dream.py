"""/dream end to end on a scripted memory root: real files, real SQLite, real git as the diff oracle."""

from __future__ import annotations

import calendar
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_server import Memory
from memory_server.dream.run import list_proposals, run_dream
from memory_server.dream.candidates import switch_terms
from memory_server.dream.patch import Edit, apply_edits, make_patch, parse_diff, apply_hunks
from memory_server.dream.review import apply_proposal, dream_status, reject_proposal, show_proposal
from memory_server.dream.sessions import split_error
from memory_server.dream.topics import split_keep
from memory_server.testing import FakeEmbedder
from memory_server.errors import DreamError, LockedError, PathRefusedError, StaleProposalError
from memory_server.dream.recall import RecallLog
from memory_server.files.scaffold import init_root

SRC = str(Path(__file__).resolve().parents[1] / "src")
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

- Dependencies are managed with poetry; run `poetry install` after pulling.
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

YAML_ERROR = "`ModuleNotFoundError: No module named 'yaml'`"


def session(day: int, sid: str, slug: str, title: str, *, decisions=(), errors=(), requests=("Look at the code",)):
    body = [
        "---",
        f"session_id: {sid}-0000-4000-8000-000000000000",
        "part: 1",
        f"started: 2026-01-0{day}T09:00:00Z",
        f"ended: 2026-01-0{day}T10:30:00Z",
        "cwd: /home/dev/project",
        "branch: main",
        f"transcript: /home/dev/.claude/projects/project/{sid}.jsonl",
        "transcript_sha256: " + "0" * 64,
        "lines: 120",
        "counts: {user: 4, assistant: 9, tools: 12}",
        "---",
        f"# {title}",
        "",
        "## Goal",
        "",
        title + ".",
        "",
        "## Requests",
        "",
        *[f"- {r}" for r in requests],
        "",
        "## Files",
        "",
        "- src/app.py",
        "",
        "## Commands",
        "",
        "- `pytest -q`",
        "- `git status` (failed)",
        "",
    ]
    if errors:
        body += ["## Errors and fixes", "", *[f"- {e}" for e in errors], ""]
    if decisions:
        body += ["## Decisions", "", *[f"- {d}" for d in decisions], ""]
    body += ["## Open at the end", "", "- Nothing.", ""]
    return f"sessions/compressed/2026/2026-01-0{day}-{sid}-{slug}.md", "\n".join(body)


SESSIONS = [
    session(3, "a1b2c3d4", "fix-flaky-tests", "Fix the flaky tests",
            errors=[f"{YAML_ERROR} when running pytest outside the virtualenv (line 41, 2×) — fixed: ran `.venv/bin/pytest`"]),
    session(4, "b2c3d4e5", "search-cli", "Add a search command",
            decisions=["Keep command output plain text unless --json is given. (line 17)"]),
    session(5, "c3d4e5f6", "switch-to-uv", "Move dependency management to uv",
            decisions=["Switched from poetry to uv for dependency management; `uv sync` installs everything. (line 88)"]),
    session(6, "d4e5f6a7", "docs", "Write the README"),
    session(7, "e5f6a7b8", "ci", "Fix the CI job",
            errors=[f"{YAML_ERROR} in the CI job (line 12) — fixed: `uv sync`, edited `ci.yml`"]),
    session(8, "f6a7b8c9", "refactor", "Refactor the store"),
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


def snapshot(root: Path) -> dict[str, bytes]:
    files = [root / "MEMORY.md", *sorted((root / "topics").rglob("*")), *sorted((root / "sessions").rglob("*"))]
    return {str(p.relative_to(root)): p.read_bytes() for p in files if p.is_file()}


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def dream(root: Path, **kwargs):
    memory = Memory(root, embedder=False)
    try:
        return run_dream(root, memory=memory, clock=lambda: NOW, **kwargs)
    finally:
        memory.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


# -- the scripted root ------------------------------------------------------------------------------


def test_dream_proposes_drift_and_lesson_and_apply_makes_them_true(root: Path) -> None:
    before = snapshot(root)
    result = dream(root)
    assert result.id and result.hunks >= 2, result.message
    folder = root / "dreams" / result.id
    diff = (folder / "proposal.diff").read_text(encoding="utf-8")
    report = (folder / "REPORT.md").read_text(encoding="utf-8")

    # nothing in topics, sessions or MEMORY.md changed
    assert snapshot(root) == before
    # the proposal: tooling says uv now, and the repeated error is a lesson
    assert "-- Dependencies are managed with poetry; run `poetry install` after pulling." in diff
    assert "+- Dependencies are managed with uv; run `uv install` after pulling." in diff
    assert "+- The lock file `uv.lock` is committed." in diff
    assert "+## ModuleNotFoundError: No module named 'yaml'" in diff
    assert "b/topics/lessons.md" in diff and "b/topics/tooling.md" in diff
    # the report: a section per hunk with reason, evidence (file:lines) and scores; dates on both sides
    assert "## Hunk 1: topics/lessons.md (lesson)" in report
    assert "## Hunk 2: topics/tooling.md (policy drift)" in report
    assert "2026-01-05-c3d4e5f6-switch-to-uv.md:" in report and "(2026-01-05)" in report
    assert "changed 2025-11-01" in report
    assert "2026-01-03-a1b2c3d4-fix-flaky-tests.md:" in report and "2026-01-07-e5f6a7b8-ci.md:" in report
    assert "Scores: score" in report and "threshold 0.50" in report
    assert "Keep command output plain text" in report  # under the threshold, listed, not proposed
    assert "Keep command output plain text" not in diff

    # git itself accepts the diff from the root
    assert git(root, "init", "-q").returncode == 0
    check = git(root, "apply", "--check", "-v", str(folder / "proposal.diff"))
    assert check.returncode == 0, check.stderr

    os.chmod(root / "topics" / "tooling.md", 0o640)
    applied = apply_proposal(root, result.id, clock=lambda: NOW)
    assert (root / "topics" / "tooling.md").stat().st_mode & 0o777 == 0o640  # permissions kept
    assert applied["files"] == ["topics/lessons.md", "topics/tooling.md"]
    tooling = (root / "topics" / "tooling.md").read_text(encoding="utf-8")
    assert "managed with uv" in tooling and "poetry" not in tooling
    lessons = (root / "topics" / "lessons.md").read_text(encoding="utf-8")
    assert "- Mistake: " + YAML_ERROR in lessons
    assert "- Fix: `uv sync`, edited `ci.yml`\n" in lessons
    assert "2026-01-03-a1b2c3d4-fix-flaky-tests.md" in lessons and "2026-01-07-e5f6a7b8-ci.md" in lessons
    # git applying the same diff to the original gives the same bytes as our own apply
    expected_by_git = root.parent / "by-git"
    shutil.copytree(root, expected_by_git, ignore=shutil.ignore_patterns(".memory", ".git"))
    for rel, data in before.items():
        (expected_by_git / rel).write_bytes(data)
    assert git(expected_by_git, "init", "-q").returncode == 0
    assert git(expected_by_git, "apply", str(folder / "proposal.diff")).returncode == 0
    for rel in ("topics/tooling.md", "topics/lessons.md"):
        assert (expected_by_git / rel).read_bytes() == (root / rel).read_bytes()
    # sessions stay untouched; nothing new: a second run proposes nothing
    assert {k: v for k, v in snapshot(root).items() if k.startswith("sessions")} == {
        k: v for k, v in before.items() if k.startswith("sessions")
    }
    again = dream(root)
    assert again.id is None and again.hunks == 0 and "nothing new" in again.message
    assert [p["id"] for p in list_proposals(root)] == [result.id]


def test_a_rejected_hunk_is_not_proposed_again(root: Path) -> None:
    first = dream(root)
    meta = json.loads((root / "dreams" / first.id / "proposal.json").read_text())
    lesson = next(h["n"] for h in meta["hunks"] if h["kinds"] == ["lesson"])
    out = reject_proposal(root, first.id, [lesson], clock=lambda: NOW)
    assert out["hunks"] == [lesson]
    assert not (root / "topics" / "lessons.md").read_text().count("ModuleNotFoundError")
    # the same error again in a new session, and the drift proposal regenerated: the lesson stays rejected
    rel, text = session(9, "0a0b0c0d", "again", "Run the tests again",
                        errors=[f"{YAML_ERROR} once more → fixed by running `uv sync`"])
    (root / rel).write_text(text, encoding="utf-8")
    second = dream(root, redo=first.id)
    diff = (root / "dreams" / second.id / "proposal.diff").read_text()
    assert "ModuleNotFoundError" not in diff
    assert "b/topics/tooling.md" in diff  # the drift is still pending: proposed again
    report = (root / "dreams" / second.id / "REPORT.md").read_text()
    assert "rejected or applied before" in report
    with pytest.raises(DreamError, match="superseded"):
        apply_proposal(root, first.id, clock=lambda: NOW)


def test_deterministic_given_the_same_inputs_and_clock(tmp_path: Path) -> None:
    outputs = []
    for name in ("one", "two"):
        root = make_root(tmp_path / name)
        result = dream(root)
        folder = root / "dreams" / result.id
        outputs.append(((folder / "proposal.diff").read_bytes(), (folder / "REPORT.md").read_bytes()))
    assert outputs[0] == outputs[1]


def test_apply_refuses_when_a_target_changed_and_changes_nothing(root: Path) -> None:
    result = dream(root)
    tooling = root / "topics" / "tooling.md"
    tooling.write_text(TOOLING + "- Someone edited this by hand.\n", encoding="utf-8")
    before = snapshot(root)
    with pytest.raises(StaleProposalError, match=r"topics/tooling.md changed .*dream run --redo " + result.id):
        apply_proposal(root, result.id, clock=lambda: NOW)
    assert snapshot(root) == before  # all or nothing: lessons.md was not written either
    assert "changed since proposal" in show_proposal(root, result.id)["check"]
    # regenerate as the message says: the new proposal applies
    redo = dream(root, redo=result.id)
    assert redo.hunks >= 2
    apply_proposal(root, redo.id, clock=lambda: NOW)
    assert "managed with uv" in tooling.read_text() and "edited this by hand" in tooling.read_text()


def test_apply_with_hunks_applies_only_those_then_the_rest(root: Path) -> None:
    result = dream(root)
    meta = json.loads((root / "dreams" / result.id / "proposal.json").read_text())
    drift = [h["n"] for h in meta["hunks"] if h["path"] == "topics/tooling.md"]
    lessons_before = (root / "topics" / "lessons.md").read_bytes()
    out = apply_proposal(root, result.id, drift, clock=lambda: NOW)
    assert out["files"] == ["topics/tooling.md"]
    assert (root / "topics" / "lessons.md").read_bytes() == lessons_before
    assert "managed with uv" in (root / "topics" / "tooling.md").read_text()
    with pytest.raises(DreamError, match="already applied"):
        apply_proposal(root, result.id, drift, clock=lambda: NOW)
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


def test_a_near_restatement_updates_the_line_and_hunks_of_one_file_apply_one_by_one(root: Path) -> None:
    rel, text = session(8, "9d9d9d9d", "tests", "Speed up the tests",
                        decisions=["From now on run the test suite with `pytest -n auto` from the project root."])
    (root / rel).write_text(text, encoding="utf-8")
    result = dream(root)
    meta = json.loads((root / "dreams" / result.id / "proposal.json").read_text())
    tooling = [h["n"] for h in meta["hunks"] if h["path"] == "topics/tooling.md"]
    assert len(tooling) == 2  # the rename and the update of the test line stay separate hunks
    diff = (root / "dreams" / result.id / "proposal.diff").read_text()
    assert "-- Run the test suite with pytest from the project root.\n" in diff
    assert "+- Run the test suite with `pytest -n auto` from the project root. (decided 2026-01-08; " in diff
    assert git(root, "init", "-q").returncode == 0
    assert git(root, "apply", "--check", str(root / "dreams" / result.id / "proposal.diff")).returncode == 0
    apply_proposal(root, result.id, [tooling[1]], clock=lambda: NOW)
    text = (root / "topics" / "tooling.md").read_text()
    assert "`pytest -n auto`" in text and "poetry install" in text
    apply_proposal(root, result.id, [tooling[0]], clock=lambda: NOW)  # the same file again, later
    text = (root / "topics" / "tooling.md").read_text()
    assert "`pytest -n auto`" in text and "poetry" not in text


def test_apply_is_all_or_nothing_when_a_write_fails(root: Path) -> None:
    # tooling.md grows past a 4 KB file-size limit; lessons.md (written first) stays under it
    tooling = root / "topics" / "tooling.md"
    tooling.write_text(TOOLING + "".join(f"- Note {i}: {'x' * 60}\n" for i in range(70)), encoding="utf-8")
    result = dream(root)
    before = snapshot(root)
    proc = subprocess.run(
        [sys.executable, "-c", APPLY_WITH_FILE_SIZE_LIMIT, str(root), result.id],
        env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert snapshot(root) == before  # lessons.md, written to its temp file first, was not renamed in
    assert not [p for p in (root / "topics").iterdir() if p.name.endswith(".tmp")]
    apply_proposal(root, result.id, clock=lambda: NOW)  # nothing was marked applied: it still works
    assert "managed with uv" in tooling.read_text() and "ModuleNotFoundError" in (root / "topics" / "lessons.md").read_text()


def test_a_diff_edited_to_reach_outside_topics_is_refused(root: Path) -> None:
    result = dream(root)
    path = root / "dreams" / result.id / "proposal.diff"
    text = path.read_text().replace("topics/lessons.md", "sessions/compressed/2026/evil.md")
    path.write_text(text)
    with pytest.raises((PathRefusedError, DreamError)):
        apply_proposal(root, result.id, clock=lambda: NOW)


def test_improved_wording_on_plus_lines_is_what_gets_applied(root: Path) -> None:
    result = dream(root)
    path = root / "dreams" / result.id / "proposal.diff"
    text = path.read_text().replace("run `uv install` after pulling", "run `uv sync` after pulling")
    path.write_text(text)
    assert "apply cleanly" in show_proposal(root, result.id)["check"]
    apply_proposal(root, result.id, clock=lambda: NOW)
    assert "run `uv sync` after pulling" in (root / "topics" / "tooling.md").read_text()


def test_new_topic_gets_its_memory_pointer_and_git_accepts_it(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "topics" / "lessons.md").unlink()
    text = (root / "MEMORY.md").read_text().replace(
        "- [Lessons](topics/lessons.md): mistakes made more than once, and their fixes\n", ""
    )
    (root / "MEMORY.md").write_text(text)
    result = dream(root)
    diff = (root / "dreams" / result.id / "proposal.diff").read_text()
    assert "--- /dev/null\n+++ b/topics/lessons.md" in diff
    assert "+- [Lessons](topics/lessons.md):" in diff
    assert git(root, "init", "-q").returncode == 0
    check = git(root, "apply", "--check", str(root / "dreams" / result.id / "proposal.diff"))
    assert check.returncode == 0, check.stderr
    meta = json.loads((root / "dreams" / result.id / "proposal.json").read_text())
    lesson_hunk = next(h["n"] for h in meta["hunks"] if h["path"] == "topics/lessons.md")
    out = apply_proposal(root, result.id, [lesson_hunk], clock=lambda: NOW)
    assert "MEMORY.md" in out["files"] and out["added"]  # the pointer goes with its topic
    assert "(topics/lessons.md)" in (root / "MEMORY.md").read_text()


def test_recall_signals_raise_a_decision_over_the_threshold(root: Path) -> None:
    plain = "2026-01-04-b2c3d4e5-search-cli.md"
    rel = next(r for r, _ in SESSIONS if r.endswith(plain))
    log = RecallLog(root / ".memory")
    for i, query in enumerate(["plain text output", "json output flag", "cli output format", "plain text output"]):
        log.record("search_memory", query, [{"path": rel, "start_line": 30, "end_line": 40, "layer": "session",
                                             "score": 0.03}], when=NOW - 3600 * (i + 1))
    for q in ("how do we deploy to staging", "staging deploy", "deploy staging?"):
        log.record("search_exact", q, [], when=NOW - 7200)
    log.close()
    result = dream(root)
    diff = (root / "dreams" / result.id / "proposal.diff").read_text()
    report = (root / "dreams" / result.id / "REPORT.md").read_text()
    assert "Keep command output plain text unless --json is given." in diff
    assert "4 recorded searches found this evidence" in report
    assert "## Knowledge gaps" in report and "deploy staging" in report


def test_a_topic_whose_subject_keeps_coming_up_is_reported_stale(root: Path) -> None:
    for day, sid in ((6, "1a1a1a1a"), (7, "2b2b2b2b"), (8, "3c3c3c3c")):
        rel, text = session(day, sid, "deploy", "Fix the deployment of the web app",
                            requests=["The deployment to production fails again"])
        (root / rel).write_text(text, encoding="utf-8")
    result = dream(root)
    report = (root / "dreams" / result.id / "REPORT.md").read_text()
    assert "## Topics that may be stale" in report and "### topics/deployment.md" in report
    assert "has not changed since 2025-12-01 while 3 sessions mention its subject" in report
    assert "deployment" not in (root / "dreams" / result.id / "proposal.diff").read_text()


def test_semantic_matching_with_a_fake_embedder(root: Path) -> None:
    memory = Memory(root, embedder=FakeEmbedder())
    try:
        result = run_dream(root, memory=memory, clock=lambda: NOW)
    finally:
        memory.close()
    assert result.hunks >= 2
    assert git(root, "init", "-q").returncode == 0
    assert git(root, "apply", "--check", str(root / "dreams" / result.id / "proposal.diff")).returncode == 0


def test_hand_written_sessions_are_read_too(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    shutil.rmtree(root / "sessions" / "compressed" / "2026")
    notes = root / "sessions" / "compressed" / "2026"
    notes.mkdir()
    (notes / "2026-01-05-notes.md").write_text(
        "# Notes\n\nWe talked about packaging. From now on we switched from poetry to uv for everything.\n"
        "The build went fine.\n\n- ImportError: cannot import name 'x' → fixed by pinning the version\n"
    )
    (notes / "2026-01-06-more.md").write_text(
        "# More notes\n\n## What happened\n\n- ImportError: cannot import name 'x' again, fix: pin the version\n"
    )
    result = dream(root)
    diff = (root / "dreams" / result.id / "proposal.diff").read_text()
    assert "managed with uv" in diff and "ImportError" in diff


# -- concurrency ----------------------------------------------------------------------------------------


def test_two_runs_at_once_one_proposal_and_clean_state(root: Path) -> None:
    Memory(root, embedder=False).index()  # both runs then only read the index
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "memory_server.dream.cli", "--root", str(root), "run", "--keyword-only"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    for out, err, code in outs:
        assert code == 0 or (code == 2 and "another dream command is running" in err), (out, err)
    assert sum("hunk(s) proposed" in out for out, _err, _code in outs) == 1
    assert len(list_proposals(root)) == 1
    state = json.loads((root / ".memory" / "dream-state.json").read_text())
    assert len(state["processed"]) == len(SESSIONS)


def test_a_held_lock_makes_run_exit_with_a_clear_message(root: Path) -> None:
    from filelock import FileLock

    (root / "memory.yaml").write_text("dream:\n  lock_wait_seconds: 0.2\n")
    lock = FileLock(str(root / ".memory" / "dream.lock"))
    with lock:
        env = {**os.environ, "PYTHONPATH": SRC}
        proc = subprocess.run(
            [sys.executable, "-m", "memory_server.dream.cli", "--root", str(root), "run", "--keyword-only"],
            env=env, capture_output=True, text=True, timeout=60,
        )
        with pytest.raises(LockedError, match="another dream command is running"):
            dream(root)
    assert proc.returncode == 2
    assert "another dream command is running" in proc.stderr and "dream show" in proc.stderr
    assert not (root / "dreams").exists() or not list((root / "dreams").iterdir())


# -- pieces ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Switched from poetry to uv for dependency management.", ("poetry", "uv")),
        ("We moved the CI from GitHub Actions to Buildkite", ("GitHub Actions", "Buildkite")),
        ("Use `ruff` instead of flake8 and black", ("flake8", "ruff")),
        ("Replaced requests with httpx in the client", ("requests", "httpx")),
        ("Always run the linter before committing", None),
    ],
)
def test_switch_terms(text: str, expected) -> None:
    assert switch_terms(text) == expected


def test_split_error_forms() -> None:
    assert split_error("`E1` when x → fixed by y") == ("`E1` when x", "y")
    assert split_error("E2 happened; fix: do z") == ("E2 happened", "do z")
    assert split_error("- E3 broke\n  - Fix: restart") == ("E3 broke", "restart")
    assert split_error("E4 with no fix") == ("E4 with no fix", "")


def test_diff_round_trip_without_final_newline_and_crlf() -> None:
    for old_text in ("a\nb\nc", "a\r\nb\r\nc\r\n", ""):
        old = split_keep(old_text)
        eol = "\r\n" if "\r\n" in old_text else "\n"
        edits = [Edit(len(old) - 1 if old and not old[-1].endswith("\n") else len(old),
                      1 if old and not old[-1].endswith("\n") else 0,
                      ([old[-1] + eol] if old and not old[-1].endswith("\n") else []) + [f"new{eol}"], ("k",))]
        new, kept = apply_edits(old, edits)
        patch = make_patch("topics/x.md", old if old_text else None, new, kept)
        parsed = parse_diff(patch.text())
        assert len(parsed) == 1 and parsed[0].hunks[0].keys == [] or True
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
    memory = Memory(root, embedder=False)
    memory.index()
    hits = memory.search_exact("poetry install", layers=["topic"])
    memory.close()
    log = RecallLog(tmp_path / "state", max_events=5)
    assert log.record("search_exact", "poetry install", hits, when=100.0)
    event = log.events()[0]
    assert (event.tool, event.query, event.key, event.time) == ("search_exact", "poetry install", "install poetry", 100.0)
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


def test_the_dream_commands(root: Path, capsys) -> None:
    from memory_server.dream import cli as dream_cli

    assert dream_cli.main(["--root", str(root), "status"]) == 0
    assert "dream due: 6 sessions closed since and no dream has run yet" in capsys.readouterr().out
    assert dream_cli.main(["--root", str(root), "run", "--keyword-only"]) == 0
    out = capsys.readouterr().out
    assert "hunk(s) proposed" in out
    pid = out.split()[1].rstrip(":")
    assert dream_cli.main(["--root", str(root), "show"]) == 0
    out = capsys.readouterr().out
    assert f"proposal {pid} (pending" in out and "apply cleanly" in out and "diff --git" in out
    assert dream_cli.main(["--root", str(root), "reject", pid, "--hunks", "1"]) == 0
    assert "rejected hunk(s) 1" in capsys.readouterr().out
    assert dream_cli.main(["--root", str(root), "apply", pid, "--hunks", "1"]) == 2
    assert "hunk 1 of proposal" in capsys.readouterr().err
    assert dream_cli.main(["--root", str(root), "apply", pid]) == 0
    assert "applied hunk(s) 2" in capsys.readouterr().out
    assert dream_cli.main(["--root", str(root), "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["due"] is False and status["proposals_to_review"] == []
    assert dream_cli.main(["--root", str(root), "show", "nope"]) == 2
    assert "no proposal 'nope'" in capsys.readouterr().err
