"""Text shaping shared by the session digest and its rendering: one-line cuts, code spans, relative paths.

Every item of a compressed session file is one line long and safe in Markdown; these helpers make it so.
"""

from __future__ import annotations

import re

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
