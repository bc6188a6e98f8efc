"""Keep secrets and private text out of memory.

Stateless, for any one text:

- `redact_secrets(text)` replaces credentials with `[REDACTED]`, using three tables (`secret_formats.py`):
  token formats recognised by their shape (`sk_live_…`, `ghp_…`, `SG.….…`, webhook URLs, PEM blocks, …),
  command lines that carry a secret (`mysql -pX`, `curl -u user:pass`, `sshpass -p X`, `redis-cli -a X`,
  `aws configure set aws_secret_access_key X`, `.netrc`, `.pgpass` lines), and values assigned to
  secret-looking names (`DB_PASSWORD=…`, `"auth": "…"`, `GITHUB_PAT=…`, a quoted passphrase whole).
  A guard leaves ordinary code alone: `password = input('Password: ')`, `token = os.environ[...]`,
  `PWD=/home/dev/acme`, placeholders (`$VAR`, `<token>`, `***`), numbers and values already redacted.
- `drop_private(text)` removes `<private …>…</private>` (attributes allowed, nesting counted); an unclosed
  tag hides the rest of the text.
- `clean(text)` does both, private text first. `redact_for_report(text)` is the one call for anything a
  report or log copies from elsewhere (past queries, evidence): the same as `clean`.

Stateful, for one session read in order: `SessionRedactor`. A `<private>` opened in one message and closed
later hides everything in between, and any later repetition of private text (the whole span, one of its
lines, or a distinctive word of it such as a code name or a number) is replaced by `[private]`.
`SessionRedactor.record(rec)` cleans one parsed JSONL record in place (every string in it, with the key a
value sits under taken into account), so everything built from the record later (summaries, the index,
the transcript layer) only ever sees clean text: redaction happens before any cut or `json.dumps`.

Redaction errs towards hiding: a value that merely looks like a secret may be hidden too.
"""

from __future__ import annotations

import re
from typing import Any

from memory_server.sessions.secret_formats import (
    ASSIGNMENT,
    ASSIGNMENT_NEEDLES,
    COMMAND_PATTERNS,
    KEYED_NAME,
    PROSE_SECRET,
    REDACTED,
    SECRET_NAME_RE,
    TOKEN_PATTERN,
    is_ordinary_value,
    is_placeholder,
)

__all__ = [
    "PRIVATE_MARK",
    "REDACTED",
    "SessionRedactor",
    "clean",
    "drop_private",
    "private_tags",
    "redact_for_report",
    "redact_secrets",
]

PRIVATE_MARK = "[private]"

_PRIVATE_TAG = re.compile(r"(?i)<(/?)private(?:\s[^<>]{0,400})?\s*(/?)>")
_QUICK = re.compile(r"(?i)private")


# -- secrets ---------------------------------------------------------------------------------------------


def _assignments(text: str) -> str:
    """Redact the values assigned to secret-looking names (`DB_PASSWORD=…`, `"auth": "…"`)."""
    out: list[str] = []
    pos = 0
    for m in ASSIGNMENT.finditer(text):
        if m.start() < pos or not SECRET_NAME_RE.fullmatch(m.group("name")):
            continue
        group = "qvalue" if m.group("q") else "bare"
        value = m.group(group)
        if is_ordinary_value(m.group("name"), m.group("sep"), m.group("q") or "", value, text, m.start(group)):
            continue
        out += [text[pos : m.start(group)], REDACTED]
        pos = m.end(group)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _command(m: re.Match[str]) -> str:
    value = m.group("value")
    if not value or value.startswith("[REDACTED") or value.startswith("[private") or is_placeholder(value):
        return m.group(0)
    return m.group(0)[: m.start("value") - m.start()] + REDACTED + m.group(0)[m.end("value") - m.start() :]


def redact_secrets(text: str) -> str:
    """Replace tokens, command-line secrets, secret assignments, URL passwords and key blocks with `[REDACTED]`."""
    if not text or not isinstance(text, str):
        return text
    text = TOKEN_PATTERN.sub(REDACTED, text)
    low = text.lower()
    for pattern, needles in COMMAND_PATTERNS:
        if not needles or any(n in low for n in needles):
            text = pattern.sub(_command, text)
    if any(n in low for n in ASSIGNMENT_NEEDLES):
        text = _assignments(text)
        text = PROSE_SECRET.sub(_command, text)
    return text


# -- private text ------------------------------------------------------------------------------------------


def _split_private(text: str, depth: int) -> tuple[str, list[str], int]:
    """(visible text, hidden spans, depth at the end) for `text` entered at private-nesting `depth`."""
    if depth == 0 and ("<" not in text or not _QUICK.search(text)):
        return text, [], 0
    out: list[str] = []
    hidden: list[str] = []
    pos = 0
    for m in _PRIVATE_TAG.finditer(text):
        closing, self_closing = m.group(1) == "/", m.group(2) == "/"
        if depth == 0:
            out.append(text[pos : m.start()])
        else:
            hidden.append(text[pos : m.start()])
        if self_closing:
            pass
        elif closing:
            depth = max(0, depth - 1)  # a stray closing tag is dropped, nothing else
        else:
            depth += 1
        pos = m.end()
    (hidden if depth else out).append(text[pos:])
    return "".join(out), [h for h in hidden if h.strip()], depth


def private_tags(text: str, start: int, end: int) -> list[tuple[int, int, int]]:
    """The `<private>` tags within text[start:end]: (start, end, +1 opening / -1 closing / 0 self-closing).
    For cutting a long text before it is redacted: what a removed middle did to the nesting is put back."""
    out: list[tuple[int, int, int]] = []
    for m in _PRIVATE_TAG.finditer(text, start, end):
        out.append((m.start(), m.end(), 0 if m.group(2) == "/" else -1 if m.group(1) == "/" else 1))
    return out


def drop_private(text: str) -> str:
    """Remove `<private …>…</private>` spans (nested spans count), and everything after an unclosed one."""
    if not text:
        return text
    return _split_private(text, 0)[0]


def clean(text: str) -> str:
    """Drop `<private>` text, then redact secrets: what may be written into memory."""
    return redact_secrets(drop_private(text))


def redact_for_report(text: str) -> str:
    """What a report or log may copy from user input (a past query, a quoted line): private text and secrets out."""
    return clean(text)


# -- one session, read in order -----------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+\-]*[A-Za-z0-9]|[A-Za-z0-9]")
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
    """

    def __init__(self) -> None:
        self._depth = 0  # open <private> spans carried over from earlier messages
        self._phrases: set[str] = set()
        self._words: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    @property
    def private_open(self) -> bool:
        """True while a `<private>` span opened earlier is still unclosed."""
        return self._depth > 0

    def text(self, text: str, *, carries: bool = True) -> str:
        """One text, cleaned. With `carries`, a span left open hides the texts that follow until it closes
        (a message the person wrote); without it, an unclosed span hides only the rest of this text (tool
        output, file contents: a stray tag there must not hide the rest of the session)."""
        if not isinstance(text, str) or not text:
            return text
        depth = self._depth if carries else 0
        visible, hidden, depth = _split_private(text, depth)
        if carries:
            self._depth = depth
        for span in hidden:
            self._learn(span)
        visible = self._drop_repeats(visible)
        return redact_secrets(visible)

    def _learn(self, span: str) -> None:
        added = False
        for piece in [span, *span.splitlines()]:
            phrase = " ".join(piece.split())
            if len(phrase) >= _MIN_PHRASE and phrase.lower() not in self._phrases:
                self._phrases.add(phrase.lower())
                added = True
        for word in _WORD.findall(span):
            if _distinctive(word) and word.lower() not in self._words:
                self._words.add(word.lower())
                added = True
        if added:
            self._pattern = None

    def _drop_repeats(self, text: str) -> str:
        if not self._phrases and not self._words:
            return text
        if self._pattern is None:
            parts = [r"\s+".join(map(re.escape, p.split())) for p in sorted(self._phrases, key=len, reverse=True)]
            parts += [re.escape(w) for w in sorted(self._words, key=len, reverse=True)]
            self._pattern = re.compile(r"(?i)(?<![A-Za-z0-9])(?:" + "|".join(parts) + r")(?![A-Za-z0-9])")
        return self._pattern.sub(PRIVATE_MARK, text)

    def record(self, rec: Any) -> Any:
        """Clean a transcript record (a parsed JSONL line) in place and return it.

        Message text (a string `message.content`, or a `text` block) may open a span that carries over to
        later messages; every other string is cleaned on its own. A value under a secret-looking key
        (`{"password": "…"}` in a tool's input) is redacted whole."""
        if not isinstance(rec, dict):
            return self._walk(rec, None)
        msg = rec.get("message")
        if isinstance(msg, dict):
            content = msg.get("content")
            if isinstance(content, str):
                msg["content"] = self.text(content)
            elif isinstance(content, list):
                for i, block in enumerate(content):
                    if isinstance(block, str):
                        content[i] = self.text(block)
                    elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                        block["text"] = self.text(block["text"])
        for key in list(rec):
            if key == "message" and isinstance(msg, dict):
                for mkey in list(msg):
                    if mkey != "content" or not isinstance(msg[mkey], str):
                        msg[mkey] = self._walk(msg[mkey], mkey, skip_text_blocks=mkey == "content")
            else:
                rec[key] = self._walk(rec[key], key)
        return rec

    def _walk(self, value: Any, key: str | None, *, skip_text_blocks: bool = False) -> Any:
        if isinstance(value, str):
            keyed = key is not None and KEYED_NAME.search(key)
            if keyed and value and not is_ordinary_value(key or "", "=", '"', value, "", 0):
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
