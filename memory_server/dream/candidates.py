"""Gather what a dream could promote from the new sessions into topics, and score each candidate.

Kinds of candidate:
- drift: a session says the project switched from X to Y (or uses Y instead of X) while a topic still
  says X. Both are shown with their dates; the proposal rewrites the topic's lines that say X.
- decision: any other decision or rule ("decided", "from now on", "always", "never"), proposed as a line
  in the topic section it matches (or in the `decisions` topic when none matches).
- lesson: the same error in `lesson_min_sessions` sessions or more: a `topics/lessons.md` entry with the
  mistake, the fix and the sessions.
- stale: a topic whose subject keeps coming up in sessions since it last changed (reported, no hunk).

Each carries a stable fingerprint (what it is, not how it is worded), so a rejected candidate is never
proposed again. Scoring is in `dream_scoring`; every weight is a `dream.*` setting.
"""

from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from memory_server.dream.recall import content_words
from memory_server.dream.sessions import SessionDigest, Statement, error_signature, similarity
from memory_server.dream.topics import HEADING, LESSONS, TopicFile, TopicFinder, topic_words
from memory_server.search.exact import STOP_WORDS
from memory_server.settings import DreamSettings

CONNECTORS = STOP_WORDS | {"for", "to", "as", "because", "since", "via", "with", "and", "or", "now", "again"}
ARTICLES = {"the", "a", "an", "our", "using", "plain"}
WORD = re.compile(r"`[^`]+`|[\w.+#/@-]+")
SWITCH = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat(?:ed|e|ing)|mov(?:ed|e|ing)|chang(?:ed|e|ing)|went|port(?:ed|ing)?)\b"
    r"[^.;]*?\bfrom\s+(?P<old>.+?)\s+to\s+(?P<new>.+)",
    re.IGNORECASE,
)
REPLACE = re.compile(r"\breplac(?:ed|e|ing)\s+(?P<old>.+?)\s+(?:with|by)\s+(?P<new>.+)", re.IGNORECASE)
RULE_PREFIX = re.compile(r"^(?:from now on|going forward|henceforth)[,:]?\s+", re.IGNORECASE)
INSTEAD = re.compile(r"(?P<new>.+?)\s+(?:instead of|rather than)\s+(?P<old>.+)", re.IGNORECASE)


def fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


@dataclass
class Evidence:
    path: str
    start_line: int
    end_line: int
    date: str | None
    text: str
    ts: float = 0.0

    def where(self) -> str:
        lines = f"{self.start_line}" if self.start_line == self.end_line else f"{self.start_line}-{self.end_line}"
        return f"{self.path}:{lines}"


@dataclass
class Candidate:
    kind: str  # drift | decision | lesson | stale
    fingerprint: str
    summary: str
    target: str  # the topic file the change goes to
    evidence: list[Evidence] = field(default_factory=list)  # session lines
    topic_lines: list[Evidence] = field(default_factory=list)  # what the topic says today
    payload: dict[str, Any] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)
    score: float = 0.0

    @property
    def sessions(self) -> list[str]:
        return sorted({e.path for e in self.evidence})


# -- terms of a switch --------------------------------------------------------------------------------


def _term(words: list[str]) -> str | None:
    """The tool or practice a run of words starts with: a backticked span, or a word (a two-word Proper Name)."""
    while words and words[0].casefold() in ARTICLES:
        words = words[1:]
    if not words:
        return None
    first = words[0]
    if first.startswith("`"):
        return first.strip("`").strip() or None
    first = first.rstrip(".,:;!?)")
    if not first or first.casefold() in CONNECTORS or not re.search(r"\w", first):
        return None
    if len(words) > 1 and first[:1].isupper() and words[1][:1].isupper() and words[1].casefold() not in CONNECTORS:
        return f"{first} {words[1].rstrip('.,:;!?)')}"
    return first


def switch_terms(statement: str) -> tuple[str, str] | None:
    """(old, new) when a statement says the project moved from one thing to another."""
    for pattern in (SWITCH, REPLACE):
        m = pattern.search(statement)
        if m:
            old, new = _term(WORD.findall(m.group("old"))), _term(WORD.findall(m.group("new")))
            if old and new and old.casefold() != new.casefold():
                return old, new
    m = INSTEAD.search(statement)
    if m:
        before = WORD.findall(m.group("new"))
        new = _term(before[-1:]) if before else None
        old = _term(WORD.findall(m.group("old")))
        if old and new and old.casefold() != new.casefold():
            return old, new
    return None


def term_pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", re.IGNORECASE)


# -- gathering ----------------------------------------------------------------------------------------


def _evidence(s: Statement) -> Evidence:
    return Evidence(s.session, s.start_line, s.end_line, s.date, s.text, s.ts)


def topic_text(statement: str) -> str:
    """A session statement as a topic line: without a leading "From now on," (the topic is always now)."""
    text = RULE_PREFIX.sub("", statement).strip()
    return text[:1].upper() + text[1:]


def closest_line(topic: TopicFile, statement: str) -> tuple[int, float] | None:
    """(line index, similarity) of the topic line closest to a statement; similarity 1.0 when it says it all."""
    wanted = topic_words(statement)
    best: tuple[int, float] | None = None
    for i in range(topic.body_start, len(topic.lines)):
        line = topic.lines[i]
        have = topic_words(line)
        if not have or HEADING.match(line):
            continue
        if wanted <= have:
            return i, 1.0
        sim = similarity(frozenset(wanted), frozenset(have))
        if best is None or sim > best[1]:
            best = (i, sim)
    return best


def gather_statements(
    new: list[SessionDigest], finder: TopicFinder, settings: DreamSettings, notes: list[str]
) -> list[Candidate]:
    """Drift and decision candidates from the decisions stated in the new sessions."""
    found: dict[str, Candidate] = {}
    for digest in new:
        for st in digest.decisions:
            drift = _drift(st, finder, notes)
            for cand in drift or [_decision(st, finder, notes)]:
                if cand is None:
                    continue
                if cand.fingerprint in found:
                    found[cand.fingerprint].evidence.append(_evidence(st))
                else:
                    found[cand.fingerprint] = cand
    # A later session reversing an earlier switch (X->Y, then Y->X): keep the latest, show the other.
    for cand in list(found.values()):
        if cand.kind != "drift" or cand.payload.get("rewrite"):
            continue
        old, new_ = cand.payload["old"], cand.payload["new"]
        twin = fingerprint("drift", cand.target, new_.casefold(), old.casefold())
        other = found.get(twin)
        if other and max(e.ts for e in other.evidence) >= max(e.ts for e in cand.evidence):
            other.payload.setdefault("contradicted_by", []).extend(cand.evidence)
            del found[cand.fingerprint]
    return list(found.values())


def _drift(st: Statement, finder: TopicFinder, notes: list[str]) -> list[Candidate]:
    terms = switch_terms(st.text)
    if not terms:
        return []
    old, new = terms
    old_re, new_re = term_pattern(old), term_pattern(new)
    out = []
    for path in finder.files_with_term(old):
        topic = finder.topics[path]
        lines = [
            Evidence(path, i + 1, i + 1, topic.date, topic.lines[i].rstrip("\r\n"))
            for i in range(topic.body_start, len(topic.lines))
            if old_re.search(topic.lines[i]) and not new_re.search(topic.lines[i])
        ]
        if not lines:
            continue
        if topic.date and st.date and topic.date > st.date:
            notes.append(
                f"not proposed: {path} (changed {topic.date}) still says {old!r}, but it changed after "
                f"{st.session}:{st.start_line} ({st.date}) said {st.text!r}; check by hand"
            )
            continue
        out.append(
            Candidate(
                "drift",
                fingerprint("drift", path, old.casefold(), new.casefold()),
                f"{path} says {old}; a session says the project moved to {new}",
                path,
                [_evidence(st)],
                lines,
                {"old": old, "new": new},
            )
        )
    return out


def _decision(st: Statement, finder: TopicFinder, notes: list[str]) -> Candidate | None:
    """A decision for the section it matches; or, when a topic line says nearly the same, that line's update."""
    section = finder.best_section(st.text)
    target = section.path if section else f"topics/{finder.settings.decisions_topic}.md"
    topic = finder.topics.get(target)
    key = " ".join(sorted(topic_words(st.text)))
    closest = closest_line(topic, st.text) if topic is not None and topic_words(st.text) else None
    if topic is not None and (not topic_words(st.text) or (closest and closest[1] >= 1.0)):
        return None  # the topic says it already
    if topic is not None and closest and closest[1] >= finder.settings.rewrite_similarity:
        i = closest[0]
        if topic.date and st.date and topic.date > st.date:
            notes.append(f"not proposed: {target}:{i + 1} changed ({topic.date}) after {st.session} ({st.date}) said {st.text!r}")
            return None
        line = Evidence(target, i + 1, i + 1, topic.date, topic.lines[i].rstrip("\r\n"))
        return Candidate(
            "drift", fingerprint("rewrite", target, key), f"{target}:{i + 1} says otherwise than a session: {st.text}",
            target, [_evidence(st)], [line], {"statement": st.text, "rewrite": True},
        )
    payload = {"statement": st.text, "heading": section.heading if section else "", "match": section.match if section else 0.0}
    return Candidate(
        "decision", fingerprint("decision", key), f"record in {target}: {st.text}", target, [_evidence(st)], [], payload
    )


def gather_lessons(
    everything: list[SessionDigest], new_paths: set[str], topics: dict[str, TopicFile], settings: DreamSettings
) -> list[Candidate]:
    """Errors that recur across sessions (at least one of them new), not yet in topics/lessons.md."""
    clusters: list[list] = []
    for digest in everything:
        for item in digest.errors:
            sig = item.signature
            if not sig:
                continue
            for cluster in clusters:
                head = cluster[0]
                same_kind = head.exception == item.exception or not (head.exception and item.exception)
                if same_kind and similarity(head.signature, sig) >= settings.error_similarity:
                    cluster.append(item)
                    break
            else:
                clusters.append([item])
    lessons = topics.get(LESSONS)
    known = [frozenset(content_words(part)) for part in re.split(r"(?m)^##\s", lessons.text)[1:]] if lessons else []
    out = []
    for cluster in clusters:
        sessions = {item.session for item in cluster}
        if len(sessions) < settings.lesson_min_sessions or not sessions & new_paths:
            continue
        head = cluster[0]
        if any(len(head.signature & words) >= 0.8 * len(head.signature) for words in known):
            continue
        fixes = [item.fix for item in cluster if item.fix]
        evidence = [Evidence(i.session, i.start_line, i.end_line, i.date, f"{i.error} -> {i.fix}" if i.fix else i.error, i.ts) for i in cluster]
        out.append(
            Candidate(
                "lesson",
                fingerprint("lesson", " ".join(sorted(head.signature))),
                head.error,
                LESSONS,
                evidence,
                [],
                {"error": head.error, "fix": fixes[-1] if fixes else "", "signature": sorted(head.signature)},
            )
        )
    return out


def gather_stale(
    everything: list[SessionDigest], new_paths: set[str], topics: dict[str, TopicFile], settings: DreamSettings, now: float
) -> list[Candidate]:
    """Topics whose subject shows in many sessions since the topic last changed (report only)."""
    out = []
    for path, topic in sorted(topics.items()):
        if path == LESSONS or not topic.date:
            continue
        age_days = (now - _day_ts(topic.date)) / 86400
        subject = topic_words(topic.title)
        tags = {t.casefold() for t in topic.tags}
        hits = [
            d for d in everything
            if d.date and d.date > topic.date and ((subject and subject <= d.words) or tags & d.words)
        ]
        if age_days < settings.stale_min_days or len(hits) < settings.stale_min_sessions:
            continue
        if not {d.path for d in hits} & new_paths:
            continue
        needles = [term_pattern(w) for w in sorted(subject | tags)]
        evidence = []
        for d in hits:
            line = next((i for i, ln in enumerate(d.lines) if any(n.search(ln) for n in needles)), 0)
            evidence.append(Evidence(d.path, line + 1, line + 1, d.date, d.lines[line].strip() if d.lines else "", d.ts))
        out.append(
            Candidate("stale", fingerprint("stale", path, topic.date), f"{path} may be stale", path, evidence, [], {"since": topic.date})
        )
    return out


def _day_ts(date: str) -> float:
    return float(calendar.timegm(dt.date.fromisoformat(date).timetuple()))


__all__ = [
    "Candidate", "Evidence", "fingerprint", "switch_terms", "term_pattern", "gather_statements",
    "gather_lessons", "gather_stale", "error_signature",
]
