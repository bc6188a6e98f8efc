"""What a person's yes or no answered, who said a change was made, and whether a later sentence takes a
statement back: `dream propose` reads them from the record (tests/session_script.py transcripts of a small
project kept in git), not from the item's words.

- a "no" to the agent's proposal of a change keeps what is (it supports "X stays"), and never keeps what the
  proposal would bring in;
- a message that opens by quoting the agent's words ("> moving them to Git LFS") answers those words: the
  quoted part is what it answers, not the person's statement;
- a "yes" to "Want me to remove it?" adopts the removal of what the agent spoke of, and "yes to the first, no
  to the second" picks numbered options one by one; "X is overkill" turns X down; "leave X out" leaves X out;
- an undo that names another thing ("revert the staging log level bump") does not take back what the agent
  spoke of just before, and a part of a path ("golden" of `tests/golden/sizes.json`) inside another word is not
  the subject; "restore the 3-attempt retry" takes back "retried up to 5 times";
- the agent's word for a change it made holds only when a tool call of the session shows the change."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from session_script import Script, project_root

from memory_server.dream.propose import ProposeResult, propose
from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import compress_all

NOW = 1_767_225_600.0 + 30 * 86400  # 2026-01-31
DAY = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)

OPERATIONS = """\
---
title: Operations
description: How shutterbox is configured, tested and run
updated: 2026-01-01
---
# Operations

## Settings

- Uploads are limited by `MAX_UPLOAD_MB` in `src/app/config.py`.

## CI

- CI runs `make test` on every push.
"""

PROJECT = {
    "src/app/config.py": "# Largest upload, in MB.\nMAX_UPLOAD_MB = 50\n",
    "src/app/cli.py": "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--verbose')\n",
    "scripts/regen_golden.py": "import json\n\njson.dump({}, open('tests/golden/sizes.json', 'w'))\n",
    "tests/golden/sizes.json": "{}\n",
    ".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - run: make lint test\n",
    "tests/fixtures/a.jpg": "jpeg\n",
}
L: dict[str, int] = {}


def story_answers() -> Script:
    """Day 1: a "no" that keeps a limit, a quoted proposal answered "no", a "yes" to a removal."""
    s = Script("aaaaaaaa-1111-4111-8111-111111111111", DAY)
    s.user("what does the upload limit ticket ask for?")
    L["offer_lower"] = s.assistant("The ticket asks for 20 MB; `MAX_UPLOAD_MB` is 50 today. Want me to lower it?")
    L["no_lower"] = s.user("no, 50 is right, the photographers upload big JPEGs")
    L["offer_zstd"] = s.assistant("zstd is faster on the archive. Should I switch the nightly archive to zstd?")
    L["no_zstd"] = s.user("no, the restore scripts only read gzip")
    s.user("anything else in the repo worth cleaning up?")
    L["offer_lfs"] = s.assistant("The test fixtures are 38 MB of JPEGs. I'd suggest moving them to Git LFS.")
    L["no_lfs"] = s.user("> moving them to Git LFS\nno, they're small enough, leave them in the repo")
    s.user("`ARCHIVE_LEVEL` is still in config.py, is it used?")
    L["offer_remove"] = s.assistant("`ARCHIVE_LEVEL` is unused: nothing reads it. Want me to remove it?")
    L["yes_remove"] = s.user("yes")
    s.edit("src/app/config.py", "# gzip level.\nARCHIVE_LEVEL = 6\n", "")
    L["removed"] = s.assistant("Removed `ARCHIVE_LEVEL` from `src/app/config.py`.")
    L["claimed"] = s.assistant("Also removed the `--legacy` flag from `src/app/cli.py`.")
    return s


def story_later() -> Script:
    """Day 2: CI runs lint; a golden-size script; then an undo of another thing, and a rule about a check."""
    s = Script("bbbbbbbb-2222-4222-8222-222222222222", DAY + dt.timedelta(days=1))
    L["ci_lint"] = s.user("CI should run make lint on every push")
    s.edit(".github/workflows/ci.yml", "      - run: make test", "      - run: make lint test")
    L["ci_done"] = s.assistant("CI runs `make lint test` on every push now.")
    L["undo_other"] = s.user("revert the staging log level bump, but log/slog stays as is")
    L["regen"], L["regen_out"] = s.bash("python scripts/regen_golden.py", "wrote tests/golden/sizes.json (3 widths)")
    L["never_skip"] = s.user("never skip the golden-image check in CI, it caught the quality bug")
    L["options"] = s.assistant(
        "Two things left on the encoder list: (1) drop the PNG fallback for old browsers, (2) add AVIF output. "
        "Want both?"
    )
    L["first_not_second"] = s.user("yes to the first, no to the second")
    L["offer_codec"] = s.assistant("zstd is faster and smaller. I can switch the nightly archive to zstd.")
    L["overkill"] = s.user("the restore scripts only read gzip, so the archive stays on gzip. zstd is overkill anyway.")
    L["leave_out"] = s.user("leave the purge retries out, one attempt is enough; the next deploy purges again anyway")
    s.write("src/app/deploy.py", "def purge_cdn() -> None:\n    post(PURGE_URL)  # once\n")
    L["purge_done"] = s.assistant("`app deploy` purges the CDN once after the upload; no retries.")
    return s


def story_undo() -> Script:
    """Day 3: a switch the person undoes with a bare "revert it" right after the agent spoke of it."""
    s = Script("cccccccc-3333-4333-8333-333333333333", DAY + dt.timedelta(days=2))
    L["verbose"] = s.user("make the cli print debug output by default")
    s.edit("src/app/cli.py", "parser.add_argument('--verbose')", "parser.add_argument('--verbose', default=True)")
    L["verbose_done"] = s.assistant("The cli prints debug output by default now.")
    L["revert_it"] = s.user("revert it, too noisy")
    L["retry_five"] = s.user("retry failed sends 5 times with exponential backoff")
    s.edit("src/app/cli.py", "MAX_ATTEMPTS = 1", "MAX_ATTEMPTS = 5")
    s.assistant("Failed sends are retried up to 5 times.")
    s.user("now look at the flaky test")
    s.assistant("The flaky test waits on a real clock; I'll give it a fake one.")
    L["restore_three"] = s.user("restore the 3-attempt retry, 5 attempts hammer the provider during outages")
    return s


STORIES = {"answers": story_answers, "later": story_later, "undo": story_undo}
IDS = {name: f() for name, f in STORIES.items()}


def ref(story: str, name: str) -> str:
    return f"transcript:{IDS[story].session_id}:{L[name]}"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("answers")
    root = project_root(base, IDS.values(), {"topics/operations.md": OPERATIONS, **PROJECT})
    with pytest.MonkeyPatch.context() as mp:
        transcripts = base / "transcripts"
        mp.setenv("MEMORY_TRANSCRIPTS_DIR", str(transcripts))
        assert len(compress_all(transcripts, MemoryRoot(root))) == len(IDS)
        yield root


@pytest.fixture
def root(prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(prepared, copy, symlinks=True)
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(prepared.parent / "transcripts"))
    return copy


def item(statement: str, *quotes: tuple[str, str], kind: str = "decision", **extra: Any) -> dict[str, Any]:
    out = {
        "kind": kind,
        "statement": statement,
        "stance": "adopted",
        "target": {"topic": "topics/operations.md", "section": "Settings"},
        "evidence": [{"ref": r, "quote": q} for r, q in quotes],
    }
    return {**out, **extra}


def submit(root: Path, one: dict[str, Any]) -> ProposeResult:
    """The item alone on a fresh copy of the root (a proposal marks the sessions it read)."""
    fresh = root.parent / f"copy-{len(list(root.parent.glob('copy-*')))}"
    shutil.copytree(root, fresh, symlinks=True)
    path = root.parent / "items.json"
    path.write_text(json.dumps({"items": [one]}), encoding="utf-8")
    return propose(fresh, path, clock=lambda: NOW)


def accepted(root: Path, one: dict[str, Any]) -> None:
    result = submit(root, one)
    assert result.id is not None and not result.refusals, (result.refusals, result.message)


def refused(root: Path, one: dict[str, Any], reason: str) -> None:
    result = submit(root, one)
    assert result.id is None and len(result.refusals) == 1, (result.refusals, result.message)
    assert reason in result.refusals[0], result.refusals[0]


def test_a_no_to_a_proposed_change_supports_keeping_what_is(root: Path) -> None:
    kept = item(
        "`MAX_UPLOAD_MB` stays at 50: uploads over 50 MB are rejected.",
        (ref("answers", "offer_lower"), "`MAX_UPLOAD_MB` is 50 today. Want me to lower it?"),
        (ref("answers", "no_lower"), "no, 50 is right"),
    )
    accepted(root, kept)


def test_a_no_never_keeps_what_the_proposal_would_bring_in(root: Path) -> None:
    wrong = item(
        "The nightly archive stays on zstd.",
        (ref("answers", "offer_zstd"), "Should I switch the nightly archive to zstd?"),
        (ref("answers", "no_zstd"), "no, the restore scripts only read gzip"),
    )
    result = submit(root, wrong)
    assert result.id is None and result.refusals, result.message


def test_a_quoted_proposal_is_what_the_answer_below_it_answers(root: Path) -> None:
    kept = item(
        "Keep the test fixtures in the repository, not in Git LFS.",
        (ref("answers", "offer_lfs"), "I'd suggest moving them to Git LFS"),
        (ref("answers", "no_lfs"), "no, they're small enough, leave them in the repo"),
    )
    accepted(root, kept)
    wrong = item("Test fixtures are stored in Git LFS.", (ref("answers", "no_lfs"), "moving them to Git LFS"))
    refused(root, wrong, "is what the person was answering")


def test_a_yes_to_remove_it_adopts_the_removal(root: Path) -> None:
    removed = item(
        "The unused `ARCHIVE_LEVEL` setting was removed from `src/app/config.py`.",
        (ref("answers", "offer_remove"), "`ARCHIVE_LEVEL` is unused"),
        (ref("answers", "yes_remove"), "yes"),
    )
    accepted(root, removed)
    wrong = item(
        "Keep the `ARCHIVE_LEVEL` setting.",
        (ref("answers", "offer_remove"), "`ARCHIVE_LEVEL` is unused"),
        (ref("answers", "yes_remove"), "yes"),
    )
    refused(root, wrong, "opposite")


def test_an_undo_that_names_another_thing_takes_nothing_else_back(root: Path) -> None:
    ci = item(
        "CI runs `make lint test` on every push.",
        (ref("later", "ci_lint"), "CI should run make lint on every push"),
        (ref("later", "ci_done"), "CI runs `make lint test` on every push now."),
        target={"topic": "topics/operations.md", "section": "CI"},
    )
    accepted(root, ci)


def test_a_bare_undo_right_after_the_agent_spoke_of_it_still_takes_it_back(root: Path) -> None:
    wrong = item(
        "The cli prints debug output by default.",
        (ref("undo", "verbose"), "make the cli print debug output by default"),
    )
    refused(root, wrong, "takes it back later")


def test_a_part_of_a_path_inside_another_word_is_not_the_subject(root: Path) -> None:
    fact = item(
        "`scripts/regen_golden.py` rewrites `tests/golden/sizes.json`.",
        (ref("later", "regen"), "python scripts/regen_golden.py"),
        (ref("later", "regen_out"), "wrote tests/golden/sizes.json"),
        kind="fact",
        target={"topic": "topics/operations.md", "section": "CI"},
    )
    accepted(root, fact)


def test_the_agents_word_for_a_change_holds_only_when_a_tool_call_shows_it(root: Path) -> None:
    shown = item(
        "`ARCHIVE_LEVEL` was removed from `src/app/config.py`.",
        (ref("answers", "removed"), "Removed `ARCHIVE_LEVEL` from `src/app/config.py`."),
        kind="fact",
    )
    accepted(root, shown)
    unshown = item(
        "The `--legacy` flag was removed from `src/app/cli.py`.",
        (ref("answers", "claimed"), "Also removed the `--legacy` flag from `src/app/cli.py`."),
        kind="fact",
    )
    refused(root, unshown, "no edit, write or command of that session shows it")


def test_restoring_another_value_takes_the_statement_back(root: Path) -> None:
    wrong = item(
        "Failed sends are retried up to 5 times with exponential backoff.",
        (ref("undo", "retry_five"), "retry failed sends 5 times with exponential backoff"),
    )
    refused(root, wrong, ref("undo", "restore_three"))


def test_an_answer_to_numbered_options_picks_them_one_by_one(root: Path) -> None:
    options = (ref("later", "options"), "(1) drop the PNG fallback for old browsers, (2) add AVIF output")
    answer = (ref("later", "first_not_second"), "yes to the first, no to the second")
    accepted(root, item("The PNG fallback for old browsers was dropped.", options, answer))
    accepted(root, item("Do not add AVIF output to the encoder.", options, answer, stance="rejected"))
    refused(root, item("Thumbnails are also encoded as AVIF output.", options, answer), "opposite")


def test_overkill_turns_a_proposal_down(root: Path) -> None:
    offer = (ref("later", "offer_codec"), "I can switch the nightly archive to zstd")
    overkill = (ref("later", "overkill"), "zstd is overkill anyway")
    kept = (ref("later", "overkill"), "the archive stays on gzip")
    accepted(root, item("Do not switch the nightly archive to zstd.", offer, kept, overkill, stance="rejected"))
    refused(root, item("Compress the nightly archive with zstd.", offer, overkill), "declines it")


def test_leave_x_out_leaves_it_out(root: Path) -> None:
    fact = item(
        "`app deploy` purges the CDN once after the upload, without retries.",
        (ref("later", "leave_out"), "leave the purge retries out, one attempt is enough"),
        (ref("later", "purge_done"), "`app deploy` purges the CDN once after the upload; no retries."),
        kind="fact",
    )
    accepted(root, fact)
