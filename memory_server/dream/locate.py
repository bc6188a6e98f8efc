"""Where an item's quotes are: each one found in a turn of a session this dream reads, or refused.

    record = Recorded(sessions)                       # the sessions the pack covers, oldest first
    found = record.locate(Quote("transcript:<id>:54", "Do it."))   # Located, or raises Unlocated

A reference is `transcript:<id>:LINE` (a session whose transcript this dream reads, or its kept copy),
`sessions/...md:LINE` (a session whose transcript is gone: its compressed file is its record), or
`auto-memory:<file>:LINE` (a line of Claude Code's auto memory, spoken by the model). Anything else is refused: topics,
CLAUDE.md, README, reports, `..`, sessions this dream does not read. The program, not the item, then says
who spoke the quoted words, the whole sentence they were cut from, the date, and for an answer what it answers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory_server.dream.items import Quote
from memory_server.dream.record import (
    AGENT,
    AUTO_MEMORY,
    CLAUDE_CODE,
    FILE,
    OUTSIDE,
    PERSON,
    TOOL,
    SessionRecord,
    Turn,
)
from memory_server.errors import Unlocated

# When several turns share a line (a rejection notice and the person's feedback), the quote is the person's
# only if their words hold it.
SPEAKER_ORDER = (PERSON, AGENT, TOOL, FILE, AUTO_MEMORY, OUTSIDE, CLAUDE_CODE)
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
GAP = re.compile(r"\s*(?:…|\.\.\.)\s*")
SENTENCE_LIMIT = 600


def norm(text: str) -> str:
    """Text as quotes are compared: NFKC, no Markdown emphasis or backticks, no quote marks, spacing collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("⏎", " ").replace("’", "'")
    text = re.sub(r"[`*\"“”]|^>\s?", "", text, flags=re.M)
    return " ".join(text.casefold().split())


def _find(hay: str, part: str, pos: int) -> int:
    """Where `part` starts in `hay` at or after `pos`, cut at word edges ("entire/checkpoints" is not in
    "entire/checkpoints/v1", nor "make" in "makefile"); -1 when nowhere."""
    at = hay.find(part, pos)
    while at >= 0:
        before = hay[at - 1] if at else " "
        after = hay[at + len(part)] if at + len(part) < len(hay) else " "
        inner_start, inner_end = part[0].isalnum() or part[0] in "_/", part[-1].isalnum() or part[-1] in "_/"
        cut_start = inner_start and (before.isalnum() or before == "_")  # "…/manual_commit_test.go" is whole
        cut_end = inner_end and (after.isalnum() or after in "_/")
        if not cut_start and not cut_end:
            return at
        at = hay.find(part, at + 1)
    return -1


def holds(text: str, quote: str) -> bool:
    """Whether `text` holds `quote` with whole words at its ends; an ellipsis in the quote stands for words
    left out (the parts in order)."""
    hay = norm(text)
    pos = 0
    parts = [norm(p) for p in GAP.split(quote) if norm(p)]
    for part in parts:
        at = _find(hay, part, pos)
        if at < 0:
            return False
        pos = at + len(part)
    return bool(parts)


def sentence_of(text: str, quote: str) -> str:
    """The shortest run of whole sentences of `text` that holds `quote` (at most SENTENCE_LIMIT characters)."""
    parts = [p for p in SENTENCE_BREAK.split(text) if p.strip()]
    best: str | None = None
    for i in range(len(parts)):
        for j in range(i, len(parts)):
            joined = " ".join(parts[i : j + 1])
            if holds(joined, quote):
                if best is None or len(joined) < len(best):
                    best = joined
                break
    found = (best or quote).strip()
    return found if len(found) <= SENTENCE_LIMIT else found[: SENTENCE_LIMIT - 1] + "…"


def following(text: str, sentence: str, count: int = 2) -> str:
    """The sentence and up to `count` sentences after it in the same turn (what it goes on to say)."""
    parts = [p for p in SENTENCE_BREAK.split(text) if p.strip()]
    for i in range(len(parts)):
        if holds(" ".join(parts[i:]), sentence) and not holds(" ".join(parts[i + 1 :]), sentence):
            return " ".join(parts[i : i + 1 + count])
    return sentence


@dataclass(frozen=True)
class Located:
    """A quote found in the record: the turn that holds it, its whole sentence, and the session's place."""

    quote: Quote
    turn: Turn
    sentence: str
    session: SessionRecord
    order: int  # the session's place among those read, oldest first

    @property
    def position(self) -> tuple[int, int]:
        return self.order, self.turn.line

    @property
    def who(self) -> str:
        if self.turn.speaker == PERSON and self.turn.asked:
            return "the person, answering"
        return self.turn.who

    @property
    def answered(self) -> str:
        """For an answer, what it answers: the agent's words, or for "yes to the first, no to the second" the
        options it picked ("drop the PNG fallback. do not add AVIF output")."""
        return picked_options(self.turn.asked, self.turn.text) or self.turn.asked

    @property
    def context(self) -> str:
        """The sentence, what follows it in its turn, and for an answer what it answers: what a check reads."""
        said = following(self.turn.text, self.sentence)
        return f"{self.answered}\n{said}" if self.turn.asked else said


OPTION = re.compile(r"\((\d)\)\s*(.+?)(?=,?\s*(?:and\s+|or\s+)?\(\d\)|[.?!;](?:\s|$)|$)", re.S)
ORDINALS = {"first": "1", "1st": "1", "one": "1", "second": "2", "2nd": "2", "two": "2", "third": "3", "3rd": "3",
            "three": "3", "fourth": "4", "4th": "4", "four": "4"}  # fmt: skip
PICK = re.compile(
    r"\b(yes|yeah|ok|sure|no|nope|not)\b\s*(?:to|for|on)\s+(?:the\s+|option\s+|number\s+)?"
    r"(first|1st|one|second|2nd|two|third|3rd|three|fourth|4th|four|\d)\b",
    re.I,
)


def picked_options(asked: str, answer: str) -> str:
    """What an answer to numbered options ("(1) drop X, (2) add Y. Want both?") picks, option by option:
    "yes to the first, no to the second" is "drop X. do not add Y"; "" when it picks none by number."""
    options = {n: text.strip() for n, text in OPTION.findall(asked)}
    picked = []
    for m in PICK.finditer(answer):
        text = options.get(ORDINALS.get(m.group(2).casefold(), m.group(2)))
        if text:
            picked.append(text if m.group(1).casefold() not in ("no", "nope", "not") else f"do not {text}")
    return ". ".join(picked)


class Recorded:
    """The sessions a dream reads (oldest first), for locating quotes in them."""

    def __init__(self, sessions: list[SessionRecord]) -> None:
        self.sessions = sessions
        self.by_base = {s.ref_base: s for s in sessions}
        self.by_path = {s.path: s for s in sessions}
        self.order = {s.ref_base: n for n, s in enumerate(sessions)}

    def session_of(self, ref: str) -> SessionRecord:
        source, _, line = ref.rpartition(":")
        if ".." in source.split("/") or "\\" in ref:
            raise Unlocated(f"{ref} leaves the sessions; cite a line of a session this dream reads")
        if source.startswith("auto-memory:"):
            found = self.by_base.get(source)
            if found is None:
                raise Unlocated(f"{ref} is not a file of Claude Code's auto memory for this project")
            return found
        if source.startswith("transcript:"):
            found = self.by_base.get(source)
            if found is None:
                raise Unlocated(
                    f"{ref} is not a session this dream reads (its sessions are listed in the evidence pack)"
                )
            return found
        if source.startswith("sessions/"):
            session = self.by_path.get(source)
            if session is None:
                raise Unlocated(f"{source} is not a session this dream reads")
            if session.source == "transcript":
                raise Unlocated(
                    f"{source} is a summary of transcript `{session.ref_base}`; cite the transcript's line "
                    "(the session file gives it in parentheses)"
                )
            return session
        raise Unlocated(
            f"{ref} is not evidence: quotes come from the sessions (`transcript:<id>:LINE`, or "
            "`sessions/...md:LINE` when the transcript is gone); a topic line is named only in `replaces`, and "
            "CLAUDE.md, README, reports and other files never count"
        )

    def locate(self, q: Quote) -> Located:
        session = self.session_of(q.ref)
        turns = session.at(q.line)
        if not turns:
            raise Unlocated(f"nothing is recorded at {q.ref}; cite the reference the evidence pack prints")
        found = [t for t in turns if holds(t.text, q.quote)]
        if not found:
            asked = next((t for t in turns if t.asked and holds(t.asked, q.quote)), None)
            if asked is not None:
                raise Unlocated(
                    f"the quote {q.quote!r} is what the person was answering, not their words at {q.ref}: cite it at "
                    f"{asked.asked_ref} (whoever said it), and the person's answer at {q.ref} as it stands"
                )
            shown = " | ".join(t.text[:120] for t in turns)
            raise Unlocated(f"the quote {q.quote!r} is not at {q.ref} (it says: {shown!r})")
        # the person's words first, then the most specific turn (a commit message rather than its command)
        turn = min(
            found, key=lambda t: (SPEAKER_ORDER.index(t.speaker) if t.speaker in SPEAKER_ORDER else 9, len(t.text))
        )
        return Located(q, turn, sentence_of(turn.text, q.quote), session, self.order[session.ref_base])

    def later_turns(self, after: tuple[int, int]) -> list[tuple[int, Turn]]:
        """Every turn after a position (session order, line), in every later session."""
        out = []
        for n, s in enumerate(self.sessions):
            if n < after[0]:
                continue
            out += [(n, t) for t in s.turns if (n, t.line) > after]
        return out
