"""`memory-server dream propose ITEMS.json`: verify the agent's items, then render the proposal itself.

    propose(root, "items.json")  -> ProposeResult

Reads the sessions `dream gather` packed (else those a pack would hold now: the oldest no dream has read,
up to `dream.pack_max_tokens`), checks every item against them (`verify.py`), and, when every item passes
(or with `drop_refused`), writes `dreams/<id>/`:
proposal.diff (at most `dream.max_hunks` hunks; verified items beyond that are listed in the report for
the next pass), REPORT.md and proposal.json. Those sessions are then marked as read. When an item is
refused, nothing is written: the refusals name each item and the reason, to fix and resubmit.
`dream run` (no agent) goes through `render_proposal` too, with the items it can find without judgement.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_server.dream.edits import build_changes
from memory_server.dream.evidence import SessionEvidence, load_sessions
from memory_server.dream.gate import DreamGate, format_time
from memory_server.dream.identifiers import GitTree
from memory_server.dream.items import ProposalItem, load_items
from memory_server.dream.journal import write_meta
from memory_server.dream.pack import PACK_RECORD, build_pack, packed_sessions
from memory_server.dream.patch import FilePatch, apply_edits, make_patch
from memory_server.dream.proposals import dream_lock, new_stamp, read_meta
from memory_server.dream.report import ReportInput, render_report
from memory_server.dream.topics import TopicFile, embedder_of, load_topics, place
from memory_server.dream.verify import Evidence, Verified, verify
from memory_server.errors import DreamError
from memory_server.files.root import MEMORY_INDEX, MemoryRoot
from memory_server.files.writing import atomic_write, unlink_quietly
from memory_server.settings import Settings, load_settings

KIND_ORDER = {"correction": 0, "lesson": 1, "decision": 2, "fact": 3, "gap": 4}
Placer = Callable[[ProposalItem, TopicFile], str]


@dataclass
class ProposeResult:
    id: str | None
    folder: Path | None
    sessions: list[str] = field(default_factory=list)
    hunks: int = 0
    files: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class Batch:
    """What one pass reads: the sessions, their evidence, the topics."""

    root: MemoryRoot
    settings: Settings
    gate: DreamGate
    state: dict[str, Any]
    paths: list[str]
    sessions: list[SessionEvidence]
    topics: dict[str, TopicFile]
    memory_md: TopicFile | None
    redone: dict[str, Any] | None = None  # the proposal whose sessions are read again (`--redo`)

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.root, self.sessions, self.topics)

    def verify(self, items: list[ProposalItem]) -> tuple[list[Verified], list[str]]:
        done = {**self.state.get("rejected", {})}
        return verify(items, self.evidence, self.settings.dream, GitTree(self.root.path), done)


def open_batch(root: MemoryRoot, settings: Settings, gate: DreamGate, redo: str | None = None,
               paths: list[str] | None = None) -> Batch:
    """The sessions no dream has read (or those of `paths`; with `redo`, also those proposal `redo` read),
    and the topics."""
    state = gate.load_state()
    paths = gate.unprocessed_sessions(state) if paths is None else paths
    redone = read_meta(root, redo) if redo else None
    if redone is not None:
        again = {p for p in redone.get("sessions", []) if isinstance(p, str) and (root.path / p).is_file()}
        paths = sorted(set(paths) | again)
    if not paths:
        raise DreamError("nothing new: every session has been read by a dream (see `memory-server dream status`)")
    topics, memory_md = load_topics(root)
    return Batch(root, settings, gate, state, paths, load_sessions(root, paths, settings), topics, memory_md,
                 redone)


def _patches(batch: Batch, items: list[Verified], sections: dict[str, str], today: str) -> list[FilePatch]:
    ev = batch.evidence
    lessons: dict[str, list[str]] = {}
    for v in items:
        if v.item.kind == "lesson":
            failure = ev.failure_at(next(q for q in v.item.evidence if q.role == "error"))
            if failure is not None:
                lessons[v.item.fingerprint] = sorted(ev.by_base[b].path for b in ev.sessions_with(failure.normalised))
    changes = build_changes([v.item for v in items], sections, lessons, batch.topics, batch.memory_md, today)
    patches = []
    for path in sorted(changes):
        fc = changes[path]
        new_lines, kept = (fc.new_text, fc.edits) if fc.old is None else apply_edits(fc.old, fc.edits)
        patch = make_patch(path, fc.old, new_lines, kept)
        if patch.hunks:
            patches.append(patch)
    for n, hunk in enumerate((h for p in patches for h in p.hunks), 1):
        hunk.n = n
    return patches


def render_proposal(batch: Batch, verified: list[Verified], now: float, *, placer: Placer | None = None,
                    extra: dict[str, Any] | None = None, refusals: list[str] | None = None, origin: str = "agent",
                    ) -> ProposeResult:
    """Write `dreams/<id>/` for the verified items (all or nothing), mark the batch's sessions as read."""
    ds = batch.settings.dream
    today = dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
    promoted = [v for v in verified if v.item.stance in ("adopted", "rejected") and v.item.kind != "gap"]
    promoted.sort(key=lambda v: (KIND_ORDER[v.item.kind], v.item.n))
    sections: dict[str, str] = {}
    for v in promoted:
        topic = batch.topics.get(v.item.topic)
        if placer is not None and topic is not None and not v.item.section and v.item.kind in ("fact", "decision"):
            sections[v.item.fingerprint] = placer(v.item, topic)
            where = f"§ {sections[v.item.fingerprint]}" if sections[v.item.fingerprint] else "the end of the topic"
            v.notes.append(f"No section given: placed at {where} (the closest section, by words or meaning).")
    chosen: list[Verified] = []
    held: list[Verified] = []
    patches: list[FilePatch] = []
    for v in promoted:
        trial = _patches(batch, [*chosen, v], sections, today)
        if sum(len(p.hunks) for p in trial) <= ds.max_hunks:
            chosen, patches = [*chosen, v], trial
        else:
            held.append(v)
    hunks = [h for p in patches for h in p.hunks]
    listed = [v for v in verified if v not in promoted]
    dream_id = new_stamp(batch.root, now)
    folder = batch.root.dreams_dir / dream_id
    known = {**batch.topics, **({MEMORY_INDEX: batch.memory_md} if batch.memory_md else {})}
    shas = {p.path: None if p.new_file else known[p.path].sha256 for p in patches}
    by_fp = {v.item.fingerprint: v.item for v in chosen}
    report = render_report(ReportInput(
        dream_id, now, origin, batch.paths, hunks, {v.item.fingerprint: v for v in chosen}, held, listed,
        refusals or [], extra or {}, batch.sessions,
    ))
    meta = {
        "id": dream_id, "created": now, "created_utc": format_time(now), "origin": origin,
        "status": "pending" if hunks else "empty", "sessions": batch.paths,
        "targets": shas, "current": dict(shas),
        "base": {p.path: None if p.new_file else known[p.path].text for p in patches},
        "hunks": [{"n": h.n, "path": h.path, "fingerprints": h.keys,
                   "kinds": [by_fp[k].kind for k in h.keys if k in by_fp],
                   "summary": "; ".join(by_fp[k].statement for k in h.keys if k in by_fp), "status": "pending"}
                  for h in hunks],
        "items": {fp: {"kind": i.kind, "statement": i.statement, "stance": i.stance, "target": i.topic,
                       "evidence": [q.ref for q in i.evidence]} for fp, i in by_fp.items()},
        "held_back": [v.item.statement for v in held],
    }
    try:
        folder.mkdir(parents=True)
        if hunks:
            atomic_write(folder / "proposal.diff", "".join(p.text() for p in patches))
        atomic_write(folder / "REPORT.md", report)
        write_meta(folder, meta)  # last: a folder with proposal.json is a complete proposal
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # a failed pass leaves no half-written dreams/<id>/
        raise
    state = batch.gate.load_state()
    for rel in batch.paths:
        state["processed"][rel] = {"dream": dream_id, "at": now}
    state["last_dream"] = now
    batch.gate.save_state(state)
    batch.gate.clear_pending()
    if batch.redone is not None:
        batch.redone.update(status="superseded", superseded_by=dream_id)
        write_meta(batch.root.dreams_dir / batch.redone["id"], batch.redone)
    files = sorted({h.path for h in hunks})
    message = (f"dream {dream_id}: {len(hunks)} hunk{'s' if len(hunks) != 1 else ''} proposed in {', '.join(files)}; "
               f"read {folder / 'REPORT.md'}" if hunks else
               f"dream {dream_id}: {len(batch.paths)} session(s) read, no change proposed; see {folder / 'REPORT.md'}")
    return ProposeResult(dream_id, folder, batch.paths, len(hunks), files, refusals or [],
                         [v.item.statement for v in held], message)


def propose(root: str | os.PathLike[str], items_file: str | os.PathLike[str], *, drop_refused: bool = False,
            clock: Callable[[], float] = time.time, memory: Any = None, redo: str | None = None) -> ProposeResult:
    """Verify the items in `items_file`; when all pass (or `drop_refused`), write the proposal.

    `memory`: a Memory whose embedding model places items given without a section by meaning too.
    `redo`: a proposal whose sessions are read again (it is superseded by the new one).
    """
    mroot = MemoryRoot(root)
    settings = load_settings(mroot.path)
    gate = DreamGate(mroot, settings, clock)
    items, refusals = load_items(Path(items_file))
    embedder = embedder_of(memory)

    def placer(item: ProposalItem, topic: TopicFile) -> str:
        return place(item.statement, topic, settings.dream, embedder)

    with dream_lock(gate, settings.dream.lock_wait_seconds, "run `memory-server dream propose`"):
        batch = open_batch(mroot, settings, gate, redo, _packed(mroot, settings, gate))
        verified, refused = batch.verify(items)
        refusals += refused
        if refusals and not drop_refused:
            return ProposeResult(None, None, batch.paths, refusals=refusals, message=(
                f"{len(refusals)} item(s) refused; no proposal was written. Fix them (or leave them out) and run "
                "`memory-server dream propose` again."))
        result = render_proposal(batch, verified, float(clock()), placer=placer, refusals=refusals)
        unlink_quietly(mroot.dreams_dir / PACK_RECORD)  # its sessions are read now; the next pass gathers anew
        return result


def _packed(root: MemoryRoot, settings: Settings, gate: DreamGate) -> list[str]:
    """The sessions the agent read: those `dream gather` packed that no dream has read since, else the ones
    a pack would hold now (the oldest, up to `dream.pack_max_tokens`)."""
    unread = gate.unprocessed_sessions()
    recorded = [p for p in packed_sessions(root) or [] if p in set(unread)]
    return recorded or (build_pack(root, unread, settings).paths if unread else [])
