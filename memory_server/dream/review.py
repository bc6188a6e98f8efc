"""Review of dream proposals: status, show, apply (all or nothing), reject (remembered).

`apply` reads `dreams/<id>/proposal.diff` (so wording the agent improved there is what gets applied),
applies the chosen hunks in Python to the text the proposal was made against (kept in proposal.json),
and writes only if every target is still byte-identical to what the proposal expects; otherwise it
raises StaleProposalError and says how to regenerate. Hunks that belong together (one change spread over
several hunks, a new topic and its MEMORY.md pointer) are applied or rejected together. An apply survives
`kill -9`: its renames and records go through a journal that the next dream command finishes
(dream_journal.py); `status` and `show` finish one too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from memory_server.dream.gate import DreamGate, format_time
from memory_server.dream.journal import ApplyJournal, pending_journals
from memory_server.dream.patch import Hunk, apply_hunks, parse_diff
from memory_server.dream.proposals import dream_lock, list_proposals, newest_id
from memory_server.dream.proposals import read_meta as _read_meta
from memory_server.dream.records import (
    ChangeRecord,
    ChangeView,
    Decided,
    DismissResult,
    DreamState,
    DreamStatusReport,
    ProposalMeta,
    ProposalView,
    ReviewResult,
    VerdictsResult,
)
from memory_server.dream.topics import split_keep
from memory_server.dream.writeset import write_all_or_nothing
from memory_server.errors import ConfigError, DreamError, NotFoundError, StaleProposalError
from memory_server.files.reading import sha256_bytes
from memory_server.files.root import MemoryRoot, as_root
from memory_server.settings import Settings, load_settings


def _settings(root: MemoryRoot) -> Settings:
    try:
        return load_settings(root.path)
    except ConfigError:
        return Settings()


def _regenerate(proposal_id: str) -> str:
    return (
        f"Regenerate it: run /dream again with `memory-server dream propose --redo {proposal_id} ITEMS.json`, or "
        f"without an agent `memory-server dream run --redo {proposal_id}` (both read the same sessions again "
        "against the files as they are now), then review the new proposal."
    )


def dream_status(
    root: str | os.PathLike[str] | MemoryRoot,
    *,
    clock: Callable[[], float] = time.time,
    settings: Settings | None = None,
) -> DreamStatusReport:
    """Due or not and why, what waits, and the proposals that still have hunks to review."""
    mroot = as_root(root)
    gate = DreamGate(mroot, settings or _settings(mroot), clock)
    _finish_interrupted(gate, "status")
    due, reason = gate.due()
    state = gate.load_state()
    pending = [p for p in list_proposals(mroot) if p["pending_hunks"] and p["status"] == "pending"]
    return {
        "due": due,
        "reason": reason,
        "unprocessed_sessions": len(gate.unprocessed_sessions(state)),
        "waiting_items": len(state.get("held") or {}),  # verified items held back, listed by the next gather
        "last_dream": state.get("last_dream"),
        "last_dream_utc": format_time(state.get("last_dream")),
        "flag": gate.flag_path.exists(),
        "thresholds": {"min_hours": gate.settings.min_hours, "min_sessions": gate.settings.min_sessions},
        "proposals_to_review": pending,
        "clears": gate.how_to_clear(state),
    }


def _finish_interrupted(gate: DreamGate, action: str) -> None:
    """Status and show read without the dream lock; when an apply was left half done, take it to finish it."""
    if pending_journals(gate.root):
        with dream_lock(gate, gate.settings.lock_wait_seconds, f"run `memory-server dream {action}`"):
            pass  # dream_lock finishes it


def _parsed(root: MemoryRoot, meta: ProposalMeta) -> dict[int, Hunk]:
    path = root.dreams_dir / meta["id"] / "proposal.diff"
    if not meta["hunks"]:
        raise DreamError(f"proposal {meta['id']} proposes no change; there is nothing to apply or reject")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DreamError(f"{path} is missing. {_regenerate(meta['id'])}") from None
    hunks = [h for patch in parse_diff(text) for h in patch.hunks]
    listed = [(h["n"], h["path"]) for h in meta["hunks"]]
    if [(h.n, h.path) for h in hunks] != listed:
        raise DreamError(
            f"{path} no longer has the hunks proposal.json lists (hunks were added, removed or moved). "
            f"Improve wording only on lines starting with +, keeping every line. {_regenerate(meta['id'])}"
        )
    return {h.n: h for h in hunks}


def _select(meta: ProposalMeta, wanted: Sequence[int] | None) -> tuple[list[int], list[int]]:
    """(hunks chosen, hunks added because they belong with a chosen one)."""
    by_n = {h["n"]: h for h in meta["hunks"]}
    if wanted is None:
        chosen = [n for n, h in by_n.items() if h["status"] == "pending"]
        if not chosen:
            raise DreamError(f"proposal {meta['id']} has no hunk left to review (all applied or rejected)")
    else:
        chosen = []
        for n in wanted:
            if n not in by_n:
                raise DreamError(f"proposal {meta['id']} has hunks 1 to {len(by_n)}; there is no hunk {n}")
            if by_n[n]["status"] not in ("pending", "withheld"):
                raise DreamError(f"hunk {n} of proposal {meta['id']} was already {by_n[n]['status']}")
            chosen.append(n)
    chosen_set = set(chosen)
    grew = True
    while grew:
        fps = {fp for n in chosen_set for fp in by_n[n]["fingerprints"]}
        more = {n for n, h in by_n.items() if h["status"] in ("pending", "withheld") and fps & set(h["fingerprints"])}
        grew = not more <= chosen_set
        chosen_set |= more
    return sorted(chosen_set), sorted(chosen_set - set(chosen))


def _check(
    root: MemoryRoot, meta: ProposalMeta, parsed: dict[int, Hunk], chosen: list[int]
) -> dict[str, tuple[bytes, str | None]]:
    """New bytes per target for the chosen hunks (with those applied before), checked against the files."""
    by_n = {h["n"]: h for h in meta["hunks"]}
    changes: dict[str, tuple[bytes, str | None]] = {}
    for path in sorted({by_n[n]["path"] for n in chosen}):
        expected = meta["current"].get(path)
        target = root.path / path
        actual = sha256_bytes(target.read_bytes()) if target.is_file() else None
        if actual != expected:
            what = "now exists" if expected is None else "no longer exists" if actual is None else "changed"
            raise StaleProposalError(
                f"{path} {what} since proposal {meta['id']} was made ({meta.get('created_utc')}); nothing was applied. "
                + _regenerate(meta["id"])
            )
        use = [parsed[n] for n, h in by_n.items() if h["path"] == path and (h["status"] == "applied" or n in chosen)]
        base = meta["base"].get(path)
        new = apply_hunks(split_keep(base) if base is not None else [], use)
        changes[path] = ("".join(new).encode("utf-8"), expected)
    return changes


def show_proposal(
    root: str | os.PathLike[str] | MemoryRoot, proposal_id: str | None = None, *, settings: Settings | None = None
) -> ProposalView:
    """A proposal (default: the newest with hunks to review): its hunks, files, and whether it still applies."""
    mroot = as_root(root)
    _finish_interrupted(DreamGate(mroot, settings or _settings(mroot)), "show")
    proposals = list_proposals(mroot)
    if not proposals:
        raise NotFoundError(
            "no dream proposals yet: /dream (or `memory-server dream run`) makes one from the sessions no dream has "
            "read; `memory-server dream status` says how many there are"
        )
    if proposal_id is None:
        waiting = [p for p in proposals if p["pending_hunks"] and p["status"] == "pending"]
        proposal_id = (waiting or proposals)[-1]["id"]
    meta = _read_meta(mroot, proposal_id)
    folder = mroot.dreams_dir / proposal_id
    diff = folder / "proposal.diff"
    check = "nothing to apply"
    pending = [h["n"] for h in meta["hunks"] if h["status"] == "pending"]
    if meta["status"] == "superseded":
        check = f"superseded by proposal {meta.get('superseded_by')}; review that one"
    elif pending:
        try:
            _check(mroot, meta, _parsed(mroot, meta), pending)
            check = (
                f"hunk {pending[0]} applies cleanly"
                if len(pending) == 1
                else f"hunks {', '.join(map(str, pending))} apply cleanly"
            ) + " to the files as they are now"
        except DreamError as exc:
            check = str(exc)
    return {
        "id": proposal_id,
        "created_utc": meta.get("created_utc"),
        "status": meta["status"],
        "report": str(folder / "REPORT.md"),
        "diff": str(diff) if diff.exists() else None,
        "sessions": meta.get("sessions", []),
        "hunks": meta["hunks"],
        "changes": _change_status(meta),
        "second_reading": meta.get("second_reading", "not done"),
        "check": check,
        "diff_text": diff.read_text(encoding="utf-8") if diff.exists() else "",
        "proposals": proposals,
    }


def changes_of(meta: ProposalMeta) -> list[ChangeRecord]:
    """A proposal's changes (one per item, with its hunks); a proposal made before changes were recorded
    counts each hunk as a change."""
    if isinstance(meta.get("changes"), list):
        return list(meta["changes"])
    return [{"n": h["n"], "hunks": [h["n"]], "statement": h.get("summary", ""), "reading": None} for h in meta["hunks"]]


def hunks_of_changes(meta: ProposalMeta, wanted: Sequence[int]) -> list[int]:
    """The hunks that carry the changes `wanted` (numbers as REPORT.md and `show` give them)."""
    by_n = {c["n"]: c for c in changes_of(meta)}
    out: list[int] = []
    for n in wanted:
        if n not in by_n:
            raise DreamError(f"proposal {meta['id']} has changes 1 to {len(by_n)}; there is no change {n}")
        out += [h for h in by_n[n]["hunks"] if h not in out]
    return out


def _change_status(meta: ProposalMeta) -> list[ChangeView]:
    """Each change with its hunks' paths and its status (the status of its hunks)."""
    by_n = {h["n"]: h for h in meta["hunks"]}
    out: list[ChangeView] = []
    for c in changes_of(meta):
        statuses = {by_n[h]["status"] for h in c["hunks"] if h in by_n}
        paths = sorted({by_n[h]["path"] for h in c["hunks"] if h in by_n})
        status = statuses.pop() if len(statuses) == 1 else "partly " + "/".join(sorted(statuses))
        out.append(ChangeView(**c, status=status, paths=paths))
    return out


def _review(
    root: str | os.PathLike[str] | MemoryRoot,
    proposal_id: str | None,
    hunks: Sequence[int] | None,
    action: str,
    clock: Callable[[], float],
    changes_wanted: Sequence[int] | None = None,
    settings: Settings | None = None,
) -> ReviewResult:
    mroot = as_root(root)
    gate = DreamGate(mroot, settings or _settings(mroot), clock)
    with dream_lock(gate, gate.settings.lock_wait_seconds, f"run `memory-server dream {action}`"):
        proposal_id = proposal_id or newest_id(mroot)  # like `show`: the newest with hunks to review
        meta = _read_meta(mroot, proposal_id)
        if meta["status"] == "superseded":
            raise DreamError(f"proposal {proposal_id} was superseded by {meta.get('superseded_by')}; review that one")
        parsed = _parsed(mroot, meta)
        if changes_wanted is not None:
            hunks = [*(hunks or []), *hunks_of_changes(meta, changes_wanted)]
        chosen, added = _select(meta, hunks)
        now = float(clock())
        changes = _check(mroot, meta, parsed, chosen) if action == "apply" else {}
        for path, (data, _expected) in changes.items():
            meta["current"][path] = sha256_bytes(data)
        state = gate.load_state()
        _decide(meta, state, chosen, "applied" if action == "apply" else "rejected", now)
        if all(h["status"] not in ("pending", "withheld") for h in meta["hunks"]):
            meta["status"] = "done"
        reviewed = count_reviewed(meta, state, now) if meta["status"] == "done" else []
        # proposal.json and the state are written through a journal, so files and records never disagree
        journal = ApplyJournal(mroot, proposal_id, chosen, meta, state, action)
        if changes:
            write_all_or_nothing(mroot.path, changes, _regenerate(proposal_id), journal)
        else:
            journal.begin([])
        journal.commit(gate)
        if reviewed:
            _refresh_flag(gate)
        done = [c["n"] for c in changes_of(meta) if set(c["hunks"]) & set(chosen)]
        return {
            "id": proposal_id,
            "action": action,
            "hunks": chosen,
            "changes": done,
            "added": added,
            "files": sorted(changes),
            "reviewed": reviewed,
        }


def _decide(meta: ProposalMeta, state: DreamState, chosen: list[int], bucket: Decided, now: float) -> None:
    """Mark the chosen hunks applied or rejected, and remember each of their items as decided."""
    decided = state[bucket]
    for h in meta["hunks"]:
        if h["n"] not in chosen:
            continue
        h["status"] = bucket
        if bucket == "applied":
            h["applied_at"] = now
        else:
            h["rejected_at"] = now
        for fp in h["fingerprints"]:
            item = meta.get("items", {}).get(fp)
            decided[fp] = {
                "proposal": meta["id"],
                "hunk": h["n"],
                "at": now,
                "summary": h["summary"],
                "statement": item["statement"] if item else h["summary"],
                "target": item["target"] if item else h["path"],
            }


def count_reviewed(meta: ProposalMeta, state: DreamState, now: float) -> list[str]:
    """A `dream run` proposal a person has finished reviewing: its sessions count as read from now on (the
    agent's /dream no longer gathers them, and the dream-due note clears), and it counts as the last dream.
    Returns the sessions that newly count as read. An agent's proposal changes nothing here: its pass already
    counted them."""
    if meta.get("origin") != "run" or meta.get("reviewed_at") is not None:
        return []
    meta["reviewed_at"] = now
    fresh = [rel for rel in meta["sessions"] if rel not in state["processed"]]
    for rel in fresh:
        state["processed"][rel] = {"dream": meta["id"], "at": now}
    state["last_dream"] = max(state["last_dream"] or 0.0, now)
    return fresh


def _refresh_flag(gate: DreamGate) -> None:
    """After sessions came to count as read: the `.dream-pending` flag goes when a dream is no longer due."""
    if not gate.due()[0]:
        gate.clear_pending()


def dismiss_proposal(
    root: str | os.PathLike[str] | MemoryRoot,
    proposal_id: str | None = None,
    *,
    clock: Callable[[], float] = time.time,
    settings: Settings | None = None,
) -> DismissResult:
    """Set a `dream run` proposal aside (default: the newest over sessions no dream has processed): its
    sessions count as read, as after applying it, and the dream-due note clears. Changes it still proposes
    stay unapplied and are not remembered as rejected (a later pass may propose them again)."""
    mroot = as_root(root)
    gate = DreamGate(mroot, settings or _settings(mroot), clock)
    with dream_lock(gate, gate.settings.lock_wait_seconds, "run `memory-server dream dismiss`"):
        state = gate.load_state()
        proposal_id = proposal_id or _newest_run(gate, state)
        meta = _read_meta(mroot, proposal_id)
        _check_dismissable(meta)
        left = [c["n"] for c in _change_status(meta) if c["status"] in ("pending", "withheld")]
        if meta.get("reviewed_at") is not None:
            return {"id": proposal_id, "reviewed": [], "left": left, "already": True}
        reviewed = count_reviewed(meta, state, float(clock()))
        if meta["status"] == "pending":
            meta["status"] = "dismissed"
        journal = ApplyJournal(mroot, proposal_id, [], meta, state, "dismiss")
        journal.begin([])
        journal.commit(gate)
        _refresh_flag(gate)
        return {"id": proposal_id, "reviewed": reviewed, "left": left, "already": False}


def _newest_run(gate: DreamGate, state: DreamState) -> str:
    runs = gate.runs_to_review(state)
    if not runs:
        raise NotFoundError(
            "no `dream run` proposal waits for review: every session a `dream run` read already counts as read "
            "(see `memory-server dream status`)"
        )
    return runs[-1]


def _check_dismissable(meta: ProposalMeta) -> None:
    if meta.get("origin") != "run":
        raise DreamError(
            f"proposal {meta['id']} came from the agent's /dream, whose pass already counted its sessions as read; "
            f"there is nothing to dismiss. To turn its changes down, reject them: `memory-server dream reject "
            f"{meta['id']}`"
        )
    if meta["status"] == "superseded":
        raise DreamError(f"proposal {meta['id']} was superseded by {meta.get('superseded_by')}; review that one")


def apply_proposal(
    root: str | os.PathLike[str] | MemoryRoot,
    proposal_id: str | None = None,
    hunks: Sequence[int] | None = None,
    *,
    changes: Sequence[int] | None = None,
    clock: Callable[[], float] = time.time,
    settings: Settings | None = None,
) -> ReviewResult:
    """Apply the chosen changes or hunks (default: every pending change) of a proposal (default: the newest
    with changes to review) to topics/ and MEMORY.md, all or nothing. A change the second reading withheld
    is applied only when named."""
    return _review(root, proposal_id, hunks, "apply", clock, changes, settings)


def reject_proposal(
    root: str | os.PathLike[str] | MemoryRoot,
    proposal_id: str | None = None,
    hunks: Sequence[int] | None = None,
    *,
    changes: Sequence[int] | None = None,
    clock: Callable[[], float] = time.time,
    settings: Settings | None = None,
) -> ReviewResult:
    """Reject the chosen changes or hunks (default: every pending one) of a proposal (default: the newest
    with changes to review); they, and items close to them, are never proposed again."""
    return _review(root, proposal_id, hunks, "reject", clock, changes, settings)


VERDICTS = ("accept", "reject")


def _parse_verdicts(data: Any, meta: ProposalMeta) -> dict[int, tuple[str, str]]:
    """{change: (verdict, reason)} from `{"verdicts": [{"change": 1, "verdict": "accept", "reason": "..."}]}`."""
    raw = data.get("verdicts") if isinstance(data, dict) else data
    if not isinstance(raw, list) or not raw:
        raise DreamError(
            'verdicts must be {"verdicts": [{"change": 1, "verdict": "accept" or "reject", "reason": ...}]}'
        )
    known = {c["n"] for c in changes_of(meta)}
    out: dict[int, tuple[str, str]] = {}
    for entry in raw:
        if not isinstance(entry, dict):
            raise DreamError("each verdict is an object with change, verdict and reason")
        n, verdict, reason = entry.get("change"), str(entry.get("verdict", "")).strip(), str(entry.get("reason", ""))
        if not isinstance(n, int) or n not in known:
            raise DreamError(f"proposal {meta['id']} has changes {sorted(known)}; a verdict names change {n!r}")
        if verdict not in VERDICTS or not reason.strip():
            raise DreamError(f"the verdict on change {n} must be accept or reject, with a reason")
        out[n] = (verdict, reason.strip())
    return out


def record_verdicts(
    root: str | os.PathLike[str] | MemoryRoot,
    proposal_id: str | None,
    data: Any,
    *,
    clock: Callable[[], float] = time.time,
    settings: Settings | None = None,
) -> VerdictsResult:
    """Record a second reader's verdicts on a proposal's changes: in proposal.json and REPORT.md; a change
    the reader rejects is withheld (not applied unless a person names it), with the reason."""
    from memory_server.dream.journal import write_meta
    from memory_server.dream.report import mark_read, record_reading
    from memory_server.files.writing import atomic_write

    mroot = as_root(root)
    gate = DreamGate(mroot, settings or _settings(mroot), clock)
    with dream_lock(gate, gate.settings.lock_wait_seconds, "run `memory-server dream verdicts`"):
        proposal_id = proposal_id or newest_id(mroot)
        meta = _read_meta(mroot, proposal_id)
        verdicts = _parse_verdicts(data, meta)
        changes = changes_of(meta)
        report_path = mroot.dreams_dir / proposal_id / "REPORT.md"
        report = report_path.read_text(encoding="utf-8") if report_path.exists() else ""
        withheld: list[int] = []
        for c in changes:
            if c["n"] not in verdicts:
                continue
            verdict, reason = verdicts[c["n"]]
            c["reading"] = {"verdict": verdict, "reason": reason, "at": float(clock())}
            report = record_reading(report, c["n"], "accepted" if verdict == "accept" else "withheld", reason)
            if verdict == "reject":
                withheld.append(c["n"])
                for h in meta["hunks"]:
                    if h["n"] in c["hunks"] and h["status"] == "pending":
                        h["status"] = "withheld"
        unread = [c["n"] for c in changes if not c.get("reading")]
        meta["changes"] = changes
        meta["second_reading"] = "done" if not unread else "partly done"
        summary = (
            f"done by a fresh reader: {len(verdicts) - len(withheld)} accepted, {len(withheld)} withheld"
            + (f" (changes {', '.join(map(str, withheld))}: not applied unless named)" if withheld else "")
            + (f"; changes {', '.join(map(str, unread))} not read" if unread else "")
        )
        atomic_write(report_path, mark_read(report, summary))
        write_meta(mroot.dreams_dir / proposal_id, meta)
        return {"id": proposal_id, "accepted": sorted(set(verdicts) - set(withheld)), "withheld": withheld,
                "unread": unread, "summary": summary}  # fmt: skip
