"""Score dream candidates with named, tunable signals, and find knowledge gaps in the recall log.

    score = prior_<kind> + weight_support * support + weight_recency * recency
            + weight_recall_count * recall_count + weight_recall_quality * recall_quality
            + weight_distinct_queries * distinct_queries + weight_rule * rule

Each signal is in 0..1:
- support: distinct sessions that back the candidate, / support_cap;
- recency: 0.5 ** (days since the newest evidence or related search / recency_half_life_days);
- recall_count: recorded searches whose hits overlapped the evidence lines, / recall_count_cap;
- recall_quality: mean, over those searches, of the evidence hit's score relative to the search's best hit;
- distinct_queries: distinct query keys among those searches, / distinct_queries_cap;
- rule: 1 for a decision stated as a standing rule ("from now on", "always", "never", "going forward").
A candidate is proposed when its score reaches `min_score` (a lesson also needs `lesson_min_sessions`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from memory_server.dream.candidates import Candidate
from memory_server.dream.recall import RecallEvent
from memory_server.settings import DreamSettings

RULE_WORDS = re.compile(r"\b(from now on|going forward|always|never)\b", re.IGNORECASE)


def score(cand: Candidate, events: list[RecallEvent], settings: DreamSettings, now: float) -> None:
    """Fill `cand.signals` (each 0..1) and `cand.score` = prior + sum of weight * signal."""
    spans = [(e.path, e.start_line, e.end_line) for e in cand.evidence + cand.topic_lines]
    related: list[tuple[RecallEvent, float]] = []
    for event in events:
        top = max((float(h.get("score", 0.0)) for h in event.hits), default=0.0)
        best = None
        for rank, hit in enumerate(event.hits, 1):
            if any(hit.get("path") == p and hit.get("start_line", 0) <= e and hit.get("end_line", 0) >= s for p, s, e in spans):
                quality = float(hit.get("score", 0.0)) / top if top > 0 else 1.0 / rank
                best = quality if best is None else max(best, quality)
        if best is not None:
            related.append((event, best))
    newest = max([e.ts for e in cand.evidence] + [ev.time for ev, _ in related] + [0.0])
    age_days = max(0.0, (now - newest) / 86400) if newest else math.inf
    signals = {
        "support": min(1.0, len(cand.sessions) / max(1, settings.support_cap)),
        "recency": 0.0 if math.isinf(age_days) else 0.5 ** (age_days / max(settings.recency_half_life_days, 1e-6)),
        "recall_count": min(1.0, len(related) / max(1, settings.recall_count_cap)),
        "recall_quality": sum(q for _, q in related) / len(related) if related else 0.0,
        "distinct_queries": min(1.0, len({ev.key for ev, _ in related}) / max(1, settings.distinct_queries_cap)),
        "rule": 1.0 if cand.kind == "decision" and RULE_WORDS.search(cand.payload.get("statement", "")) else 0.0,
    }
    prior = getattr(settings, f"prior_{cand.kind}", 0.0)
    total = prior + sum(getattr(settings, f"weight_{name}") * value for name, value in signals.items())
    cand.signals = {k: round(v, 4) for k, v in signals.items()}
    cand.signals["prior"] = prior
    cand.signals["searches"] = float(len(related))
    cand.score = round(total, 4)


def passes(cand: Candidate, settings: DreamSettings) -> bool:
    if cand.kind == "lesson" and len(cand.sessions) < settings.lesson_min_sessions:
        return False
    return cand.score >= settings.min_score


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
                "hits": sum(len(e.hits) for e in asked),
            }
        )
    return sorted(gaps, key=lambda g: (-g["asks"], g["key"]))
