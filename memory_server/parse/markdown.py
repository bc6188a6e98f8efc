"""Parse a memory file into a Document: front matter, title, date, and chunks that follow the Markdown.

A chunk is one block (a paragraph, a list item with its nested lines, a fenced code block, a table, a
quote) under its heading path, with exact 1-based inclusive line numbers into the original file. Blocks
longer than `max_chunk_chars` are split on line boundaries. Headings are not chunks; they travel with
the blocks beneath them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
LIST_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
# Bump when Chunk.embed_text() changes: the indexer then re-embeds every chunk.
EMBED_RECIPE = "2"
EMPHASIS = re.compile(r"\*\*|__")
DATE_PREFIX = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class Chunk:
    """A searchable piece of a memory file. `start_line`/`end_line` are 1-based and inclusive."""

    id: str
    path: str
    layer: str
    start_line: int
    end_line: int
    title: str
    heading: str
    date: str | None
    text: str

    def embed_text(self) -> str:
        """What the embedder sees: the chunk with the context a reader would have (title, heading, date)."""
        context = " > ".join(p for p in (self.title, self.heading) if p)
        prefix = f"{context} ({self.date})" if self.date else context
        body = EMPHASIS.sub("", self.text)  # ** and __ are noise to the tokenizer, not meaning
        return f"{prefix}\n{body}" if prefix else body


@dataclass
class Document:
    path: str
    layer: str
    title: str
    date: str | None
    meta: dict[str, Any]
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)


def split_front_matter(lines: list[str]) -> tuple[dict[str, Any], int, list[str]]:
    """Return (metadata, number of lines the front matter takes, warnings).

    Malformed YAML gives empty metadata and a warning; the body is still indexed.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0, []
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            block = "\n".join(lines[1:i])
            try:
                meta = yaml.safe_load(block) if block.strip() else {}
            except yaml.YAMLError as exc:
                first = str(exc).splitlines()[0] if str(exc) else "parse error"
                return {}, i + 1, [f"front matter is not valid YAML ({first}); indexed without it"]
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                return {}, i + 1, ["front matter is not a mapping; indexed without it"]
            return meta, i + 1, []
    return {}, 0, ["front matter is not closed with '---'; treated as text"]


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


def parse_document(path: str, layer: str, text: str, *, max_chunk_chars: int = 1500) -> Document:
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


def _chunk(path: str, layer: str, s: int, e: int, title: str, heading: str, date: str | None, body: str) -> Chunk:
    digest = hashlib.sha1(f"{path}\0{s}\0{e}\0{body}".encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Chunk(digest, path, layer, s, e, title, heading, date, body)


def _blocks(lines: list[str], start: int):
    """Yield (kind, heading path, start_line, end_line) for each block; kind 'h1' carries a title instead."""
    headings: list[tuple[int, str]] = []
    i = start
    n = len(lines)

    def path() -> str:
        return " > ".join(t for _, t in headings)

    def set_heading(level: int, text: str) -> None:
        while headings and headings[-1][0] >= level:
            headings.pop()
        headings.append((level, text))

    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)
            j = i + 1
            while j < n and not re.match(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", lines[j]):
                j += 1
            end = min(j, n - 1)
            yield "code", path(), i + 1, end + 1
            i = end + 1
            continue
        atx = ATX_HEADING.match(line)
        if atx:
            level, text = len(atx.group(1)), (atx.group(2) or "").strip()
            if level == 1 and not headings:
                yield "h1", text, i + 1, i + 1
            set_heading(level, text)
            i += 1
            continue
        if THEMATIC_BREAK.match(line) and not LIST_ITEM.match(line):
            i += 1
            continue
        if LIST_ITEM.match(line):
            base_indent = len(LIST_ITEM.match(line).group(1))  # type: ignore[union-attr]
            j = i + 1
            while j < n:
                nxt = lines[j]
                if not nxt.strip():
                    # a blank line ends the item unless the next line is indented under it
                    if j + 1 < n and lines[j + 1].strip() and _indent(lines[j + 1]) > base_indent + 1:
                        j += 1
                        continue
                    break
                item = LIST_ITEM.match(nxt)
                if item and len(item.group(1)) <= base_indent:
                    break
                if FENCE.match(nxt) and _indent(nxt) <= base_indent or ATX_HEADING.match(nxt):
                    break
                j += 1
            yield "item", path(), i + 1, j
            i = j
            continue
        kind = "table" if line.lstrip().startswith("|") else "quote" if line.lstrip().startswith(">") else "para"
        j = i + 1
        while j < n and lines[j].strip():
            if FENCE.match(lines[j]) or ATX_HEADING.match(lines[j]):
                break
            if kind == "para" and LIST_ITEM.match(lines[j]) and not THEMATIC_BREAK.match(lines[j]):
                break
            if kind == "para" and SETEXT_UNDERLINE.match(lines[j]) and j == i + 1:
                level = 1 if lines[j].strip().startswith("=") else 2
                text = line.strip()
                if level == 1 and not headings:
                    yield "h1", text, i + 1, i + 1
                set_heading(level, text)
                j = -1
                break
            j += 1
        if j == -1:
            i += 2
            continue
        yield kind, path(), i + 1, j
        i = j


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _split_long(lines: list[str], start: int, end: int, limit: int):
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
