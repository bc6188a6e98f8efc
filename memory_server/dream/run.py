"""`memory-server dream run`: a pass without an agent, proposing only what needs no judgement of meaning.

    run_dream(root) -> ProposeResult

- repeated errors: the same normalised error in `dream.lesson_min_sessions` sessions or more, with the fix
  recorded in the same session as one of them: an entry of `topics/lessons.md` (verified like any item);
- knowledge gaps: searches asked `dream.gap_min_asks` times that never found anything good (report only);
- stale topics: a topic `dream.stale_min_days` older than the newest session read, whose subject comes up
  in `dream.stale_min_sessions` sessions since (report only; age from the sessions, not the clock).

It never rewrites a topic line: deciding what a sentence means is the agent's part (`dream propose`).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from typing import Any

from memory_server.dream.edits import code_span
from memory_server.dream.gate import DreamGate
from memory_server.dream.items import LESSONS, ProposalItem, Quote
from memory_server.dream.proposals import dream_lock
from memory_server.dream.propose import Batch, ProposeResult, open_batch, render_proposal
from memory_server.dream.recall import RecallEvent, RecallLog, content_words
from memory_server.dream.record import FailureRecord, SessionRecord
from memory_server.errors import DreamError
from memory_server.files.root import MemoryRoot, as_root
from memory_server.settings import DreamSettings, Settings, load_settings


def repeated_errors(batch: Batch) -> list[ProposalItem]:
    """A lesson item per normalised error seen (and fixed) in enough sessions, citing each one's failure and fix."""
    seen: dict[str, dict[str, FailureRecord]] = {}
    for s in batch.sessions:
        for f in s.failures:
            if f.normalised and f.normalised != "failed" and f.fix:
                seen.setdefault(f.normalised, {}).setdefault(s.ref_base, f)
    lessons = batch.topics.get(LESSONS)
    out: list[ProposalItem] = []
    for normalised, by_session in sorted(seen.items()):
        if len(by_session) < batch.settings.dream.lesson_min_sessions:
            continue
        if lessons is not None and normalised in lessons.text.casefold():
            continue
        first = next(iter(by_session.values()))
        error = first.error.splitlines()[0][:200]
        # the statement quotes the error as code: a session's text is data, never a rule in its own words
        evidence = [
            q
            for f in by_session.values()
            for q in (
                Quote(f.ref, f.error.splitlines()[0][:200], "error"),
                Quote(f.fix[0].ref, f.fix[0].text[:200], "fix"),
            )
        ]
        statement = f"Repeated error: {code_span(_cut(error, 100))}"
        out.append(
            ProposalItem(len(out) + 1, "repeated-error", "lesson", statement, "adopted", LESSONS, evidence=evidence)
        )
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def knowledge_gaps(events: list[RecallEvent], settings: DreamSettings, since: float | None) -> list[dict[str, Any]]:
    """Questions asked `gap_min_asks` times or more (at least once since `since`) that never found anything good."""
    groups: dict[str, list[RecallEvent]] = {}
    for event in events:
        if event.key:
            groups.setdefault(event.key, []).append(event)
    gaps = []
    for key, asked in sorted(groups.items()):
        good = any(
            e.coverage >= settings.gap_min_coverage
            or any(h.get("match") in ("phrase", "substring", "all_terms") for h in e.hits)
            for e in asked
        )
        if good or len(asked) < settings.gap_min_asks or (since is not None and max(e.time for e in asked) < since):
            continue
        gaps.append(
            {
                "key": key,
                "asks": len(asked),
                "queries": sorted({e.query for e in asked}),
                "last_asked": max(e.time for e in asked),
                "best_coverage": max(e.coverage for e in asked),
            }
        )
    return sorted(gaps, key=lambda g: (-g["asks"], g["key"]))


def _spoken(s: SessionRecord) -> str:
    """What the person and the agent said in a session (not tool output or files)."""
    return " ".join(t.text for t in s.turns if t.kind in ("request", "answer", "correction", "reply"))


def stale_topics(batch: Batch) -> list[dict[str, Any]]:
    """Topics much older than the newest session read, whose subject keeps coming up in sessions since."""
    ds = batch.settings.dream
    dated = [s for s in batch.sessions if s.date]
    if not dated:
        return []
    newest = max(s.date for s in dated if s.date)
    out = []
    for path, topic in sorted(batch.topics.items()):
        if path == LESSONS or not topic.date:
            continue
        age = (dt.date.fromisoformat(newest) - dt.date.fromisoformat(topic.date)).days
        subject = set(content_words(topic.title)) | {t.casefold() for t in topic.tags}
        if age < ds.stale_min_days or not subject:
            continue
        hits = [s.path for s in dated if s.date and s.date > topic.date and subject & set(content_words(_spoken(s)))]
        if len(hits) >= ds.stale_min_sessions:
            out.append({"path": path, "updated": topic.date, "age_days": age, "sessions": hits})
    return out


def run_dream(
    root: str | os.PathLike[str] | MemoryRoot,
    *,
    clock: Callable[[], float] = time.time,
    redo: str | None = None,
    settings: Settings | None = None,
) -> ProposeResult:
    """One pass without an agent over the sessions no dream has read (with `redo`, those of proposal `redo` again)."""
    mroot = as_root(root)
    settings = settings or load_settings(mroot.path)
    gate = DreamGate(mroot, settings, clock)
    with dream_lock(gate, settings.dream.lock_wait_seconds, "run `memory-server dream run`"):
        state = gate.load_state()
        unread = [p for p in gate.unprocessed_sessions(state) if p not in (state.get("run_read") or {})]
        try:
            batch = open_batch(mroot, settings, gate, redo, unread)
        except DreamError as exc:
            return ProposeResult(None, None, message=str(exc))
        verified, refused = batch.verify(repeated_errors(batch))
        recall = RecallLog(mroot.ensure_state_dir(), max_events=settings.dream.recall_max_events)
        try:
            events = recall.events()
        finally:
            recall.close()
        extra = {
            "gaps": knowledge_gaps(events, settings.dream, batch.state.get("last_dream")),
            "stale": stale_topics(batch),
            "notes": [f"not proposed: {r}" for r in refused],
        }
        return render_proposal(batch, verified, float(clock()), extra=extra, origin="run")
