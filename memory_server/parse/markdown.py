"""Parse a memory file into a Document: front matter, title, date, and chunks that follow the Markdown.

A chunk is one block (a paragraph, a list item with its nested lines, a code block, a table, a quote, an
HTML block, a link reference definition) under its heading path, with exact 1-based inclusive line numbers
into the original file. Blocks longer than `max_chunk_chars` are split on line boundaries. Headings are
not chunks; they travel with the blocks beneath them.

The blocks come from markdown-it-py's CommonMark parser (with GFM tables): its block tokens carry `.map`,
the 0-based [start, end) line range of each block. The parser is handed the body lines exactly as
`str.splitlines()` cut them, joined with "\\n", so its line numbers and ours cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from memory_server.files.root import Layer
from memory_server.parse.frontmatter import split_front_matter

__all__ = [
    "FENCE",
    "LIST_ITEM",
    "Chunk",
    "Document",
    "document_date",
    "iso_date",
    "parse_document",
    "split_front_matter",
]

# Line patterns for code that edits a file line by line (dream edits) and needs no full parse. A backtick
# fence's info string cannot contain a backtick (CommonMark 4.5), so "```a``` b" is not a fence.
FENCE = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
LIST_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
DATE_PREFIX = re.compile(r"(\d{4})-(\d{2})-(\d{2})")

# Block structure only: chunks need line ranges, never the inline parse (emphasis, links), which would
# double the time. `inline_definitions` makes link reference definitions tokens with a line range too.
_BLOCKS = MarkdownIt("commonmark", {"inline_definitions": True}).enable("table").disable(["inline", "text_join"])
# Long files are parsed a segment at a time (see _segment_end): the parser's cost per line then stays flat
# instead of growing with the token list it keeps in memory.
SEGMENT_CHARS = 64 * 1024
# Top-level block tokens that are chunks; a top-level list gives one chunk per item instead.
_CHUNK_KINDS = {
    "paragraph_open": "para",
    "fence": "code",
    "code_block": "code",
    "table_open": "table",
    "blockquote_open": "quote",
    "html_block": "html",
    "definition": "para",
}


@dataclass(frozen=True)
class Chunk:
    """A searchable piece of a memory file. `start_line`/`end_line` are 1-based and inclusive."""

    id: str
    path: str
    layer: Layer
    start_line: int
    end_line: int
    title: str
    heading: str
    date: str | None
    text: str


@dataclass
class Document:
    path: str
    layer: str
    title: str
    date: str | None
    meta: dict[str, Any]
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)


def iso_date(value: Any) -> str | None:
    """A YYYY-MM-DD string from a YAML date, datetime or string, else None."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        m = DATE_PREFIX.search(value)
        if m:
            try:
                return dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat()
            except ValueError:
                return None
    return None


def document_date(path: str, layer: str, meta: dict[str, Any]) -> str | None:
    keys = ("updated", "date", "started", "ended") if layer == "topic" else ("started", "date", "ended", "updated")
    for key in keys:
        found = iso_date(meta.get(key))
        if found:
            return found
    return iso_date(PurePosixPath(path).name)


def parse_document(path: str, layer: Layer, text: str, *, max_chunk_chars: int = 1500) -> Document:
    """Parse one memory file's text (already decoded) into a Document with its chunks."""
    lines = text.splitlines()  # handles \n, \r\n and \r; a missing final newline changes nothing
    meta, body_start, warnings = split_front_matter(lines)
    title = str(meta.get("title") or "").strip()
    date = document_date(path, layer, meta)
    blocks = list(_blocks(lines, body_start))
    if not title:
        title = next((h for kind, h, *_ in blocks if kind == "h1"), "") or PurePosixPath(path).stem
    chunks: list[Chunk] = []
    for kind, heading, start, end in blocks:
        if kind == "h1":
            continue
        if heading == title:
            heading = ""
        elif heading.startswith(title + " > "):
            heading = heading[len(title) + 3 :]
        for s, e in _split_long(lines, start, end, max_chunk_chars):
            body = "\n".join(lines[s - 1 : e]).strip("\n")
            if not body.strip():
                continue
            chunks.append(_chunk(path, layer, s, e, title, heading, date, body))
    return Document(path, layer, title, date, meta, chunks, warnings)


def _chunk(path: str, layer: Layer, s: int, e: int, title: str, heading: str, date: str | None, body: str) -> Chunk:
    digest = hashlib.sha1(f"{path}\0{s}\0{e}\0{body}".encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Chunk(digest, path, layer, s, e, title, heading, date, body)


def _blocks(lines: list[str], body_start: int) -> Iterator[tuple[str, str, int, int]]:
    """Yield (kind, heading path, start_line, end_line) for each block, 1-based inclusive and trimmed of
    blank lines; kind 'h1' is the first level-1 heading before any other and carries the title instead."""
    walker = _BlockWalker(lines)
    start, size = body_start, SEGMENT_CHARS
    while start < len(lines):
        end = _segment_end(lines, start, size)
        tokens = _BLOCKS.parse("\n".join(lines[start:end]))
        reopen = _open_at_end(tokens, end - start) if end < len(lines) else None
        if reopen is None:
            yield from walker.walk(tokens, start, end)
            start, size = end, SEGMENT_CHARS
        else:
            # A fence or raw HTML block runs past the cut: keep what came before it and parse again from
            # its first line with twice the room (so a long one costs linear time, not quadratic).
            yield from walker.walk(tokens, start, start + reopen)
            start, size = start + reopen, size * 2


def _segment_end(lines: list[str], start: int, size: int) -> int:
    """Where to stop the parse that begins at `start`: the first line, once about `size` characters are
    behind, that is not blank, starts at column 0 and follows a blank line. At such a line no paragraph,
    list, quote, table or indented code can carry on, so CommonMark starts afresh there; only a fence or a
    raw HTML block (script, pre, style, textarea, comment...) can still be open, which the caller checks."""
    acc = 0
    for i in range(start, len(lines)):
        line = lines[i]
        if acc >= size and line[:1] not in ("", " ", "\t") and not lines[i - 1].strip() and line.strip():
            return i
        acc += len(line) + 1
    return len(lines)


def _open_at_end(tokens: list[Token], length: int) -> int | None:
    """The first line of a top-level fence or HTML block still open at the end of a parsed segment, else None.

    A segment ends with a blank line, so a block that reaches its very end was never closed."""
    for tok in reversed(tokens):
        if tok.level == 0 and tok.map is not None:
            if tok.type in ("fence", "html_block") and tok.map[1] >= length:
                return tok.map[0]
            return None
    return None


class _BlockWalker:
    """Turns the top-level tokens of successive segments into blocks; the heading path carries over."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.headings: list[tuple[int, str]] = []

    def path(self) -> str:
        return " > ".join(t for _, t in self.headings if t)

    def walk(self, tokens: list[Token], offset: int, stop: int) -> Iterator[tuple[str, str, int, int]]:
        """Blocks of tokens parsed from lines[offset:]; only those starting before line `stop`."""
        covered = offset  # lines [offset, covered) belong to a block already seen
        for i, tok in enumerate(tokens):
            if tok.map is None or tok.level > 1:
                continue
            start, end = tok.map[0] + offset, tok.map[1] + offset
            if start >= stop:
                break
            if tok.level == 1:
                if tok.type == "list_item_open":  # an item of a top-level list, nested lists and all
                    yield from self.block("item", start, end)
                continue
            if start > covered:
                # Lines no token claims (markdown-it emits none for them): index them as text, never drop them.
                yield from self.block("para", covered, start)
            covered = max(covered, end)
            kind = _CHUNK_KINDS.get(tok.type)
            if kind is not None:
                yield from self.block(kind, start, end)
            elif tok.type == "heading_open":
                yield from self.heading(int(tok.tag[1:]), _heading_text(tokens[i + 1]), start)
        if stop > covered:
            yield from self.block("para", covered, stop)

    def heading(self, level: int, text: str, start: int) -> Iterator[tuple[str, str, int, int]]:
        """A heading on line `start` (0-based) enters the heading path; the first H1 is a block of its own."""
        if level == 1 and not self.headings:
            yield "h1", text, start + 1, start + 1
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, text))

    def block(self, kind: str, start: int, end: int) -> Iterator[tuple[str, str, int, int]]:
        """The block on lines [start, end) (0-based), as 1-based inclusive lines without its blank edges."""
        lines = self.lines
        while start < end and not lines[start].strip():
            start += 1
        while end > start and not lines[end - 1].strip():
            end -= 1
        if start < end:
            yield kind, self.path(), start + 1, end


def _heading_text(inline: Token) -> str:
    """A heading's text as written; a setext heading's lines joined by spaces."""
    return " ".join(part.strip() for part in inline.content.split("\n"))


def _split_long(lines: list[str], start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """Split lines start..end (1-based inclusive) into runs of at most `limit` characters."""
    size = sum(len(lines[k - 1]) + 1 for k in range(start, end + 1))
    if size <= limit:
        yield start, end
        return
    s, acc = start, 0
    for k in range(start, end + 1):
        width = len(lines[k - 1]) + 1
        if acc and acc + width > limit:
            yield s, k - 1
            s, acc = k, 0
        acc += width
    yield s, end
