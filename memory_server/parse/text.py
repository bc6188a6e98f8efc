"""Text shaping shared by the session digest and its rendering: one-line cuts, code spans, relative paths.

Every item of a compressed session file is one line long and safe in Markdown; these helpers make it so.
"""

from __future__ import annotations

import re

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
