"""Check every proposal item against the evidence before anything is rendered.

An item is refused (with its name and the reason, so the agent can fix it and resubmit) when:
- a quote is not at its reference (the text there, redacted, must contain it; case and spacing aside);
- a replacement's old or new term is missing from its quotes, or the old text is not on a cited topic line;
- an adopted item is taken back later (a later request, correction, answer, commit or reply that names it
  and says revert / cancel / switch back / no longer ...);
- a lesson's error and fix are not from the same session, or its normalised error shows in fewer than
  `dream.lesson_min_sessions` sessions;
- the stance disagrees with the quoted sentences (adopted, yet they only ask, suppose, or say it was
  considered and not taken up, or declined);
- a name the statement says exists (a backticked identifier) is not in the project's git tree, when the
  root lies in one;
- the target section does not exist, the topic already says it, or a person rejected it before.

An item resting only on Claude Code's own summaries is refused too (they route; they are not evidence).
A gap (a question no topic answers) is checked for its quotes only: it is reported, never written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_server.dream.evidence import FailureItem, SessionEvidence
from memory_server.dream.identifiers import GitTree, claimed_identifiers, identifiers
from memory_server.dream.items import ProposalItem, Quote
from memory_server.dream.recall import content_words
from memory_server.dream.stance import norm, reverses, sentence_of, stance_problem
from memory_server.dream.topics import TopicFile, heading_key, headings
from memory_server.files.root import MemoryRoot
from memory_server.settings import DreamSettings

LATER_KINDS = ("request", "correction", "answer", "commit", "closing", "statement")


@dataclass
class Verified:
    item: ProposalItem
    dates: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Evidence:
    """Everything quotes can point at: the sessions of this dream, other session files, and the topics."""

    root: MemoryRoot
    sessions: list[SessionEvidence]
    topics: dict[str, TopicFile]

    def __post_init__(self) -> None:
        self.by_base = {s.ref_base: s for s in self.sessions}
        self.order = {s.ref_base: n for n, s in enumerate(self.sessions)}

    def texts(self, q: Quote) -> list[str] | None:
        """The texts at a reference, or None when the reference is not one this dream can read."""
        if q.source in self.by_base:
            return self.by_base[q.source].texts_at(q.line)
        if q.source in self.topics:
            lines = self.topics[q.source].lines
            return [lines[q.line - 1]] if q.line <= len(lines) else []
        if q.source.startswith("sessions/"):
            try:
                lines = self.root.read_lines(q.source)
            except Exception:  # noqa: BLE001 - any unreadable file is simply not evidence
                return None
            return [lines[q.line - 1]] if q.line <= len(lines) else []
        return None

    def failure_at(self, q: Quote) -> FailureItem | None:
        session = self.by_base.get(q.source)
        return next((f for f in session.failures if f.line == q.line), None) if session else None

    def sessions_with(self, normalised: str) -> set[str]:
        return {s.ref_base for s in self.sessions if any(f.normalised == normalised for f in s.failures)}


def _quotes_exist(item: ProposalItem, ev: Evidence) -> str | None:
    for q in item.evidence:
        texts = ev.texts(q)
        if texts is None:
            return (
                f"{q.ref} is not a reference this dream can read (not one of its sessions, a session file or a topic)"
            )
        if not texts:
            return f"nothing is recorded at {q.ref}; cite the reference the evidence pack prints"
        if not any(norm(q.quote) in norm(t) for t in texts):
            shown = " | ".join(t[:120] for t in texts)
            return f"the quote {q.quote!r} is not at {q.ref} (it says: {shown!r})"
    return None


def _only_summaries(item: ProposalItem, ev: Evidence) -> str | None:
    """Claude Code's own summaries route to evidence; they are not evidence of a decision by themselves."""
    support = [q for q in item.evidence if q.role == "support"]
    kinds = [ev.by_base[q.source].kinds_at(q.line) if q.source in ev.by_base else {"other"} for q in support]
    if support and all(k == {"summary"} for k in kinds):
        return (
            "its evidence is only Claude Code's own summary of a session; cite what the person or the session "
            "said (the summary names where), not the summary"
        )
    return None


def _sentence(q: Quote, ev: Evidence) -> str:
    """The whole sentence a quote was cut from (its stance is the sentence's, not the fragment's)."""
    for text in ev.texts(q) or []:
        if norm(q.quote) in norm(text):
            return sentence_of(text, q.quote)
    return q.quote


def _replacement(item: ProposalItem, ev: Evidence) -> str | None:
    quoted = " ".join(norm(q.quote) for q in item.evidence)
    for term in (item.old, item.new):
        if norm(term) not in quoted:
            return (
                f"the replacement term {term!r} does not appear in the item's quotes; quote where the sessions say it"
            )
    topic = ev.topics.get(item.topic)
    if topic is None:
        return f"{item.topic} does not exist, so it has no lines to correct"
    for ref in item.replace_lines:
        n = int(ref.rsplit(":", 1)[1])
        if n > len(topic.lines) or n <= topic.body_start:
            return f"{ref} is not a line of {item.topic}'s text"
        if item.old not in topic.lines[n - 1]:
            return f"{ref} does not say {item.old!r} (it says {topic.lines[n - 1].strip()!r})"
    return None


def _lesson(item: ProposalItem, ev: Evidence, settings: DreamSettings) -> str | None:
    errors = [q for q in item.evidence if q.role == "error"]
    fixes = [q for q in item.evidence if q.role == "fix"]
    if not errors or not fixes:
        return 'a lesson needs an evidence quote with "role": "error" and one with "role": "fix"'
    error = errors[0]
    failure = ev.failure_at(error)
    if failure is None:
        return f"no failure is recorded at {error.ref}; cite the failure's reference from the pack"
    for fix in fixes:
        if fix.source != error.source:
            return (
                f"the fix ({fix.ref}) comes from another session than the error ({error.ref}); cite the fix of "
                "that session"
            )
        if fix.line < error.line:
            return f"the fix ({fix.ref}) comes before the error ({error.ref})"
    seen = ev.sessions_with(failure.normalised)
    if len(seen) < settings.lesson_min_sessions:
        return (
            f"the error {failure.normalised!r} shows in {len(seen)} session(s), fewer than "
            f"{settings.lesson_min_sessions}: a one-off mistake is not a lesson"
        )
    return None


def _terms(item: ProposalItem) -> tuple[list[str], int]:
    """What a later sentence must name to take the item back, and how many of them: the new term or a name in
    the statement, else half of the statement's words that its quotes say too ("managed with uv" quoting
    "switched to uv": uv)."""
    if item.new:
        return [item.new], 1
    named = claimed_identifiers(item.statement) + identifiers(item.statement)
    if named:
        return named, 1
    quoted = set(content_words(" ".join(q.quote for q in item.evidence)))
    words = [w for w in dict.fromkeys(content_words(item.statement)) if w in quoted]
    return words, (len(words) + 1) // 2


def _reversed(item: ProposalItem, ev: Evidence) -> str | None:
    terms, need = _terms(item)
    cited = [(ev.order[q.source], q.line) for q in item.evidence if q.source in ev.order and q.role == "support"]
    if not terms or not cited:
        return None
    last = max(cited)
    for s in ev.sessions[last[0] :]:
        for later in s.items:
            if later.kind not in LATER_KINDS or (ev.order[s.ref_base], later.line) <= last:
                continue
            sentence = reverses(later.text, terms, need)
            if sentence is not None:
                return f'{later.ref} ({later.date}) takes it back later: {sentence[:160]!r}; use stance "reverted"'
    return None


def _target(item: ProposalItem, ev: Evidence) -> str | None:
    topic = ev.topics.get(item.topic)
    if topic is None:
        return None
    if norm(item.statement) in norm(topic.text):
        return f"{item.topic} already says it"
    if item.section:
        heads = [text for _i, _level, text in headings(topic)]
        if heading_key(item.section) not in {heading_key(h) for h in heads}:
            return (
                f"{item.topic} has no section {item.section!r}; its sections: {'; '.join(heads[:30])} "
                "(or leave the section out and the program places it)"
            )
    return None


def _names(item: ProposalItem, git: GitTree) -> str | None:
    for name in claimed_identifiers(item.statement):
        if item.old and name == item.old:
            continue
        if git.exists(name) is False:
            return f"`{name}` does not occur in the project's git tree ({git.top}); name only what exists"
    return None


def verify(
    items: list[ProposalItem], ev: Evidence, settings: DreamSettings, git: GitTree, rejected: dict[str, object]
) -> tuple[list[Verified], list[str]]:
    """(items that passed, one refusal line per item that did not: "item N (id): reason")."""
    passed: list[Verified] = []
    refusals: list[str] = []
    for item in items:
        reason = _quotes_exist(item, ev)
        promoted = item.stance in ("adopted", "rejected") and item.kind != "gap"
        adopted = promoted and item.stance == "adopted"  # a gap is a question by nature: only its quotes count
        if reason is None and item.kind == "lesson":
            reason = _lesson(item, ev, settings)
        if reason is None and item.replace_lines:
            reason = _replacement(item, ev)
        if reason is None and promoted:
            reason = _only_summaries(item, ev)
        if reason is None and adopted and item.kind != "lesson":
            reason = stance_problem([_sentence(q, ev) for q in item.evidence if q.role == "support"])
        if reason is None and adopted:
            reason = _reversed(item, ev)
        if reason is None and promoted:
            reason = _target(item, ev)
        if reason is None and adopted and item.kind != "lesson":
            reason = _names(item, git)
        if reason is None and promoted and item.fingerprint in rejected:
            reason = "a person rejected this before; it is not proposed again"
        if reason is not None:
            refusals.append(f"{item.name}: {reason}")
            continue
        dates = sorted({s.date for q in item.evidence if (s := ev.by_base.get(q.source)) and s.date})
        passed.append(Verified(item, dates))
    return passed, refusals
