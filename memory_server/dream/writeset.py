"""The journalled multi-file write of `dream apply`: every changed topic (and MEMORY.md) lands, or none does.

Every file goes to a temporary file beside it first and only then is renamed into place (if anything fails
before the renames, nothing changed). The renames are recorded in the apply journal first (`journal.py`),
so even a process killed among them leaves a set that the next dream command completes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from memory_server.errors import PathRefusedError, StaleProposalError
from memory_server.files.crashpoints import crash_point
from memory_server.files.reading import sha256_bytes
from memory_server.files.root import MEMORY_INDEX, TOPICS_DIR
from memory_server.files.writing import commit_staged, stage, swap_into_place, unlink_quietly


class Journal(Protocol):
    """What the write needs of an apply journal (journal.ApplyJournal)."""

    def begin(self, renames: list[dict[str, Any]]) -> None: ...

    def discard(self) -> None: ...


def check_target(root: Path, rel: str) -> Path:
    """A proposal may only change MEMORY.md and topics/**/*.md, inside the root, and never through a symlink."""
    parts = rel.split("/")
    allowed = rel == MEMORY_INDEX or (parts[0] == TOPICS_DIR and rel.endswith(".md") and len(parts) > 1)
    if not allowed or ".." in parts or any(p.startswith(".") or not p for p in parts) or "\\" in rel:
        raise PathRefusedError(f"a proposal may change only MEMORY.md and topics/*.md, not {rel!r}")
    dest = root / rel
    probe = dest
    while probe != root:
        if probe.is_symlink():
            raise PathRefusedError(f"{rel!r} goes through a symbolic link; refusing to write it")
        probe = probe.parent
    return dest


def _put(rel: str, temp: Path, dest: Path, before: bytes | None, regenerate: str) -> None:
    """Move one staged file into place; a person's save that landed since the check is kept, not replaced."""
    if before is None:
        commit_staged(temp, dest, exclusive=True)  # a link fails rather than replace a file made meanwhile
        return
    saved = swap_into_place(temp, dest, before)
    if saved is not None:
        raise StaleProposalError(
            f"{rel} was saved by someone while the proposal was being applied; their version was kept and "
            f"nothing of this apply remains. {regenerate}"
        )


def _put_back(dest: Path, old: bytes | None, new: bytes) -> None:
    """Undo one rename of a failed apply: the old content back, unless a person saved the file since it went
    in place (their save is kept: never lost to an undo)."""
    if old is None:
        try:
            if dest.read_bytes() == new:
                os.unlink(dest)
        except FileNotFoundError:
            pass  # gone already: nothing to undo
        return
    staged = stage(dest, old, suffix=".dream.tmp")
    try:
        swap_into_place(staged, dest, new)
    finally:
        unlink_quietly(staged)


def write_all_or_nothing(
    root: Path, changes: dict[str, tuple[bytes, str | None]], regenerate: str, journal: Journal | None = None
) -> None:
    """Write each `rel: (new bytes, sha256 the file must have now, or None: must not exist)`, atomically as a set.

    Every file goes to a temporary file beside it first; only when all are written (and every target is
    still what the proposal expects) are they renamed into place. A failure before the renames changes
    nothing; a failure during them puts back the files already replaced. With a `journal`, the renames are
    recorded in it before the first one, so a process killed among them is finished by the next dream
    command (see journal.py); it is discarded when an error puts everything back.
    """
    dests = {rel: check_target(root, rel) for rel in changes}

    def verify() -> dict[str, bytes | None]:
        before: dict[str, bytes | None] = {}
        for rel, (_data, expected) in changes.items():
            current = dests[rel].read_bytes() if dests[rel].exists() else None
            actual = sha256_bytes(current) if current is not None else None
            if actual != expected:
                what = "now exists" if expected is None else "no longer exists" if actual is None else "changed"
                raise StaleProposalError(f"{rel} {what} since the proposal was made; nothing was applied. {regenerate}")
            before[rel] = current
        return before

    verify()
    temps: dict[str, Path] = {}
    try:
        for rel, (data, _expected) in sorted(changes.items()):
            temps[rel] = stage(dests[rel], data, suffix=".dream.tmp")  # keeps the target's mode
        before = verify()
        crash_point("dream-apply-before-journal")
        if journal is not None:
            journal.begin(
                [
                    {
                        "path": rel,
                        "temp": temps[rel].relative_to(root).as_posix(),
                        "old_sha256": expected,
                        "new_sha256": sha256_bytes(data),
                    }
                    for rel, (data, expected) in sorted(changes.items())
                ]
            )
            crash_point("dream-apply-after-journal")
    except BaseException:
        for tmp in temps.values():
            unlink_quietly(tmp)
        raise
    done: list[str] = []
    try:
        for rel in sorted(changes):
            _put(rel, temps[rel], dests[rel], before[rel], regenerate)
            done.append(rel)
            if len(done) == 1:
                crash_point("dream-apply-after-first-rename")
    except BaseException:
        restored = True
        for rel in reversed(done):  # put back what was already replaced, each atomically
            try:
                _put_back(dests[rel], before[rel], changes[rel][0])
            except OSError:
                restored = False
        for tmp in temps.values():
            unlink_quietly(tmp)
        if journal is not None and restored:
            journal.discard()  # else the next dream command reconciles proposal.json with the files
        raise
