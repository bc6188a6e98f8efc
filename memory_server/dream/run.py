"""/dream: one consolidation pass over the sessions no dream has processed yet, and its review.

    run_dream(root)                       -> DreamResult   (memory-server dream run [--redo ID])
    dream_status(root)                    -> dict          (memory-server dream status)
    show_proposal(root, id=None)          -> dict          (memory-server dream show [ID])
    apply_proposal(root, id, hunks=None)  -> dict          (memory-server dream apply ID [--hunks N,M])
    reject_proposal(root, id, hunks=None) -> dict          (memory-server dream reject ID [--hunks N,M])

A run reads sessions, topics and the recall log and writes only `dreams/<id>/` (proposal.diff,
REPORT.md, proposal.json) and its state under `.memory/`: never a topic, a session or MEMORY.md. Only
`apply` (a person's command) writes topics and MEMORY.md, all or nothing, and only while every target is
still what the proposal was made against. Runs, applies and rejects hold `.memory/dream.lock`: a second
one waits `dream.lock_wait_seconds`, then stops with LockedError. An apply is journalled: one killed half way
is finished by the next dream command (dream_journal.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_server.dream.candidates import Candidate, gather_lessons, gather_stale, gather_statements
from memory_server.dream.edits import build_changes
from memory_server.dream.gate import PROPOSAL_META, DreamGate, format_time
from memory_server.dream.journal import recover, write_meta
from memory_server.dream.patch import FilePatch, Hunk, apply_edits, make_patch
from memory_server.dream.recall import RecallLog
from memory_server.dream.report import render_report
from memory_server.dream.scoring import knowledge_gaps, passes, score
from memory_server.dream.sessions import read_sessions, similarity
from memory_server.dream.topics import TopicFile, TopicFinder, load_topic
from memory_server.errors import DreamError, LockedError, MemoryServerError, NotFoundError
from memory_server.files.store import MEMORY_INDEX, MemoryRoot, atomic_write
from memory_server.settings import load_settings

log = logging.getLogger(__name__)
KIND_ORDER = {"drift": 0, "decision": 1, "lesson": 2, "stale": 3}


@dataclass
class DreamResult:
    id: str | None
    folder: Path | None
    sessions: list[str] = field(default_factory=list)
    hunks: int = 0
    files: list[str] = field(default_factory=list)
    message: str = ""


@contextlib.contextmanager
def dream_lock(gate: DreamGate, wait: float, what: str) -> Iterator[None]:
    """Hold `.memory/dream.lock` (waiting up to `wait` s, else LockedError naming `what` to retry).

    Once it is held, an apply a killed process left half done is finished first (dream_journal.recover).
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(gate.lock_path))
    try:
        lock.acquire(timeout=max(0.0, wait))
    except Timeout as exc:
        raise LockedError(
            f"another dream command is running on {gate.root.path} (it holds {gate.lock_path}); waited {wait:g}s. "
            f"Let it finish, then see its proposal with `memory-server dream show`, and {what} again if needed"
        ) from exc
    try:
        recover(gate)  # first finish an apply a killed process left half done
        yield
    finally:
        lock.release()


def _stamp(root: MemoryRoot, now: float) -> str:
    base = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    stamp, n = base, 1
    while (root.dreams_dir / stamp).exists():
        n += 1
        stamp = f"{base}-{n}"
    return stamp


def _load_topics(root: MemoryRoot) -> tuple[dict[str, TopicFile], TopicFile | None]:
    topics: dict[str, TopicFile] = {}
    memory_md = None
    for rel, layer in root.memory_files():
        if layer != "topic":
            continue
        path = root.path / rel
        if path.is_symlink():
            continue
        topic = load_topic(rel, path.read_bytes(), path.stat().st_mtime)
        if topic is None:
            continue
        if rel == MEMORY_INDEX:
            memory_md = topic
        else:
            topics[rel] = topic
    return topics, memory_md


def _refresh_index(memory: Any, notes: list[str], semantic: bool) -> bool:
    """Bring the indices up to date; True when semantic search can be used for matching topics."""
    semantic = semantic and memory.vectors is not None and memory.embedder is not None
    try:
        memory.index(vectors=semantic, timeout=60.0)
    except LockedError as exc:
        notes.append(f"the index was busy ({exc}); matched topics against the index as it was")
    except MemoryServerError as exc:
        notes.append(f"semantic index unavailable ({exc}); matched topics by keywords only")
        semantic = False
        with contextlib.suppress(MemoryServerError):
            memory.index(vectors=False, timeout=60.0)
    return semantic and bool(getattr(memory, "_vectors_usable", lambda: False)())


def _rejected(cand: Candidate, state: dict[str, Any], threshold: float) -> bool:
    if cand.fingerprint in state["rejected"] or cand.fingerprint in state["applied"]:
        return True
    if cand.kind == "lesson":
        sig = frozenset(cand.payload["signature"])
        return any(similarity(sig, frozenset(r.get("signature") or ())) >= threshold for r in state["rejected"].values())
    return False


@dataclass
class _Plan:
    """What one pass found: the patches and everything the report needs."""

    patches: list[FilePatch]
    proposed: dict[str, Candidate]  # fingerprint -> candidate, for candidates that made it into a hunk
    stale: list[Candidate]
    below: list[Candidate]
    gaps: list[dict[str, Any]]
    notes: list[str]
    bases: dict[str, str | None]  # target -> the text the proposal was made against (None: a new file)
    shas: dict[str, str | None]

    @property
    def hunks(self) -> list[Hunk]:
        return [h for p in self.patches for h in p.hunks]


def _plan(memory: Any, mroot: MemoryRoot, gate: DreamGate, state: dict[str, Any], new_paths: list[str],
          semantic: bool, now: float) -> _Plan:
    settings = memory.settings
    ds = settings.dream
    notes: list[str] = []
    use_semantic = _refresh_index(memory, notes, semantic)
    topics, memory_md = _load_topics(mroot)
    digests = read_sessions(mroot, gate.session_files(), settings.index.max_file_bytes)
    new_set = set(new_paths)
    finder = TopicFinder(memory, topics, ds, use_semantic)
    cands = gather_statements([d for d in digests if d.path in new_set], finder, ds, notes)
    cands += gather_lessons(digests, new_set, topics, ds) + gather_stale(digests, new_set, topics, ds, now)
    notes += finder.notes
    skipped = [c for c in cands if _rejected(c, state, ds.error_similarity)]
    if skipped:
        notes.append(f"{len(skipped)} candidate(s) left out: rejected or applied before")
    cands = [c for c in cands if c not in skipped]
    log = RecallLog(mroot.state_dir, max_events=ds.recall_max_events)
    try:
        events = log.events()
    finally:
        log.close()
    for cand in cands:
        score(cand, events, ds, now)
    order = sorted(cands, key=lambda c: (KIND_ORDER[c.kind], c.target, c.fingerprint))
    proposed = [c for c in order if c.kind != "stale" and passes(c, ds)]
    today = dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
    changes = build_changes(proposed, topics, memory_md, today, ds.decisions_topic)
    patches = []
    for path in sorted(changes):
        fc = changes[path]
        new_lines, kept = (fc.new_text, fc.edits) if fc.old is None else apply_edits(fc.old, fc.edits)
        patch = make_patch(path, fc.old, new_lines, kept)
        if patch.hunks:
            patches.append(patch)
    for n, hunk in enumerate((h for p in patches for h in p.hunks), 1):
        hunk.n = n
    in_diff = {k for p in patches for h in p.hunks for k in h.keys}
    notes += [f"no change needed for: {c.summary}" for c in proposed if c.fingerprint not in in_diff]
    known = {**topics, **({MEMORY_INDEX: memory_md} if memory_md else {})}
    return _Plan(
        patches,
        {c.fingerprint: c for c in proposed if c.fingerprint in in_diff},
        [c for c in order if c.kind == "stale" and passes(c, ds)],
        [c for c in order if not passes(c, ds)],
        knowledge_gaps(events, ds, state.get("last_dream")),
        notes,
        {p.path: None if p.new_file else known[p.path].text for p in patches},
        {p.path: None if p.new_file else known[p.path].sha256 for p in patches},
    )


def _write_proposal(mroot: MemoryRoot, dream_id: str, now: float, new_paths: list[str], redo: str | None,
                    plan: _Plan, ds: Any) -> Path:
    folder = mroot.dreams_dir / dream_id
    hunks = plan.hunks
    if hunks:
        atomic_write(folder / "proposal.diff", "".join(p.text() for p in plan.patches))
    report = render_report(dream_id, now, new_paths, hunks, plan.proposed, plan.stale, plan.below, plan.gaps,
                           plan.notes, ds)
    atomic_write(folder / "REPORT.md", report)
    by_fp = plan.proposed
    meta = {
        "id": dream_id,
        "created": now,
        "created_utc": format_time(now),
        "status": "pending" if hunks else "empty",
        "sessions": new_paths,
        "redo_of": redo,
        "targets": plan.shas,  # sha256 of each target when the proposal was made (None: a new file)
        "current": dict(plan.shas),  # what each target must be now (apply updates it)
        "base": plan.bases,
        "hunks": [
            {
                "n": h.n,
                "path": h.path,
                "fingerprints": h.keys,
                "kinds": [by_fp[k].kind for k in h.keys if k in by_fp],
                "summary": "; ".join(by_fp[k].summary for k in h.keys if k in by_fp),
                "status": "pending",
            }
            for h in hunks
        ],
        "candidates": {
            c.fingerprint: {"kind": c.kind, "summary": c.summary, "target": c.target, "score": c.score,
                            "signals": c.signals, "sessions": c.sessions, "signature": c.payload.get("signature")}
            for c in by_fp.values()
        },
        "gaps": plan.gaps,
    }
    _write_meta(folder, meta)  # last: a folder with proposal.json is a complete proposal
    return folder


def run_dream(
    root: str | os.PathLike[str],
    *,
    memory: Any = None,
    clock: Callable[[], float] = time.time,
    redo: str | None = None,
    semantic: bool = True,
) -> DreamResult:
    """One pass over the unprocessed sessions (plus, with `redo`, the sessions of proposal `redo` again).

    `memory`: an open Memory to match topics with (tests pass Memory(root, embedder=False) or a FakeEmbedder);
    by default one is opened (keyword-only when `semantic` is False) and closed again.
    """
    mroot = MemoryRoot(root)
    settings = memory.settings if memory is not None else load_settings(mroot.path)
    gate = DreamGate(mroot, settings, clock)
    with dream_lock(gate, settings.dream.lock_wait_seconds, "run `memory-server dream run`"):
        state = gate.load_state()
        old_meta = _read_meta(mroot, redo) if redo else None
        for rel in (old_meta or {}).get("sessions", []):
            state["processed"].pop(rel, None)
        new_paths = gate.unprocessed_sessions(state)
        if not new_paths:
            gate.clear_pending()
            return DreamResult(None, None, message="nothing new: every session has been processed by a dream")
        now = float(clock())
        own = memory is None
        if own:
            from memory_server.api import Memory

            memory = Memory(mroot.path, settings=settings, **({} if semantic else {"embedder": False}))
        try:
            plan = _plan(memory, mroot, gate, state, new_paths, semantic, now)
        finally:
            if own:
                memory.close()
        dream_id = _stamp(mroot, now)
        folder = _write_proposal(mroot, dream_id, now, new_paths, redo, plan, settings.dream)
        if old_meta is not None:
            old_meta.update(status="superseded", superseded_by=dream_id)
            _write_meta(mroot.dreams_dir / old_meta["id"], old_meta)
        state = gate.load_state()
        for rel in new_paths:
            state["processed"][rel] = {"dream": dream_id, "at": now}
        state["last_dream"] = now
        gate.save_state(state)
        gate.clear_pending()
        files = sorted({h.path for h in plan.hunks})
        count = len(plan.hunks)
        message = (
            f"dream {dream_id}: {count} hunk(s) proposed in {', '.join(files)}; read {folder / 'REPORT.md'}"
            if count
            else f"dream {dream_id}: {len(new_paths)} session(s) processed, no change proposed; see {folder / 'REPORT.md'}"
        )
        return DreamResult(dream_id, folder, new_paths, count, files, message)


# -- proposals ----------------------------------------------------------------------------------------


def _read_meta(root: MemoryRoot, proposal_id: str) -> dict[str, Any]:
    if not proposal_id or "/" in proposal_id or proposal_id.startswith("."):
        raise NotFoundError(f"{proposal_id!r} is not a proposal id; list them with `memory-server dream show`")
    path = root.dreams_dir / proposal_id / PROPOSAL_META
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"no proposal {proposal_id!r} under {root.dreams_dir}; list them with `memory-server dream show`") from None
    except ValueError as exc:
        raise DreamError(f"{path} is not valid JSON ({exc}); regenerate with `memory-server dream run --redo {proposal_id}`") from exc


def _write_meta(folder: Path, meta: dict[str, Any]) -> None:
    write_meta(folder, meta)


def list_proposals(root: str | os.PathLike[str] | MemoryRoot) -> list[dict[str, Any]]:
    mroot = root if isinstance(root, MemoryRoot) else MemoryRoot(root)
    out = []
    if mroot.dreams_dir.is_dir():
        for folder in sorted(mroot.dreams_dir.iterdir()):
            if (folder / PROPOSAL_META).is_file():
                with contextlib.suppress(DreamError, NotFoundError):
                    meta = _read_meta(mroot, folder.name)
                    pending = [h["n"] for h in meta["hunks"] if h["status"] == "pending"]
                    out.append({"id": meta["id"], "created": meta["created"], "status": meta["status"],
                                "hunks": len(meta["hunks"]), "pending_hunks": pending})
    return out
