"""The /dream red-team set (tests/dream_redteam/), run through the program's checks alone.

Each entry of `items.jsonl` is one item an agent could submit, labelled "wrong" (false, misattributed, the
opposite of what was decided, ...) or "true", with the scenario whose sessions it cites: "entire" (the 16
real sessions of ../shared/transcripts/entire/ around their project's tree) or a hand-written scenario under
`scenarios/<name>/` (`transcripts/*.jsonl`, `topics/*.md`, `tree/`). Every item is checked alone against a
fresh dream state (nothing rejected before) of its scenario's root, where every session is unread; an entry
with `prior_rejection` first has that item proposed and rejected by a person on a copy of the root.

    roots = ScenarioRoots(base)                 # builds each scenario's root once
    outcome = check_entry(roots, entry)         # Outcome(accepted, reason)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_server.dream.gate import DreamGate
from memory_server.dream.items import parse_item
from memory_server.dream.propose import Batch, ProposeResult, open_batch, propose
from memory_server.dream.review import reject_proposal
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_all
from memory_server.settings import load_settings

SET = Path(__file__).resolve().parent / "dream_redteam"
NOW = 1_790_000_000.0


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


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@contextmanager
def transcripts_env(folder: Path) -> Iterator[None]:
    old = os.environ.get("MEMORY_TRANSCRIPTS_DIR")
    os.environ["MEMORY_TRANSCRIPTS_DIR"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MEMORY_TRANSCRIPTS_DIR", None)
        else:
            os.environ["MEMORY_TRANSCRIPTS_DIR"] = old


@dataclass
class Scenario:
    root: Path
    transcripts: Path
    batch: Batch | None = None


def _unpack(tarball: Path, project: Path) -> None:
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]  # the archive's top folder
            if not parts or ".." in parts or not (member.isfile() or member.isdir()):
                continue
            dest = project.joinpath(*parts)
            if member.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is not None:
                dest.write_bytes(source.read())


def build_scenario(name: str, base: Path, entire: Path | None) -> Scenario:
    """The scenario's project (a git tree) that is also its memory root, its sessions compressed."""
    project = base / name / "project"
    project.mkdir(parents=True)
    if name == "entire":
        assert entire is not None
        _unpack(entire / "project-tree.tar.gz", project)
        topics = topics_from_claude_md((entire / "project-CLAUDE.md").read_text(encoding="utf-8"))
        transcripts = entire
    else:
        folder = SET / "scenarios" / name
        if (folder / "tree").is_dir():
            shutil.copytree(folder / "tree", project, dirs_exist_ok=True)
        topics = {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / "topics").glob("*.md"))}
        transcripts = base / name / "transcripts"
        shutil.copytree(folder / "transcripts", transcripts)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "tree", "--allow-empty")
    init_root(project)
    for slug, text in topics.items():
        (project / "topics" / f"{slug}.md").write_text(text, encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "memory")
    with transcripts_env(transcripts):
        compress_all(transcripts, MemoryRoot(project))
    return Scenario(project, transcripts)


def batch_of(s: Scenario) -> Batch:
    if s.batch is None:
        root = MemoryRoot(s.root)
        settings = load_settings(root.path)
        with transcripts_env(s.transcripts):
            s.batch = open_batch(root, settings, DreamGate(root, settings))
    return s.batch


@dataclass
class Outcome:
    accepted: bool
    reason: str


def check_entry(scenarios: dict[str, Scenario], entry: dict[str, Any], work: Path) -> Outcome:
    """The program's verdict on one entry's item, alone, on a fresh state of its scenario."""
    scenario = scenarios[entry["scenario"]]
    if entry.get("prior_rejection"):
        return _after_rejection(scenario, entry, work)
    try:
        item = parse_item(1, entry["item"])
    except ValueError as exc:
        return Outcome(False, str(exc))
    with transcripts_env(scenario.transcripts):
        batch = batch_of(scenario)
        batch.state["rejected"] = {}
        passed, refused = batch.verify([item])
    return Outcome(bool(passed), refused[0] if refused else "")


def reject_first(root: Path, prior: dict[str, Any], items: Path) -> ProposeResult:
    """A person rejected `prior` before: it is proposed and rejected, and the sessions it read are marked unread
    again, so a later item is checked against the same ones. Returns the prior's proposal."""
    items.write_text(json.dumps({"items": [prior]}), encoding="utf-8")
    first = propose(root, items, clock=lambda: NOW)
    if first.id is None or not first.changes:
        return first
    reject_proposal(root, first.id, clock=lambda: NOW)
    state_path = root / ".memory" / "dream-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state["processed"] = {}
    state_path.write_text(json.dumps(state), encoding="utf-8")
    return first


def _after_rejection(scenario: Scenario, entry: dict[str, Any], work: Path) -> Outcome:
    root = work / f"{entry['id']}-root"
    shutil.copytree(scenario.root, root, symlinks=True)
    items = work / f"{entry['id']}-items.json"
    with transcripts_env(scenario.transcripts):
        first = reject_first(root, entry["prior_rejection"], items)
        if first.id is None or not first.changes:
            return Outcome(False, f"the prior item was not proposed: {first.refusals or first.message}")
        items.write_text(json.dumps({"items": [entry["item"]]}), encoding="utf-8")
        second = propose(root, items, clock=lambda: NOW + 60)
    return Outcome(second.id is not None and not second.refusals, (second.refusals or [""])[0])


def load_entries(path: Path = SET / "items.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Tally:
    wrong: int = 0
    wrong_accepted: int = 0
    true: int = 0
    true_refused: int = 0

    def add(self, entry: dict[str, Any], outcome: Outcome) -> None:
        if entry["label"] == "wrong":
            self.wrong += 1
            self.wrong_accepted += outcome.accepted
        else:
            self.true += 1
            self.true_refused += not outcome.accepted

    def rates(self) -> tuple[float, float]:
        return self.wrong_accepted / max(1, self.wrong), self.true_refused / max(1, self.true)
