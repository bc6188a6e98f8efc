"""Text shaping shared by the session digest and its rendering: one-line cuts, code spans, relative paths.

Every item of a compressed session file is one line long and safe in Markdown; these helpers make it so.
"""

from __future__ import annotations

import re
import unicodedata

# Words that carry no content: dropped from keyword OR queries (never from phrases) and from the content
# words that match a query to a topic or a past query.
STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her hers him his how
    i if in into is it its me my of on or our she so that the their them then there these they this to was we
    were what when where which who whom why will with would you your about after before did does doing just
    also any some than too very s t don not no""".split()
)
# Filler at the start of a request ("ok please now ..."): left out of the slug in a session file's name.
SLUG_FILLER = frozenset(
    "a an the ok okay please now so and or but can could would you i me my we our us to of for in on at with "
    "that this is it be let lets just also then hey hi".split()
)

CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n+")


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, cut at a word boundary near `limit` with an ellipsis."""
    s = " ".join(text.split())
    if len(s) <= limit:
        return s
    cut = s[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut).rstrip(" ,;:") + "…"


def first_sentence(text: str, limit: int) -> str:
    """The first sentence (or line) outside code fences, as one line of at most `limit` characters."""
    first = next((s for s in SENTENCE_END.split(CODE_FENCE.sub(" ", text)) if s.strip()), "")
    return one_line(first, limit)


def code_span(text: str) -> str:
    """A Markdown code span that survives backticks inside it."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def relative_path(path: str, cwd: str | None) -> str:
    """`path` relative to the session's working folder when it lies inside it, else unchanged."""
    if cwd:
        base = cwd.rstrip("/\\")
        for sep in ("/", "\\"):
            if path.startswith(base + sep) and len(path) > len(base) + 1:
                return path[len(base) + 1 :]
    return path


# What must never reach a report, a diff, a topic line or a terminal as written: C0/C1 control characters
# (carriage returns and terminal escapes among them), bidirectional overrides and zero-width characters.
UNSAFE_CHAR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# The start of anything Markdown would read as HTML: a comment, a tag (closed or not), a processing instruction.
HTML_START = re.compile(r"<(?=[!/?A-Za-z])")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# Characters that show nothing but can carry text (Unicode tags, line separators, soft hyphens, variation
# selectors): every format, separator and private-use character beyond the few above.
INVISIBLE_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


def invisible(text: str) -> bool:
    """Whether `text` holds a character that shows nothing (or nothing it means)."""
    return any(unicodedata.category(ch) in INVISIBLE_CATEGORIES for ch in text if ord(ch) > 0x7F)


def as_data(text: str, *, multiline: bool = False, markdown: bool = True) -> str:
    """Text from a session, a file or a file name, made safe to show as data (the one escaping function).

    Control characters (carriage returns, terminal escapes), bidirectional overrides and zero-width characters
    become visible escapes (`\\x1b`, `\\u202e`); the start of an HTML comment or tag becomes `\\<` (literal in
    Markdown, and it cannot hide what follows) unless not `markdown` (a terminal, or a fenced code block, where
    `<` is already literal and a backslash would misquote the text); a newline becomes `\\n` unless
    `multiline`. Nothing else changes, so the result still reads as the original and escaping twice only adds
    backslashes before `<`.
    """
    text = text.replace("\r\n", "\n")
    if not multiline:
        text = text.replace("\n", "\\n")
    text = UNSAFE_CHAR.sub(_visible, text)
    if invisible(text):
        text = "".join(
            _visible_char(ch) if ord(ch) > 0x7F and unicodedata.category(ch) in INVISIBLE_CATEGORIES else ch
            for ch in text
        )
    return HTML_START.sub(r"\\<", text) if markdown else text


def _visible_char(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
