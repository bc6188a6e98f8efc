"""A decoded view of a text for secret detection: JSON and URL escapes undone, positions kept.

A secret shown inside a JSON string or a URL arrives glued to what surrounds it: `\\nghp_...` (a newline
escaped in JSON), `%22ghp_...` (a quote, URL-encoded), `\\"password\\": \\"...\\"` (JSON inside JSON). The
detectors read the view, where those escapes are the characters they stand for, and the spans they find
are mapped back to the original text, so what is replaced is the escaped secret itself.

Decoded: any run of backslashes before `n r t b f` (a line break or tab, however deeply escaped), before a
quote or `/` (that character), `\\uXXXX`; `%XX` for printable ASCII and line breaks (`%2522`, a printable
character encoded twice, too); HTML entities (`&quot;`, `&#34;`). Everything else is copied. One regex pass:
linear time.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_ESCAPE = re.compile(
    r"\\++(?:u[0-9A-Fa-f]{4}|[nrtbf\"'/])?"
    r"|%(?:25){0,4}+(?:[2-7][0-9A-Fa-f]|0[9AaDd])"
    r"|&(?:quot|apos|amp|lt|gt|#[0-9]{1,6}|#[xX][0-9A-Fa-f]{1,6});"
)
_ENTITIES = {"quot": '"', "apos": "'", "amp": "&", "lt": "<", "gt": ">"}
_BREAKS = {"n": "\n", "r": "\n", "t": "\t", "b": " ", "f": " "}


def _decoded(escape: str) -> str:
    """The one character an escape stands for (a space for one that stands for nothing printable)."""
    if escape.startswith("\\"):
        last = escape.lstrip("\\")
        if not last:
            return "\\"
        if last[0] == "u":
            return _printable(int(last[1:], 16))
        return _BREAKS.get(last, last)
    if escape.startswith("%"):
        return _printable(int(escape[-2:], 16))
    name = escape[1:-1]
    if name.startswith("#"):
        return _printable(int(name[2:], 16) if name[1:2] in "xX" else int(name[1:]))
    return _ENTITIES.get(name, " ")


def _printable(code: int) -> str:
    if code in (9, 10, 13):
        return "\n"
    if code < 32 or code == 127 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return " "
    return chr(code)


@dataclass
class View:
    """`text` decoded; `_starts` are the view positions of the decoded escapes, `_origins` where each escape
    starts in the original and `_lengths` how long it is there."""

    text: str
    percent: bool = False  # a `%XX` escape was decoded (a `%` may also belong to a token: read the text too)
    _starts: list[int] = field(default_factory=list)
    _origins: list[int] = field(default_factory=list)
    _lengths: list[int] = field(default_factory=list)

    def start_in_original(self, pos: int) -> int:
        """Where the view character at `pos` begins in the original text."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0:
            return pos
        if self._starts[i] == pos:
            return self._origins[i]
        return self._origins[i] + self._lengths[i] + (pos - self._starts[i] - 1)

    def end_in_original(self, pos: int) -> int:
        """Where the view text before `pos` (an exclusive end) ends in the original text."""
        if pos <= 0:
            return 0
        i = bisect.bisect_right(self._starts, pos - 1) - 1
        if i >= 0 and self._starts[i] == pos - 1:
            return self._origins[i] + self._lengths[i]
        return self.start_in_original(pos - 1) + 1


def decoded_view(text: str) -> View:
    """The view of `text` (the text itself when it holds nothing to decode)."""
    if "\\" not in text and "%" not in text and "&" not in text:
        return View(text)
    parts: list[str] = []
    view = View("")
    copied = 0  # original characters copied so far
    length = 0  # view characters made so far
    for m in _ESCAPE.finditer(text):
        parts.append(text[copied : m.start()])
        length += m.start() - copied
        view._starts.append(length)
        view._origins.append(m.start())
        view._lengths.append(m.end() - m.start())
        parts.append(_decoded(m.group()))
        view.percent = view.percent or m.group().startswith("%")
        length += 1
        copied = m.end()
    parts.append(text[copied:])
    view.text = "".join(parts)
    return view
