"""Bound what one transcript record keeps: a huge text becomes its head and tail, redacted before the cut.

A tool's output, a file written or a pasted log can run to tens of megabytes in one JSONL record; nothing
built from a transcript needs more than its beginning and its end (the first lines for search, the failing
line at the end of a traceback). Redaction must still see the text whole around every cut, or a secret
across a cut would keep the half redaction did not recognise. So, for one record:

    cuts = cut_long_strings(rec)    # before redaction
    redactor.record(rec)            # redaction sees generous windows around each cut
    trim_cuts(rec, cuts)            # after it: drop a margin on each side of each cut

`cut_long_strings` replaces every string longer than LONG_STRING characters by its first and last WINDOW
characters around CUT_MARK. What the removed middle's `<private>` tags did to the nesting is put back as
tags right after the mark, so a span opened in the middle still hides the kept tail up to its close.
`trim_cuts` then removes MARGIN characters on each side of the mark: whatever is left of a secret that
straddled a window's edge lies within that margin. A cut text whose mark redaction hid (a private span or a
key block across the cut) is replaced by `[REDACTED]` whole.
"""

from __future__ import annotations

from typing import Any

from memory_server.sessions.redact import REDACTED, private_tags

LONG_STRING = 100_000  # longer than any tool output Claude Code stores whole (it cuts Bash output at 30,000)
WINDOW = 40_000  # characters kept from each end before redaction
MARGIN = 8_000  # characters dropped beside the mark after redaction: longer than any secret
CUT_MARK = "\n[… cut …]\n"
_TAG_REACH = 1_000  # a `<private …>` tag straddling a window's edge starts at most this far before it

Path = tuple[str | int, ...]


def cut_long_strings(rec: Any) -> list[Path]:
    """Cut every string in a parsed record longer than LONG_STRING in place; return where the cuts are."""
    cuts: list[Path] = []
    _walk(rec, (), cuts)
    return cuts


def _walk(value: Any, path: Path, cuts: list[Path]) -> Any:
    if isinstance(value, str):
        if len(value) > LONG_STRING:
            cuts.append(path)
            return cut_text(value)
        return value
    if isinstance(value, dict):
        for key in list(value):
            value[key] = _walk(value[key], (*path, key), cuts)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _walk(item, (*path, i), cuts)
    return value


def cut_text(text: str) -> str:
    """The first and last WINDOW characters of `text` around CUT_MARK, with the middle's private nesting kept."""
    head_end, tail_start = WINDOW, len(text) - WINDOW
    tags = private_tags(text, max(0, head_end - _TAG_REACH), min(len(text), tail_start + _TAG_REACH))
    for start, end, _kind in tags:  # never cut through a tag: the whole tag goes to the middle
        if start < head_end < end:
            head_end = start
        if start < tail_start < end:
            tail_start = end
    closes = opens = 0
    for start, end, kind in tags:
        if start >= head_end and end <= tail_start:
            if kind > 0:
                opens += 1
            elif kind < 0:
                if opens:
                    opens -= 1
                else:
                    closes += 1
    # A depth d before the middle becomes max(d - closes, 0) + opens after it: these tags do the same.
    nesting = "</private>" * closes + "<private>" * opens
    return text[:head_end] + CUT_MARK + nesting + text[tail_start:]


def trim_cuts(rec: Any, cuts: list[Path]) -> None:
    """After redaction: drop MARGIN characters on each side of each cut's mark (see the module docstring)."""
    for path in cuts:
        parent: Any = rec
        try:
            for key in path[:-1]:
                parent = parent[key]
            value = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(value, str) or value == REDACTED:
            continue
        pieces = value.split(CUT_MARK)  # the text may have held the mark already: trim beside each one
        if len(pieces) == 1:
            parent[path[-1]] = REDACTED  # the mark was hidden: where a half secret could sit is unknown
            continue
        last = len(pieces) - 1
        parent[path[-1]] = CUT_MARK.join(
            piece[(MARGIN if i else 0) : (max(0, len(piece) - MARGIN) if i < last else len(piece))]
            for i, piece in enumerate(pieces)
        )
