"""The apply journal: a `dream apply` killed at any moment is finished by the next dream command.

An apply changes several files (topics/*.md, MEMORY.md), then records what it did in proposal.json and the
dream state. Each rename is atomic, the set is not; the journal makes the set roll forward:

1. every new file is written to a temp file beside its target (`.<name>.<random>.dream.tmp`) and fsynced;
2. `dreams/<id>/apply-journal.json` is written atomically: each rename (target, temp file, sha256 of the
   target's old content or null for a new file, sha256 of the new content), and the proposal.json and dream
   state to write once the renames are done;
3. the temp files are renamed into place; proposal.json and the dream state are written;
4. the journal is deleted.

Killed before step 2, nothing changed: the temp files are litter, removed by the next dream command. From
step 2 on, the next dream command finishes the apply (`recover`): each temp file still there is moved into
place while its target still has the old content, then proposal.json and the state are written and the
journal deleted, with one warning on stderr. Every command that takes `.memory/dream.lock` does this first
(run, apply, reject); `dream status` and `dream show` take the lock for it when they find a journal.

A target that has neither the old nor the new content was edited by someone meanwhile: it is left as it is,
its hunks go back to pending, the rest of the apply is finished, and a DreamError names the file and says
what to do. `reject` writes its proposal.json and state through a journal too (with no renames), so the two
never disagree after a crash.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from memory_server.dream.gate import PROPOSAL_META, DreamGate
from memory_server.dream.records import DreamState, ProposalMeta
from memory_server.dream.writeset import check_target
from memory_server.errors import DreamError, PathRefusedError
from memory_server.files.crashpoints import crash_point
from memory_server.files.reading import sha256_bytes
from memory_server.files.root import MemoryRoot
from memory_server.files.writing import atomic_write, commit_staged, fsync_dir, remove_stale_temps, unlink_quietly

log = logging.getLogger(__name__)

JOURNAL = "apply-journal.json"
# The temp files write_all_or_nothing makes: `.<name>.<8 random characters>.dream.tmp`.
DREAM_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.dream\.tmp$")


def write_meta(folder: Path, meta: ProposalMeta) -> None:
    """Write a proposal's proposal.json atomically (the one place its format is decided)."""
    atomic_write(folder / PROPOSAL_META, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


def pending_journals(root: MemoryRoot) -> list[Path]:
    """The journals of applies that did not finish (normally none)."""
    dreams = root.dreams_dir
    return sorted(dreams.glob(f"*/{JOURNAL}")) if dreams.is_dir() else []


class ApplyJournal:
    """The journal of one apply (or reject) of proposal `proposal_id`: the `hunks` chosen, and the `meta`
    (proposal.json) and dream `state` to write once the files are in place."""

    def __init__(
        self,
        root: MemoryRoot,
        proposal_id: str,
        hunks: list[int],
        meta: ProposalMeta,
        state: DreamState,
        action: str = "apply",
    ) -> None:
        self.root = root
        self.path = root.dreams_dir / proposal_id / JOURNAL
        self.data: dict[str, Any] = {
            "version": 1,
            "proposal": proposal_id,
            "action": action,
            "hunks": hunks,
            "renames": [],
            "meta": meta,
            "state": state,
        }

    def begin(self, renames: list[dict[str, Any]]) -> None:
        """Write the journal: from here on the apply is finished even if this process dies.

        `renames`: {"path": target relative to the root, "temp": the temp file relative to the root,
        "old_sha256": the target's sha256 now (None: it must not exist), "new_sha256": the temp file's}.
        """
        self.data["renames"] = renames
        atomic_write(self.path, json.dumps(self.data, indent=1, ensure_ascii=False) + "\n")

    def commit(self, gate: DreamGate) -> None:
        """After the renames: write proposal.json and the dream state, then delete the journal."""
        crash_point("dream-apply-before-meta")
        write_meta(self.path.parent, self.data["meta"])
        gate.save_state(self.data["state"])
        crash_point("dream-apply-before-journal-removed")
        self.discard()

    def discard(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return
        fsync_dir(self.path.parent)


def recover(gate: DreamGate) -> None:
    """Finish every interrupted apply, then remove the temp files no journal refers to. Hold the dream lock.

    Raises DreamError (after finishing everything it could) when a file could not be completed.
    """
    problems: list[str] = []
    for path in pending_journals(gate.root):
        problems += _finish(gate, path)
    if not pending_journals(gate.root):  # an unreadable journal keeps its temp files for a person to check
        _remove_litter(gate.root)
    if problems:
        raise DreamError(" ".join(problems))


def _finish(gate: DreamGate, path: Path) -> list[str]:
    root = gate.root
    proposal_id = path.parent.name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        renames, meta, state = data["renames"], data["meta"], data["state"]
        action = str(data.get("action") or "apply")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [
            f"{path} (the journal of an interrupted `dream apply {proposal_id}`) cannot be read ({exc}), so that "
            "apply cannot be finished. Check topics/ and MEMORY.md (e.g. `git diff`), then delete the journal."
        ]
    not_done: dict[str, str] = {}
    for entry in renames:
        try:
            outcome = _roll_forward(root, entry)
        except (PathRefusedError, OSError, KeyError, TypeError) as exc:
            outcome = f"it could not be written ({exc!r})"
        if outcome not in ("moved", "done"):
            not_done[str(entry.get("path"))] = outcome
    if not_done:
        _reopen(meta, state, proposal_id, set(data.get("hunks") or []), renames, not_done)
    ApplyJournal(root, proposal_id, [], meta, state).commit(gate)
    done = [e["path"] for e in renames if e["path"] not in not_done]
    log.warning(
        "completed an interrupted `dream %s %s`: %s%s",
        action,
        proposal_id,
        ", ".join(done) if done else "no file changed",
        f" (not changed: {', '.join(not_done)})" if not_done else "",
    )
    return [
        f"The interrupted `dream apply {proposal_id}` could not change {rel}: {why}. It was left as it is and its "
        f"hunks are pending again; the rest of that apply was completed. Run `memory-server dream show "
        f"{proposal_id}` to see whether they still apply, then `memory-server dream apply {proposal_id}` or "
        f"regenerate with `memory-server dream run --redo {proposal_id}`."
        for rel, why in not_done.items()
    ]


def _roll_forward(root: MemoryRoot, entry: dict[str, Any]) -> str:
    """Move one journalled temp file into place: "moved", "done" (it was already), or why not."""
    dest = check_target(root.path, str(entry["path"]))
    name = Path(str(entry["temp"])).name
    temp = dest.parent / name if DREAM_TEMP.match(name) else None
    old, new = entry.get("old_sha256"), entry["new_sha256"]
    current = _sha(dest)
    if current == new:
        unlink_quietly(temp)
        return "done"
    if current != old:
        unlink_quietly(temp)
        return "it was changed by someone after the apply started (neither its old nor its new content)"
    if temp is None or _sha(temp) != new:
        unlink_quietly(temp)
        return "the new content was lost (its temp file is gone or incomplete)"
    commit_staged(temp, dest, exclusive=old is None)  # a link fails rather than replace a file made meanwhile
    return "moved"


def _reopen(
    meta: dict[str, Any],
    state: dict[str, Any],
    proposal_id: str,
    chosen: set[int],
    renames: list[dict[str, Any]],
    not_done: dict[str, str],
) -> None:
    """Put the hunks of files the apply could not change back to pending, in proposal.json and the state."""
    old = {e["path"]: e.get("old_sha256") for e in renames}
    keep: set[str] = set()
    reopened: list[dict[str, Any]] = []
    for hunk in meta.get("hunks", []):
        if hunk["n"] in chosen and hunk["path"] in not_done:
            hunk["status"] = "pending"
            hunk.pop("applied_at", None)
            reopened.append(hunk)
        elif hunk["status"] == "applied":
            keep.update(hunk["fingerprints"])
    for rel in not_done:
        meta.setdefault("current", {})[rel] = old.get(rel)
    for hunk in reopened:
        for fp in hunk["fingerprints"]:
            record = state.get("applied", {}).get(fp)
            if fp not in keep and record and record.get("proposal") == proposal_id:
                del state["applied"][fp]
    if reopened:
        meta["status"] = "pending"
        _unreview(meta, state, proposal_id)


def _unreview(meta: dict[str, Any], state: dict[str, Any], proposal_id: str) -> None:
    """A `dream run` proposal with hunks pending again is not reviewed after all: its sessions are unread again."""
    if meta.pop("reviewed_at", None) is None:
        return
    processed = state.get("processed", {})
    for rel in meta.get("sessions", []):
        if (processed.get(rel) or {}).get("dream") == proposal_id:
            del processed[rel]


def _remove_litter(root: MemoryRoot) -> None:
    """Remove the dream temp files of applies killed before their journal was written (no journal names them)."""
    folders = [root.path]
    if root.topics_dir.is_dir() and not root.topics_dir.is_symlink():
        folders += [Path(d) for d, _dirs, _files in os.walk(root.topics_dir)]
    for folder in folders:
        remove_stale_temps(folder, older_than=0.0, pattern=DREAM_TEMP)  # no apply runs: we hold the lock
        remove_stale_temps(folder)  # and, once a few minutes old, those of a killed atomic_write


def _sha(path: Path | None) -> str | None:
    try:
        return sha256_bytes(path.read_bytes()) if path is not None else None
    except (FileNotFoundError, IsADirectoryError):
        return None
