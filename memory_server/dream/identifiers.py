"""Identifiers in prose (names of functions, types, files, branches, settings), and whether they exist.

`identifiers(text)` finds what looks like code: a backticked span without spaces, a CamelCase or
snake_case word, a dotted name (`settings.Load`), a path (`cmd/entire/cli`), an ALL_CAPS name.
Whether a name exists in the project, and where, is `names.py`'s question.
"""

from __future__ import annotations

import re

BACKTICKED = re.compile(r"`([^`\s][^`]*?)`")
CODE_WORD = re.compile(
    r"(?<![\w/.-])(?:"
    r"[A-Za-z_][\w-]*(?:[./][\w-]+)+/?"  # dotted names and paths
    r"|[a-z]+(?:[A-Z][a-z0-9]+)+\w*"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\w*"  # CamelCase
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # ALL_CAPS
    r"|[A-Z]{2,}-\d+"  # tickets: ENT-241
    r")(?:\(\))?(?![\w])"
)
COMMON = frozenset({"e.g", "i.e", "etc", "vs"})


def _plain(token: str) -> str:
    token = token.strip().rstrip(".,:;")
    return token[:-2] if token.endswith("()") else token


def identifiers(text: str) -> list[str]:
    """Code-like names in `text`, in order of first appearance, without duplicates."""
    found: dict[str, None] = {}
    for span in BACKTICKED.findall(text):
        if " " not in span.strip() and len(span.strip()) > 1:
            found.setdefault(_plain(span), None)
    for word in CODE_WORD.findall(BACKTICKED.sub(" ", text)):
        word = _plain(word)
        if word.casefold() not in COMMON and not re.fullmatch(r"[\d.]+", word) and "://" not in word:
            found.setdefault(word, None)
    return [w for w in found if len(w) > 2]


def claimed_identifiers(statement: str) -> list[str]:
    """The names a statement says exist: its backticked code-like spans (commands with spaces are not names)."""
    out: dict[str, None] = {}
    for span in BACKTICKED.findall(statement):
        span = span.strip()
        if " " in span or len(span) < 3 or "=" in span or span.startswith(("-", "$", "<")) or "://" in span:
            continue
        out.setdefault(_plain(span), None)
    return list(out)
