"""Proposals on disk (`dreams/<id>/proposal.json`): find, read, list, and the dream lock around changing them."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import cast

from memory_server.dream.gate import PROPOSAL_META, DreamGate
from memory_server.dream.journal import recover
from memory_server.dream.records import ProposalMeta, ProposalSummary
from memory_server.errors import DreamError, NotFoundError
from memory_server.files.locks import FileLock
from memory_server.files.root import MemoryRoot


@contextlib.contextmanager
def dream_lock(gate: DreamGate, wait: float, what: str) -> Iterator[None]:
    """Hold `.memory/dream.lock` (waiting up to `wait` s, else LockedError naming `what` to retry).

    Once it is held, an apply a killed process left half done is finished first (journal.recover).
    """
    busy = (
        f"another dream command is running on {gate.root.path} (it holds {{path}}); waited {wait:g}s. "
        f"Let it finish, then see its proposal with `memory-server dream show`, and {what} again if needed"
    )
    with FileLock(gate.lock_path, busy).held(max(0.0, wait)):
        recover(gate)
        yield


def new_stamp(root: MemoryRoot, now: float) -> str:
    base = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    stamp, n = base, 1
    while (root.dreams_dir / stamp).exists():
        n += 1
        stamp = f"{base}-{n}"
    return stamp


def read_meta(root: MemoryRoot, proposal_id: str) -> ProposalMeta:
    if not proposal_id or "/" in proposal_id or proposal_id.startswith("."):
        raise NotFoundError(f"{proposal_id!r} is not a proposal id; list them with `memory-server dream show`")
    path = root.dreams_dir / proposal_id / PROPOSAL_META
    try:
        return cast(ProposalMeta, json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise NotFoundError(
            f"no proposal {proposal_id!r} under {root.dreams_dir}; list them with `memory-server dream show`"
        ) from None
    except ValueError as exc:
        raise DreamError(
            f"{path} is not valid JSON ({exc}); regenerate with `memory-server dream run --redo {proposal_id}`"
        ) from exc


def list_proposals(root: str | os.PathLike[str] | MemoryRoot) -> list[ProposalSummary]:
    mroot = root if isinstance(root, MemoryRoot) else MemoryRoot(root)
    out: list[ProposalSummary] = []
    if mroot.dreams_dir.is_dir():
        for folder in sorted(mroot.dreams_dir.iterdir()):
            if (folder / PROPOSAL_META).is_file():
                with contextlib.suppress(DreamError, NotFoundError, KeyError, TypeError):
                    meta = read_meta(mroot, folder.name)
                    pending = [h["n"] for h in meta["hunks"] if h["status"] in ("pending", "withheld")]
                    out.append(
                        {
                            "id": meta["id"],
                            "created": meta["created"],
                            "status": meta["status"],
                            "hunks": len(meta["hunks"]),
                            "pending_hunks": pending,
                        }
                    )
    return out


def newest_id(root: MemoryRoot, waiting_only: bool = True) -> str:
    """The newest proposal with hunks to review (else, unless `waiting_only`, the newest of all)."""
    proposals = list_proposals(root)
    waiting = [p for p in proposals if p["pending_hunks"] and p["status"] == "pending"]
    chosen = waiting or ([] if waiting_only else proposals)
    if not chosen:
        raise NotFoundError("no dream proposal has hunks to review: run the /dream skill or `memory-server dream run`")
    return str(chosen[-1]["id"])
