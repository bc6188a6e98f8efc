"""`memory-server dream propose ITEMS.json`: verify the agent's items, then render the proposal itself.

    propose(root, "items.json")  -> ProposeResult

Reads the sessions `dream gather` packed (else those a pack would hold now: the oldest no dream has read,
up to `dream.pack_max_tokens`), checks every item against them (`verify.py`), and, when every item passes
(or with `drop_refused`), writes `dreams/<id>/`:
proposal.diff (at most `dream.max_hunks` changes, one per item, in the order given; the other verified
items wait in the dream state, and the next `dream gather` lists them first), REPORT.md and proposal.json.
Those sessions are then marked as read. When the root is not in a git repository, names cannot be checked:
the output and the report say so. When an item is
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

from memory_server.dream.edits import build_changes, section_for
from memory_server.dream.evidence import SessionEvidence, load_sessions
from memory_server.dream.gate import DreamGate, format_time
from memory_server.dream.identifiers import GitTree
from memory_server.dream.items import ProposalItem, load_items
from memory_server.dream.journal import write_meta
from memory_server.dream.pack import PACK_RECORD, build_pack, packed_held, packed_sessions
from memory_server.dream.patch import FilePatch, apply_edits, make_patch
from memory_server.dream.proposals import dream_lock, new_stamp, read_meta
from memory_server.dream.report import ReportInput, render_report
from memory_server.dream.topics import TopicFile, embedder_of, load_topics, place
from memory_server.dream.verify import Evidence, Verified, verify
from memory_server.errors import DreamError
from memory_server.files.root import MEMORY_INDEX, MemoryRoot
from memory_server.files.writing import atomic_write, unlink_quietly
from memory_server.settings import Settings, load_settings

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
    changes: int = 0  # items proposed (each one change, over one or more hunks)
    notes: list[str] = field(default_factory=list)


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
    git: GitTree | None = None

    @property
    def names_note(self) -> str:
        """Said in the output and the report when backticked names could not be checked."""
        if self.git is None:
            self.git = GitTree(self.root.path)
        return "" if self.git.available else f"names not checked: {self.root.path} is not in a git repository"

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.root, self.sessions, self.topics)

    def verify(self, items: list[ProposalItem]) -> tuple[list[Verified], list[str]]:
        done = {**self.state.get("rejected", {})}
        if self.git is None:
            self.git = GitTree(self.root.path)
        return verify(items, self.evidence, self.settings.dream, self.git, done)


def open_batch(
    root: MemoryRoot, settings: Settings, gate: DreamGate, redo: str | None = None, paths: list[str] | None = None
) -> Batch:
    """The sessions no dream has read (or those of `paths`; with `redo`, also those proposal `redo` read),
    and the topics."""
    state = gate.load_state()
    paths = gate.unprocessed_sessions(state) if paths is None else paths
    redone = read_meta(root, redo) if redo else None
    if redone is not None:
        again = {p for p in redone.get("sessions", []) if isinstance(p, str) and (root.path / p).is_file()}
        paths = sorted(set(paths) | again)
    held = held_sessions(state)
    if not paths and not held:
        raise DreamError("nothing new: every session has been read by a dream (see `memory-server dream status`)")
    topics, memory_md = load_topics(root)
    # Sessions cited by verified items still waiting are read again as evidence only (not marked again).
    evidence_paths = sorted(set(paths) | {p for p in held if (root.path / p).is_file()})
    return Batch(
        root, settings, gate, state, paths, load_sessions(root, evidence_paths, settings), topics, memory_md, redone
    )


def held_sessions(state: dict[str, Any]) -> set[str]:
    """The session files cited by the verified items waiting in the dream state."""
    return {
        p
        for rec in (state.get("held") or {}).values()
        if isinstance(rec, dict)
        for p in rec.get("sessions", [])
        if isinstance(p, str)
    }


def _patches(
    batch: Batch,
    items: list[Verified],
    sections: dict[str, str],
    today: str,
) -> tuple[list[FilePatch], set[str]]:
    """The patches of `items`, and the fingerprints of items whose edit overlaps an earlier one's lines
    (such an item would show no line of its own: it waits for the next pass instead)."""
    ev = batch.evidence
    lessons: dict[str, list[str]] = {}
    for v in items:
        if v.item.kind == "lesson":
            failure = ev.failure_at(next(q for q in v.item.evidence if q.role == "error"))
            if failure is not None:
                lessons[v.item.fingerprint] = sorted(ev.by_base[b].path for b in ev.sessions_with(failure.normalised))
    changes = build_changes([v.item for v in items], sections, lessons, batch.topics, batch.memory_md, today)
    patches = []
    dropped: set[str] = set()
    for path in sorted(changes):
        fc = changes[path]
        new_lines, kept = (fc.new_text, fc.edits) if fc.old is None else apply_edits(fc.old, fc.edits)
        dropped |= {k for e in fc.edits if not any(e is x for x in kept) for k in e.keys}
        patch = make_patch(path, fc.old, new_lines, kept)
        if patch.hunks:
            patches.append(patch)
    for n, hunk in enumerate((h for p in patches for h in p.hunks), 1):
        hunk.n = n
    return patches, dropped


def _held_record(batch: Batch, v: Verified, dream_id: str, now: float, why: str) -> dict[str, Any]:
    """A verified item waiting for a later pass, with what re-verifying it needs: the item as written and
    the session files its evidence cites."""
    by_base = {s.ref_base: s.path for s in batch.sessions}
    cited = {by_base[q.source] for q in v.item.evidence if q.source in by_base}
    ev = batch.evidence
    for q in v.item.evidence:  # a lesson is checked against every session its error shows in
        failure = ev.failure_at(q) if q.role == "error" else None
        if failure is not None:
            cited |= {by_base[b] for b in ev.sessions_with(failure.normalised)}
    return {
        "item": v.item.as_json(),
        "statement": v.item.statement,
        "kind": v.item.kind,
        "topic": v.item.topic,
        "sessions": sorted(cited),
        "proposal": dream_id,
        "at": now,
        "why": why,
    }


def render_proposal(
    batch: Batch,
    verified: list[Verified],
    now: float,
    *,
    placer: Placer | None = None,
    extra: dict[str, Any] | None = None,
    refusals: list[str] | None = None,
    origin: str = "agent",
    offered: list[str] | None = None,
) -> ProposeResult:
    """Write `dreams/<id>/` for the verified items (all or nothing), mark the batch's sessions as read.

    At most `dream.max_hunks` changes (one item = one change, however many diff hunks it renders to),
    taken in the order the items were given; the other verified items wait in the dream state
    (`held`) and the next `dream gather` lists them first. `offered`: fingerprints of waiting items the
    last pack listed; one the agent left out is dropped (it was the agent's call).
    """
    ds = batch.settings.dream
    today = dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
    promoted = [v for v in verified if v.item.stance in ("adopted", "rejected") and v.item.kind != "gap"]
    promoted.sort(key=lambda v: v.item.n)  # the agent's order: it knows which matter most
    sections: dict[str, str] = {}
    for v in promoted:
        topic = batch.topics.get(v.item.topic)
        if placer is not None and topic is not None and not v.item.section and v.item.kind in ("fact", "decision"):
            sections[v.item.fingerprint] = placer(v.item, topic)
            where = sections[v.item.fingerprint]
            v.notes.append(
                f"No section given: placed at § {where} (it shares enough words and meaning with it)."
                if where
                else "No section given and none matched well enough: placed under "
                f"§ {section_for(topic, '') or 'the end of the topic'}."
            )
    chosen: list[Verified] = []
    held: list[tuple[Verified, str]] = []
    patches: list[FilePatch] = []
    for v in promoted:
        if len(chosen) >= ds.max_hunks:
            held.append((v, f"over the limit of {ds.max_hunks} changes per proposal (`dream.max_hunks`)"))
            continue
        trial, dropped = _patches(batch, [*chosen, v], sections, today)
        if v.item.fingerprint in dropped:
            held.append(
                (
                    v,
                    "it changes lines another item of this proposal changes; it can go in once this "
                    "proposal is reviewed",
                )
            )
            continue
        chosen, patches = [*chosen, v], trial
    hunks = [h for p in patches for h in p.hunks]
    listed = [v for v in verified if v not in promoted]
    dream_id = new_stamp(batch.root, now)
    folder = batch.root.dreams_dir / dream_id
    known = {**batch.topics, **({MEMORY_INDEX: batch.memory_md} if batch.memory_md else {})}
    shas = {p.path: None if p.new_file else known[p.path].sha256 for p in patches}
    by_fp = {v.item.fingerprint: v.item for v in chosen}
    state = batch.gate.load_state()
    waiting: dict[str, Any] = dict(state.get("held") or {})
    submitted = {v.item.fingerprint for v in verified}
    dropped_waiting = [
        rec.get("statement", fp) for fp, rec in waiting.items() if fp in set(offered or []) and fp not in submitted
    ]
    waiting = {fp: rec for fp, rec in waiting.items() if fp not in submitted and fp not in set(offered or [])}
    waiting.update({v.item.fingerprint: _held_record(batch, v, dream_id, now, why) for v, why in held})
    report_extra = dict(extra or {})
    if dropped_waiting:
        report_extra["notes"] = [
            *(report_extra.get("notes") or []),
            *(
                f"A verified item that waited from an earlier pass was not resubmitted, so it no longer waits: {s}"
                for s in dropped_waiting
            ),
        ]
    report = render_report(
        ReportInput(
            dream_id,
            now,
            origin,
            batch.paths,
            hunks,
            {v.item.fingerprint: v for v in chosen},
            held,
            listed,
            refusals or [],
            report_extra,
            batch.sessions,
            ds.max_hunks,
            len(waiting),
        )
    )
    meta = {
        "id": dream_id,
        "created": now,
        "created_utc": format_time(now),
        "origin": origin,
        "status": "pending" if hunks else "empty",
        "sessions": batch.paths,
        "targets": shas,
        "current": dict(shas),
        "base": {p.path: None if p.new_file else known[p.path].text for p in patches},
        "hunks": [
            {
                "n": h.n,
                "path": h.path,
                "fingerprints": h.keys,
                "kinds": [by_fp[k].kind for k in h.keys if k in by_fp],
                "summary": "; ".join(by_fp[k].statement for k in h.keys if k in by_fp),
                "status": "pending",
            }
            for h in hunks
        ],
        "items": {
            fp: {
                "kind": i.kind,
                "statement": i.statement,
                "stance": i.stance,
                "target": i.topic,
                "evidence": [q.ref for q in i.evidence],
            }
            for fp, i in by_fp.items()
        },
        "held_back": [v.item.statement for v, _why in held],
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
    for rel in batch.paths:
        state["processed"][rel] = {"dream": dream_id, "at": now}
    state["last_dream"] = now
    state["held"] = waiting
    batch.gate.save_state(state)
    batch.gate.clear_pending()
    if batch.redone is not None:
        _supersede(batch.root, batch.redone, dream_id)
    files = sorted({h.path for h in hunks})
    changes = f"{len(chosen)} change{'s' if len(chosen) != 1 else ''}"
    message = (
        f"dream {dream_id}: {changes} in {len(hunks)} hunk{'s' if len(hunks) != 1 else ''} proposed in "
        f"{', '.join(files)}; read {folder / 'REPORT.md'}"
        if hunks
        else f"dream {dream_id}: {len(batch.paths)} session(s) read, no change proposed; see {folder / 'REPORT.md'}"
    )
    if held:
        message += (
            f"\n{len(held)} verified item(s) wait for the next proposal (kept with their evidence; the "
            "next `dream gather` lists them first)"
        )
    return ProposeResult(
        dream_id,
        folder,
        batch.paths,
        len(hunks),
        files,
        refusals or [],
        [v.item.statement for v, _why in held],
        message,
        changes=len(chosen),
    )


def _supersede(root: MemoryRoot, redone: dict[str, Any], dream_id: str) -> None:
    """The proposal a `--redo` replaces: removed when no hunk of it was applied or rejected (nothing refers to
    it then), else marked superseded (`show`/`apply` refuse it)."""
    folder = root.dreams_dir / str(redone["id"])
    if all(h.get("status") == "pending" for h in redone.get("hunks", [])):
        shutil.rmtree(folder, ignore_errors=True)
        return
    redone.update(status="superseded", superseded_by=dream_id)
    write_meta(folder, redone)


def propose(
    root: str | os.PathLike[str],
    items_file: str | os.PathLike[str],
    *,
    drop_refused: bool = False,
    clock: Callable[[], float] = time.time,
    memory: Any = None,
    redo: str | None = None,
) -> ProposeResult:
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
        notes = [batch.names_note] if batch.names_note else []
        if refusals and not drop_refused:
            return ProposeResult(
                None,
                None,
                batch.paths,
                refusals=refusals,
                notes=notes,
                message=(
                    f"{len(refusals)} item(s) refused; no proposal was written. Fix them (or leave them out) and run "
                    "`memory-server dream propose` again."
                ),
            )
        result = render_proposal(
            batch,
            verified,
            float(clock()),
            placer=placer,
            refusals=refusals,
            extra={"notes": notes},
            offered=packed_held(mroot),
        )
        result.notes = notes
        unlink_quietly(mroot.dreams_dir / PACK_RECORD)  # its sessions are read now; the next pass gathers anew
        return result


def _packed(root: MemoryRoot, settings: Settings, gate: DreamGate) -> list[str]:
    """The sessions the agent read: those `dream gather` packed that no dream has read since, else the ones
    a pack would hold now (the oldest, up to `dream.pack_max_tokens`)."""
    unread = gate.unprocessed_sessions()
    recorded = [p for p in packed_sessions(root) or [] if p in set(unread)]
    return recorded or (build_pack(root, unread, settings).paths if unread else [])
