"""`memory-server dream propose ITEMS.json`: verify the agent's items, then render the proposal itself.

    propose(root, "items.json")  -> ProposeResult

Reads the sessions `dream gather` packed (else those a pack would hold now: the oldest no dream has read,
up to `dream.pack_max_tokens`), checks every item against their record (`verify.py`), and, when every item
passes (or with `drop_refused`), writes `dreams/<id>/`: proposal.diff (at most `dream.max_changes` changes,
one per item, in the order given, each in hunks of its own; the other verified items wait in the dream
state and the next `dream gather` lists them first), REPORT.md and proposal.json. Those sessions are then
marked as read. When an item is refused, nothing is written: the refusals name each item and the reason.

`dream run` (no agent) goes through `render_proposal` too, with the items it can find without judgement;
it never marks sessions read for the agent's pass.
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

from memory_server.dream.auto_memory import auto_memory_records
from memory_server.dream.edits import build_changes, section_for
from memory_server.dream.gate import DreamGate, format_time
from memory_server.dream.items import ProposalItem, load_items
from memory_server.dream.journal import write_meta
from memory_server.dream.locate import Recorded
from memory_server.dream.names import GitTree
from memory_server.dream.pack import PACK_RECORD, build_pack, packed_held, packed_sessions
from memory_server.dream.patch import FilePatch, Hunk, apply_edits, make_patch
from memory_server.dream.proposals import dream_lock, new_stamp, read_meta
from memory_server.dream.record import SessionRecord, load_records
from memory_server.dream.records import ChangeRecord, DreamState, HeldItem, HunkRecord, ProposalMeta
from memory_server.dream.rejections import rejections
from memory_server.dream.report import ReportInput, render_report
from memory_server.dream.topics import TopicFile, load_topics, place
from memory_server.dream.verify import Context, Verified, verify
from memory_server.errors import DreamError
from memory_server.files.root import MEMORY_INDEX, MemoryRoot, as_root
from memory_server.files.writing import atomic_write, unlink_quietly
from memory_server.index.embedder import Embedder
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
    warnings: list[str] = field(default_factory=list)  # per item: what the program saw that a reader should weigh


@dataclass
class Batch:
    """What one pass reads: the sessions (and every later one, for reversals), the topics, the project tree."""

    root: MemoryRoot
    settings: Settings
    gate: DreamGate
    state: DreamState
    paths: list[str]
    sessions: list[SessionRecord]
    later: list[SessionRecord]
    topics: dict[str, TopicFile]
    memory_md: TopicFile | None
    tree: GitTree
    redone: ProposalMeta | None = None  # the proposal whose sessions are read again (`--redo`)
    auto: list[SessionRecord] = field(default_factory=list)  # Claude Code's auto memory, first in every order

    @property
    def names_note(self) -> str:
        """Said in the output and the report when names could not be checked."""
        return "" if self.tree.available else f"names not checked: {self.root.path} is not in a git repository"

    def context(self) -> Context:
        rejected = rejections(self.state.get("rejected") or {})
        recorded = Recorded([*self.auto, *self.sessions])
        return Context(recorded, [*self.auto, *self.later], self.topics, self.tree, self.settings.dream, rejected)

    def verify(self, items: list[ProposalItem]) -> tuple[list[Verified], list[str]]:
        return verify(items, self.context())


def open_batch(
    root: MemoryRoot, settings: Settings, gate: DreamGate, redo: str | None = None, paths: list[str] | None = None
) -> Batch:
    """The sessions no dream has read (or those of `paths`; with `redo`, also those proposal `redo` read),
    every later session (for what takes an item back), and the topics."""
    state = gate.load_state()
    unread = gate.unprocessed_sessions(state)
    paths = unread if paths is None else paths
    redone = read_meta(root, redo) if redo else None
    if redone is not None:
        again = {p for p in redone.get("sessions", []) if isinstance(p, str) and (root.path / p).is_file()}
        paths = sorted(set(paths) | again)
    held = held_sessions(state)
    if not paths and not held:
        raise DreamError("nothing new: no recorded session waits for a dream (see `memory-server dream status`)")
    topics, memory_md = load_topics(root)
    # Sessions cited by verified items still waiting are read again as evidence only (not marked again).
    evidence_paths = sorted(set(paths) | {p for p in held if (root.path / p).is_file()})
    sessions = load_records(root, evidence_paths, settings)
    newest = max((s.ts for s in sessions), default=0.0)
    newer = [p for p in unread if p not in set(evidence_paths)]
    later = sorted(
        [*sessions, *(s for s in load_records(root, newer, settings) if s.ts >= newest)], key=lambda s: (s.ts, s.path)
    )
    tree = GitTree(root.path)
    auto = auto_memory_records(root, settings)
    return Batch(root, settings, gate, state, paths, sessions, later, topics, memory_md, tree, redone, auto)


def held_sessions(state: DreamState) -> set[str]:
    """The session files cited by the verified items waiting in the dream state."""
    return {
        p
        for rec in (state.get("held") or {}).values()
        if isinstance(rec, dict)
        for p in rec.get("sessions", [])
        if isinstance(p, str)
    }


# -- the stages of rendering a proposal ------------------------------------------------------------------


def _promoted(verified: list[Verified]) -> list[Verified]:
    """What may become hunks: adopted or rejected items that are not gaps, in the agent's order."""
    promoted = [v for v in verified if v.item.stance in ("adopted", "rejected") and v.item.kind != "gap"]
    return sorted(promoted, key=lambda v: v.item.n)


def _place(batch: Batch, promoted: list[Verified], placer: Placer | None) -> dict[str, str]:
    """The section of each fact or decision given without one (by words and meaning), with a note."""
    sections: dict[str, str] = {}
    for v in promoted:
        topic = batch.topics.get(v.item.topic)
        if placer is None or topic is None or v.item.section or v.item.kind not in ("fact", "decision"):
            continue
        where = sections[v.item.fingerprint] = placer(v.item, topic)
        v.notes.append(
            f"No section given: placed at § {where} (it shares enough words and meaning with it)."
            if where
            else "No section given and none matched well enough: placed under "
            f"§ {section_for(topic, '') or 'the end of the topic'}."
        )
    return sections


def _patches(
    batch: Batch, items: list[Verified], sections: dict[str, str], today: str
) -> tuple[list[FilePatch], set[str]]:
    """The patches of `items`, and the fingerprints of items whose edit overlaps an earlier one's lines."""
    lessons = {v.item.fingerprint: v.lessons for v in items if v.item.kind == "lesson"}
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


def _choose(
    batch: Batch, promoted: list[Verified], sections: dict[str, str], today: str
) -> tuple[list[Verified], list[tuple[Verified, str]], list[FilePatch]]:
    """(the changes proposed, those that wait and why, the patches): at most `dream.max_changes` changes,
    each in hunks of its own (an item whose lines would share a hunk with another's waits)."""
    limit = batch.settings.dream.max_changes
    chosen: list[Verified] = []
    held: list[tuple[Verified, str]] = []
    patches: list[FilePatch] = []
    for v in promoted:
        if len(chosen) >= limit:
            held.append((v, f"over the limit of {limit} changes per proposal (`dream.max_changes`)"))
            continue
        trial, dropped = _patches(batch, [*chosen, v], sections, today)
        if v.item.fingerprint in dropped:
            held.append((v, "it changes lines another change of this proposal changes; it can go in once this "
                            "proposal is reviewed"))  # fmt: skip
            continue
        shared = {p.path for p in trial for h in p.hunks if len(set(h.keys)) > 1}
        if shared == {MEMORY_INDEX}:
            held.append((v, "it makes a new topic and this proposal makes one already: their pointer lines in "
                            f"{MEMORY_INDEX} would share a hunk; it waits so that each change can be applied or "
                            "rejected alone"))  # fmt: skip
            continue
        if shared:
            held.append((v, "its lines would sit next to another change's, in one hunk; it waits so that each "
                            "change can be applied or rejected alone"))  # fmt: skip
            continue
        chosen, patches = [*chosen, v], trial
    return chosen, held, patches


def _held_record(batch: Batch, v: Verified, dream_id: str, now: float, why: str) -> HeldItem:
    """A verified item waiting for a later pass, with what re-verifying it needs: the item as written and
    the session files its evidence cites."""
    cited = {x.session.path for x in v.located} | {c.session for c in v.lessons}
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


def _change_records(chosen: list[Verified], hunks: list[Hunk]) -> list[ChangeRecord]:
    """One record per change (an item), numbered in the proposal's order, with the hunks that carry it."""
    out: list[ChangeRecord] = []
    for n, v in enumerate(chosen, 1):
        fp = v.item.fingerprint
        out.append(
            {
                "n": n,
                "fingerprint": fp,
                "kind": v.item.kind,
                "stance": v.item.stance,
                "statement": v.item.statement,
                "target": v.item.topic,
                "hunks": [h.n for h in hunks if fp in h.keys],
                "reading": None,
            }
        )
    return out


def _hunk_records(hunks: list[Hunk], changes: list[ChangeRecord]) -> list[HunkRecord]:
    by_fp = {c["fingerprint"]: c for c in changes}
    out: list[HunkRecord] = []
    for h in hunks:
        mine = [by_fp[k] for k in h.keys if k in by_fp]
        pointer = h.path == MEMORY_INDEX and all(c["target"] != MEMORY_INDEX for c in mine)
        summary = (
            "the pointer to the new topic " + ", ".join(f"`{c['target']}`" for c in mine)
            if pointer
            else "; ".join(c["statement"] for c in mine)
        )
        out.append(
            {
                "n": h.n,
                "path": h.path,
                "fingerprints": h.keys,
                "change": mine[0]["n"] if mine else None,
                "kinds": [c["kind"] for c in mine],
                "summary": summary,
                "status": "pending",
            }
        )
    return out


def _meta(
    batch: Batch, dream_id: str, now: float, origin: str, chosen: list[Verified], held: list[tuple[Verified, str]],
    patches: list[FilePatch],
) -> ProposalMeta:  # fmt: skip
    hunks = [h for p in patches for h in p.hunks]
    known = {**batch.topics, **({MEMORY_INDEX: batch.memory_md} if batch.memory_md else {})}
    shas = {p.path: None if p.new_file else known[p.path].sha256 for p in patches}
    changes = _change_records(chosen, hunks)
    return {
        "version": 2,
        "id": dream_id,
        "created": now,
        "created_utc": format_time(now),
        "origin": origin,
        "status": "pending" if hunks else "empty",
        "sessions": batch.paths,
        "targets": shas,
        "current": dict(shas),
        "base": {p.path: None if p.new_file else known[p.path].text for p in patches},
        "changes": changes,
        "hunks": _hunk_records(hunks, changes),
        "items": {
            v.item.fingerprint: {
                "kind": v.item.kind,
                "statement": v.item.statement,
                "stance": v.item.stance,
                "target": v.item.topic,
                "evidence": [q.ref for q in v.item.evidence],
            }
            for v in chosen
        },
        "second_reading": "not done" if hunks and origin == "agent" else "not needed",
        "held_back": [v.item.statement for v, _why in held],
    }


def _waiting(
    batch: Batch, verified: list[Verified], held: list[tuple[Verified, str]], dream_id: str, now: float,
    offered: list[str],
) -> tuple[dict[str, HeldItem], list[str]]:  # fmt: skip
    """The dream state's waiting items after this pass, and the statements of those no longer waiting."""
    waiting: dict[str, HeldItem] = dict(batch.gate.load_state().get("held") or {})
    submitted = {v.item.fingerprint for v in verified}
    dropped = [rec.get("statement", fp) for fp, rec in waiting.items() if fp in set(offered) and fp not in submitted]
    waiting = {fp: rec for fp, rec in waiting.items() if fp not in submitted and fp not in set(offered)}
    waiting.update({v.item.fingerprint: _held_record(batch, v, dream_id, now, why) for v, why in held})
    return waiting, dropped


def _write(folder: Path, patches: list[FilePatch], report: str, meta: ProposalMeta) -> None:
    """dreams/<id>/ all or nothing: proposal.json last (a folder with it is a complete proposal)."""
    try:
        folder.mkdir(parents=True)
        if meta["hunks"]:
            atomic_write(folder / "proposal.diff", "".join(p.text() for p in patches))
        atomic_write(folder / "REPORT.md", report)
        write_meta(folder, meta)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # a failed pass leaves no half-written dreams/<id>/
        raise


def _record_pass(batch: Batch, dream_id: str, now: float, origin: str, waiting: dict[str, HeldItem]) -> None:
    """Mark the sessions read (the agent's pass only: `dream run` leaves them for the agent's /dream)."""
    state = batch.gate.load_state()
    if origin == "agent":
        for rel in batch.paths:
            state["processed"][rel] = {"dream": dream_id, "at": now}
        state["last_dream"] = now
        batch.gate.clear_pending()
    else:
        state.setdefault("run_read", {}).update({rel: {"dream": dream_id, "at": now} for rel in batch.paths})
    state["held"] = waiting
    batch.gate.save_state(state)
    if batch.redone is not None:
        _supersede(batch.root, batch.redone, dream_id)


def _message(
    batch: Batch, dream_id: str, folder: Path, chosen: list[Verified], hunks: list[Hunk], held: int, origin: str
) -> str:
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
            f"\n{held} verified item(s) wait for the next proposal (kept with their evidence; the "
            "next `dream gather` lists them first)"
        )
    if origin == "run" and batch.paths:
        apply = f"apply or reject its changes (`memory-server dream apply {dream_id}`), or " if hunks else ""
        message += (
            f"\nIts {len(batch.paths)} session(s) stay for the agent's /dream (and a due dream stays due) until a "
            f"person reviews this proposal: {apply}dismiss it (`memory-server dream dismiss {dream_id}`)"
        )
    return message


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
    """Write `dreams/<id>/` for the verified items (all or nothing) and record the pass.

    Stages: the promoted items in the agent's order -> their sections -> the changes chosen (at most
    `dream.max_changes`, each in hunks of its own; the rest wait) -> proposal.json and REPORT.md -> written ->
    the pass recorded. `offered`: fingerprints of waiting items the last pack listed; one the agent left out
    no longer waits (it was the agent's call).
    """
    today = dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
    promoted = _promoted(verified)
    sections = _place(batch, promoted, placer)
    chosen, held, patches = _choose(batch, promoted, sections, today)
    hunks = [h for p in patches for h in p.hunks]
    dream_id = new_stamp(batch.root, now)
    folder = batch.root.dreams_dir / dream_id
    meta = _meta(batch, dream_id, now, origin, chosen, held, patches)
    waiting, dropped = _waiting(batch, verified, held, dream_id, now, offered or [])
    notes = [*(extra or {}).get("notes", []), *(
        f"A verified item that waited from an earlier pass was not resubmitted, so it no longer waits: {s}"
        for s in dropped
    )]  # fmt: skip
    report = render_report(
        ReportInput(
            dream_id, now, origin, batch.paths, hunks, meta["changes"], chosen, held,
            [v for v in verified if v not in promoted], refusals or [], {**(extra or {}), "notes": notes},
            batch.settings.dream.max_changes, len(waiting), batch.root.path,
        )
    )  # fmt: skip
    _write(folder, patches, report, meta)
    _record_pass(batch, dream_id, now, origin, waiting)
    return ProposeResult(
        dream_id,
        folder,
        batch.paths,
        len(hunks),
        sorted({h.path for h in hunks}),
        refusals or [],
        [v.item.statement for v, _why in held],
        _message(batch, dream_id, folder, chosen, hunks, len(held), origin),
        changes=len(chosen),
    )


def _supersede(root: MemoryRoot, redone: ProposalMeta, dream_id: str) -> None:
    """The proposal a `--redo` replaces: removed when no hunk of it was applied or rejected (nothing refers to
    it then), else marked superseded (`show`/`apply` refuse it)."""
    folder = root.dreams_dir / str(redone["id"])
    if all(h.get("status") in ("pending", "withheld") for h in redone.get("hunks", [])):
        shutil.rmtree(folder, ignore_errors=True)
        return
    redone["status"], redone["superseded_by"] = "superseded", dream_id
    write_meta(folder, redone)


def propose(
    root: str | os.PathLike[str] | MemoryRoot,
    items_file: str | os.PathLike[str],
    *,
    drop_refused: bool = False,
    clock: Callable[[], float] = time.time,
    embedder: Embedder | None = None,
    redo: str | None = None,
    settings: Settings | None = None,
) -> ProposeResult:
    """Verify the items in `items_file`; when all pass (or `drop_refused`), write the proposal.

    `embedder`: an embedding model that places items given without a section by meaning too.
    `redo`: a proposal whose sessions are read again (it is superseded by the new one).
    """
    mroot = as_root(root)
    settings = settings or load_settings(mroot.path)
    gate = DreamGate(mroot, settings, clock)
    items, refusals = load_items(Path(items_file))

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
        result.warnings = [f"{v.item.name}: {w}" for v in verified for w in v.warnings]
        unlink_quietly(mroot.dreams_dir / PACK_RECORD)  # its sessions are read now; the next pass gathers anew
        return result


def _packed(root: MemoryRoot, settings: Settings, gate: DreamGate) -> list[str]:
    """The sessions the agent read: those `dream gather` packed that no dream has read since, else the ones
    a pack would hold now (the oldest, up to `dream.pack_max_tokens`)."""
    unread = gate.unprocessed_sessions()
    recorded = [p for p in packed_sessions(root) or [] if p in set(unread)]
    return recorded or (build_pack(root, unread, settings).paths if unread else [])
