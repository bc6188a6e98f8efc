"""Keep secrets and private text out of memory, in linear time whatever the text.

Stateless, for any one text:

- `redact_secrets(text)` replaces credentials with `[REDACTED]`. The text is read through a decoded view
  (`secret_view.py`: JSON and URL escapes undone, so `\\nghp_...` and `%22ghp_...` are found), and these
  detectors each return spans of it:
  token formats by shape (`secret_formats.py`), private key blocks and URL passwords (`secret_blocks.py`),
  command lines (`secret_commands.py`), values given to credential names in any syntax and random-looking
  tokens near credential words (`secret_context.py`, with the word lists of `secret_words.py`). Hashes,
  UUIDs, commit ids, digests and ordinary code (`password = input('Password: ')`, `PWD=/home/dev`) stay.
- `drop_private(text)` removes `<private …>…</private>` (attributes allowed, nesting counted); an unclosed
  tag hides the rest of the text.
- `clean(text)` does both, private text first; `clean_keeping_lines(text)` the same, with every line where it
  was (for files read by line number). `redact_for_report(text)` is the one call for anything a report or log
  copies from elsewhere (past queries, evidence): the same as `clean`.

Every detector is linear by construction: one regex pass whose every quantifier is bounded (the long ones
possessive), or a scan that resumes after what it read; no pattern can backtrack more than a bounded
amount at one position. As a last resort, a text whose redaction still takes longer than its budget
(`BUDGET_SECONDS` plus `BUDGET_PER_CHAR` per character, in CPU time of the thread doing it, so a busy machine
does not count) is replaced whole by `TOO_COSTLY`, and
`budget_fired()` counts it (status shows it); the benchmark `bench/redaction_timing.py` shows it never
fires on adversarial text.

Stateful, for one session read in order: `SessionRedactor`. A `<private>` opened in a message the person
wrote and closed later hides everything in between, and any later repetition of that private text (the
whole span, one of its lines, or a distinctive word of it) is replaced by `[private]`. An unclosed tag in
tool output or a file hides only the rest of that text and teaches nothing. `SessionRedactor.record(rec)`
cleans one parsed JSONL record in place (every string in it, with the key a value sits under taken into
account), so everything built from the record later (summaries, the index, the transcript layer) only ever
sees clean text: redaction happens before any cut or `json.dumps`.

Redaction errs towards hiding: a value that merely looks like a secret may be hidden too.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from memory_server.sessions.secret_blocks import key_block_spans, url_credential_spans
from memory_server.sessions.secret_commands import command_spans
from memory_server.sessions.secret_context import context_spans
from memory_server.sessions.secret_formats import REDACTED, TOKEN, glued_token_spans
from memory_server.sessions.secret_view import decoded_view
from memory_server.sessions.secret_words import is_ordinary_value, name_kind

__all__ = [
    "PRIVATE_MARK",
    "REDACTED",
    "TOO_COSTLY",
    "SessionRedactor",
    "budget_fired",
    "clean",
    "clean_keeping_lines",
    "drop_private",
    "private_tags",
    "redact_for_report",
    "redact_secrets",
    "secret_spans",
]

PRIVATE_MARK = "[private]"
TOO_COSTLY = "[REDACTED: text too costly to check for secrets]"
BUDGET_SECONDS = 5.0  # CPU seconds of the redacting thread (other threads and processes do not count)
BUDGET_PER_CHAR = 50e-6  # 5 s more per 100,000 characters: linear work needs a tenth of it

Span = tuple[int, int]

_PRIVATE_TAG = re.compile(r"(?i)<(/?)private(?:\s[^<>]{0,400}+)?>")
_QUICK = re.compile(r"(?i)private")

_fired = 0
_fired_lock = threading.Lock()


def budget_fired() -> int:
    """How many texts this process replaced whole because checking them took longer than their budget."""
    return _fired


# -- secrets ---------------------------------------------------------------------------------------------


def _tokens(text: str) -> list[Span]:
    spans = [m.span() for m in TOKEN.finditer(text)]
    spans.extend(glued_token_spans(text))
    return spans


_DETECTORS: tuple[Callable[[str], list[Span]], ...] = (
    key_block_spans,
    url_credential_spans,
    _tokens,
    command_spans,
    context_spans,
)
# What a `%` can be part of (a token's alphabet, a password in a URL or on a command line): read raw too.
_RAW_TOO = frozenset((url_credential_spans, _tokens, command_spans))


def secret_spans(text: str) -> list[Span] | None:
    """The spans of `text` that hold secrets, merged and sorted; None when checking ran over its budget."""
    started = time.thread_time()
    budget = BUDGET_SECONDS + BUDGET_PER_CHAR * len(text)
    view = decoded_view(text)
    found: list[Span] = []
    raw: list[Span] = []
    for detect in _DETECTORS:
        found.extend(detect(view.text))
        if view.percent and detect in _RAW_TOO:
            raw.extend(detect(text))
        if time.thread_time() - started > budget:
            return None
    spans = sorted([(view.start_in_original(s), view.end_in_original(e)) for s, e in found if e > s] + raw)
    merged: list[Span] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def redact_secrets(text: str) -> str:
    """Replace every secret in `text` with `[REDACTED]` (see the module docstring)."""
    global _fired
    if not text or not isinstance(text, str):
        return text
    spans = secret_spans(text)
    if spans is None:
        with _fired_lock:
            _fired += 1
        return TOO_COSTLY
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for s, e in spans:
        out += [text[pos:s], REDACTED]
        pos = e
    out.append(text[pos:])
    return "".join(out)


# -- private text ------------------------------------------------------------------------------------------


class _Split:
    """What `_split_private` finds in one text: what stays visible, the private spans that closed in it
    (with any part carried from earlier texts), and the part of a span still open at its end."""

    def __init__(self) -> None:
        self.visible: list[str] = []
        self.closed: list[str] = []
        self.open: list[str] = []


def _split_private(text: str, depth: int, carried: list[str] | None = None) -> tuple[_Split, int]:
    out = _Split()
    if depth == 0 and ("<" not in text or not _QUICK.search(text)):
        out.visible.append(text)
        return out, 0
    current: list[str] = [*carried, "\n"] if depth and carried else []  # one line per message
    pos = 0
    for m in _PRIVATE_TAG.finditer(text):
        (current if depth else out.visible).append(text[pos : m.start()])
        pos = m.end()
        if m.group().endswith("/>"):
            continue
        if m.group(1) == "/":
            if depth == 1:
                out.closed.append("".join(current))
                current = []
            depth = max(0, depth - 1)  # a stray closing tag is dropped, nothing else
        else:
            depth += 1
    (current if depth else out.visible).append(text[pos:])
    out.open = current if depth else []
    return out, depth


def private_tags(text: str, start: int, end: int) -> list[tuple[int, int, int]]:
    """The `<private>` tags within text[start:end]: (start, end, +1 opening / -1 closing / 0 self-closing).
    For cutting a long text before it is redacted: what a removed middle did to the nesting is put back."""
    out: list[tuple[int, int, int]] = []
    for m in _PRIVATE_TAG.finditer(text, start, end):
        out.append((m.start(), m.end(), 0 if m.group().endswith("/>") else -1 if m.group(1) == "/" else 1))
    return out


def drop_private(text: str) -> str:
    """Remove `<private …>…</private>` spans (nested spans count), and everything after an unclosed one."""
    if not text:
        return text
    return "".join(_split_private(text, 0)[0].visible)


def clean(text: str) -> str:
    """Drop `<private>` text, then redact secrets: what may be written into memory."""
    return redact_secrets(drop_private(text))


def redact_for_report(text: str) -> str:
    """What a report or log may copy from user input (a past query, a quoted line): private text and secrets out."""
    return clean(text)


def clean_keeping_lines(text: str) -> str:
    """`clean`, line for line: a file read by line numbers (Claude Code's auto memory) keeps every line where it
    was. A secret over several lines becomes `[REDACTED]` and its line breaks; a `<private>` span over several
    lines empties each line it covers."""
    if not text:
        return text
    spans = secret_spans(text)
    if spans is None:
        return "\n" * text.count("\n") + TOO_COSTLY
    parts: list[str] = []
    pos = 0
    for s, e in spans:
        parts += [text[pos:s], REDACTED + "\n" * text.count("\n", s, e)]
        pos = e
    parts.append(text[pos:])
    out: list[str] = []
    depth = 0
    for line in "".join(parts).split("\n"):
        out.append(drop_private("<private>" * depth + line))
        for _start, _end, kind in private_tags(line, 0, len(line)):
            depth = max(0, depth + kind)
    return "\n".join(out)


# -- one session, read in order -----------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.@+\-]{0,98}[A-Za-z0-9])?")
_COMMON = frozenset(
    """about above after again against also always another anyone anything because before being below between
    both cannot could course database does doing done down during each either else enough even ever every
    first from have having here into just know like make many maybe more most much must never next none nothing
    only other over password please really remember same secret should since some something still such than
    that their them then there these they thing think this those though through token under until very want
    what when where which while will with without would your yours note notes private keep tell anybody don't
    """.split()
)
_MIN_PHRASE = 6
_PART_SEP = re.compile(r"[_.@+\-]")
_MAX_PARTS = 8  # a learned word is looked for as up to this many parts of a longer word
MAX_LEARNED_WORDS = 2000
MAX_LEARNED_PHRASES = 500
_PHRASE_WORDS = 40  # a longer private line is remembered by its distinctive words only
_CARRIED_CHARS = 200_000  # of a span still open, what is kept to learn from once it closes


def _distinctive(word: str) -> bool:
    """A word of private text worth hiding wherever it comes back: a code name, a number, an identifier."""
    if len(word) < 3 or word.lower() in _COMMON:
        return False
    has_digit = any(c.isdigit() for c in word)
    if has_digit:
        return len(word) >= 3 and not word.isdigit() or len(word) >= 4
    if len(word) < 4:
        return False
    return any(c.isupper() for c in word) or any(c in "_.@+-" for c in word) or len(word) >= 8


class SessionRedactor:
    """Cleans the texts of one session in order: secrets, `<private>` spans that may cross messages, and
    later repetitions of private text.

        redactor = SessionRedactor()
        for record in records:          # the session's JSONL records, in file order
            redactor.record(record)     # every string in it cleaned in place
        redactor.text("a later text")   # or one text at a time

    What it learns is bounded (MAX_LEARNED_WORDS, MAX_LEARNED_PHRASES), and finding repetitions is one pass
    over a text's words with set lookups, so a session full of private text costs no more than any other.
    """

    def __init__(self) -> None:
        self._depth = 0  # open <private> spans carried over from earlier messages
        self._carried: list[str] = []  # the text of that open span so far
        self._words: set[str] = set()
        self._phrases: dict[str, list[tuple[str, ...]]] = {}  # first word -> phrases (word tuples), longest first
        self._phrase_count = 0

    @property
    def private_open(self) -> bool:
        """True while a `<private>` span opened earlier is still unclosed."""
        return self._depth > 0

    def text(self, text: str, *, carries: bool = True) -> str:
        """One text, cleaned. With `carries`, a span left open hides the texts that follow until it closes
        (a message the person wrote); without it, an unclosed span hides only the rest of this text (tool
        output, file contents: a stray tag there must not hide the rest of the session) and is not learned."""
        if not isinstance(text, str) or not text:
            return text
        depth = self._depth if carries else 0
        split, depth = _split_private(text, depth, self._carried if carries else None)
        if carries:
            self._depth = depth
            self._carried = _bounded(split.open)
        for span in split.closed:
            self._learn(span)
        visible = self._drop_repeats("".join(split.visible))
        return redact_secrets(visible)

    def _learn(self, span: str) -> None:
        for piece in [span, *span.splitlines()[:200]]:
            words = tuple(w.lower() for w in _WORD.findall(piece[:4000]))
            if len(" ".join(words)) >= _MIN_PHRASE and len(words) <= _PHRASE_WORDS:
                self._add_phrase(words)
        for word in _WORD.findall(span):
            if len(self._words) >= MAX_LEARNED_WORDS:
                break
            if _distinctive(word):
                self._words.add(word.lower())

    def _add_phrase(self, words: tuple[str, ...]) -> None:
        known = self._phrases.setdefault(words[0], [])
        if words in known or self._phrase_count >= MAX_LEARNED_PHRASES:
            return
        known.append(words)
        known.sort(key=len, reverse=True)
        self._phrase_count += 1

    def _drop_repeats(self, text: str) -> str:
        if not self._words and not self._phrases:
            return text
        found = list(_WORD.finditer(text))
        words = [m.group().lower() for m in found]
        spans: list[Span] = []
        i = 0
        while i < len(found):
            n = self._phrase_at(text, found, words, i)
            if n:
                spans.append((found[i].start(), found[i + n - 1].end()))
                i += n
                continue
            spans.extend(self._learned_in(found[i].start(), words[i]))
            i += 1
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for s, e in spans:
            out += [text[pos:s], PRIVATE_MARK]
            pos = e
        out.append(text[pos:])
        return "".join(out)

    def _learned_in(self, at: int, word: str) -> list[Span]:
        """Learned words inside one word of a text, whole parts only (`bluefinch` in `bluefinch-notes.md`)."""
        if word in self._words:
            return [(at, at + len(word))]
        cuts = [0, *(m.end() for m in _PART_SEP.finditer(word)), len(word) + 1]
        if len(cuts) == 2:
            return []
        spans: list[Span] = []
        i = 0
        while i < len(cuts) - 1:
            for j in range(min(len(cuts) - 1, i + _MAX_PARTS), i, -1):
                if word[cuts[i] : cuts[j] - 1] in self._words:
                    spans.append((at + cuts[i], at + cuts[j] - 1))
                    i = j - 1
                    break
            i += 1
        return spans

    def _phrase_at(self, text: str, found: list[re.Match[str]], words: list[str], i: int) -> int:
        """How many words from word i make up a learned phrase (0: none); only whitespace between them."""
        for phrase in self._phrases.get(words[i], ()):
            n = len(phrase)
            if tuple(words[i : i + n]) == phrase and all(
                not text[found[j].end() : found[j + 1].start()].strip() for j in range(i, i + n - 1)
            ):
                return n
        return 0

    def record(self, rec: Any) -> Any:
        """Clean a transcript record (a parsed JSONL line) in place and return it.

        Message text (a string `message.content`, or a `text` block) may open a span that carries over to
        later messages; every other string is cleaned on its own. A value under a secret-looking key
        (`{"password": "…"}` in a tool's input) is redacted whole."""
        if not isinstance(rec, dict):
            return self._walk(rec, None)
        msg = rec.get("message")
        if isinstance(msg, dict):
            self._message_text(msg)
        for key in list(rec):
            if key == "message" and isinstance(msg, dict):
                for mkey in list(msg):
                    if mkey != "content" or not isinstance(msg[mkey], str):
                        msg[mkey] = self._walk(msg[mkey], mkey, skip_text_blocks=mkey == "content")
            else:
                rec[key] = self._walk(rec[key], key)
        return rec

    def _message_text(self, msg: dict[str, Any]) -> None:
        """Clean a message's text in place, in order: a string `content`, or its `text` blocks."""
        content = msg.get("content")
        if isinstance(content, str):
            msg["content"] = self.text(content)
        elif isinstance(content, list):
            for i, block in enumerate(content):
                if isinstance(block, str):
                    content[i] = self.text(block)
                elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                    block["text"] = self.text(block["text"])

    def _walk(self, value: Any, key: str | None, *, skip_text_blocks: bool = False) -> Any:
        if key in _METADATA_KEYS and isinstance(value, str) and len(value) <= 200:
            return value  # ids, times, versions Claude Code writes: no person's text, nothing to check
        if isinstance(value, str):
            if key is not None and value and name_kind(key) == "strong":
                if not is_ordinary_value(key, value, quoted=True):
                    return REDACTED
            return self.text(value, carries=False)
        if isinstance(value, list):
            for i, item in enumerate(value):
                is_text = isinstance(item, str) or (isinstance(item, dict) and item.get("type") == "text")
                if skip_text_blocks and is_text:
                    continue  # message text, cleaned already
                value[i] = self._walk(item, key)
            return value
        if isinstance(value, dict):
            for k in list(value):
                value[k] = self._walk(value[k], k if isinstance(k, str) else None)
            return value
        return value


# Record fields Claude Code fills with its own identifiers, times and enums (never a person's or tool's text).
_METADATA_KEYS = frozenset(
    """uuid parentUuid leafUuid logicalParentUuid sessionId timestamp version gitBranch type userType requestId id
    tool_use_id sourceToolUseID agentId role model stop_reason stop_sequence subtype level isSidechain isMeta
    isCompactSummary""".split()
)


def _bounded(pieces: list[str]) -> list[str]:
    """The open span's text kept for learning, cut to _CARRIED_CHARS (the span still hides it all)."""
    joined = "".join(pieces)
    return [joined[:_CARRIED_CHARS]] if joined else []
