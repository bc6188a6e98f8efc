"""What `read_memory` and `list_topics` serve (the text behind a hit, the topics with their front matter), and
the MCP resources: MEMORY.md and the topics, each read whole as the file holds it.

The `Memory` facade (api.py) calls these; they only read (memory files only, streamed and bounded).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from memory_server.errors import FileSkipped, MemoryServerError, NotFoundError, PathRefusedError
from memory_server.files.paths import confine_memory
from memory_server.files.reading import READ_MAX_CHARS, READ_MAX_LINE_CHARS, READ_MAX_LINES, read_window
from memory_server.files.root import MEMORY_INDEX, TOPICS_DIR
from memory_server.parse.frontmatter import split_front_matter
from memory_server.parse.markdown import iso_date
from memory_server.parse.text import as_data
from memory_server.sessions import auto_memory
from memory_server.sessions import transcript_layer as transcript_index
from memory_server.sessions.redact import clean_keeping_lines
from memory_server.tool_results import ReadResult, Topic

if TYPE_CHECKING:
    from memory_server.api import Memory

log = logging.getLogger(__name__)


def read(memory: Memory, path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
    """Lines `start_line`..`end_line` (1-based, inclusive) of a file inside the root, or, for a path
    `transcript:<session-id>`, the transcript's messages overlapping those JSONL lines, or, for a path
    `auto-memory:<file>`, lines of that file of Claude Code's auto memory."""
    if isinstance(path, str) and path.startswith((transcript_index.PREFIX, auto_memory.PREFIX)):
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise PathRefusedError(
                "path is not valid Unicode (a lone surrogate): use a `path` from a search hit"
            ) from None
        if path.startswith(auto_memory.PREFIX):
            return read_auto_memory(memory, path, start_line, end_line)
        return read_transcript_lines(memory, path, start_line, end_line)
    real = confine_memory(memory.root.path, path)  # memory files only: never .env, .git/, sources
    rel = memory.root.relpath(real)
    start = _line_range(start_line, end_line)
    window = read_window(real, rel, start, end_line)  # streamed: bounded per answer and per line
    return ReadResult(
        path=rel,
        start_line=window.start,
        end_line=window.end,
        total_lines=window.total,
        text="\n".join(window.lines),
        more=f"truncated: call read_memory with start_line={window.end + 1} for the rest" if window.truncated else None,
        cut_lines=list(window.cut_lines) or None,
    )


def _line_range(start_line: int | None, end_line: int | None) -> int:
    """The first line asked for, once both are checked to be 1-based line numbers in order."""
    start = 1 if start_line is None else start_line
    bad = isinstance(start, bool) or isinstance(end_line, bool)
    if bad or start < 1 or (end_line is not None and end_line < 1):
        raise PathRefusedError("start_line and end_line are 1-based line numbers (1 or more)")
    if end_line is not None and end_line < start:
        raise PathRefusedError(f"end_line {end_line} is before start_line {start}")
    return start


def read_auto_memory(memory: Memory, virtual: str, start_line: int | None, end_line: int | None) -> ReadResult:
    """Lines of a file of Claude Code's auto memory (read-only, confined to its folder; secrets and `<private>`
    text out, every line where it was); `source` says the model wrote it."""
    start = _line_range(start_line, end_line)
    folder = auto_memory.require(memory.root, memory.settings)
    real = auto_memory.resolve(folder, virtual)
    try:
        content = auto_memory.read(folder, auto_memory.relative(virtual), memory.settings.index.max_file_bytes)
    except FileSkipped as why:
        raise PathRefusedError(f"{virtual} cannot be read: {why}") from None
    lines = clean_keeping_lines(content.text).splitlines()
    if start > max(len(lines), 1):
        raise NotFoundError(f"{virtual} has {len(lines)} lines; start_line {start} is past the end")
    last = min(len(lines), end_line or len(lines), start + READ_MAX_LINES - 1)
    shown: list[str] = []
    used = 0
    for n in range(start, last + 1):
        line = lines[n - 1][:READ_MAX_LINE_CHARS]
        if used + len(line) > READ_MAX_CHARS and shown:
            break
        shown.append(line)
        used += len(line) + 1
    end = start + len(shown) - 1
    truncated = end < min(len(lines), end_line or len(lines))
    return ReadResult(
        path=virtual,
        start_line=start,
        end_line=end,
        total_lines=len(lines),
        text="\n".join(shown),
        more=f"truncated: call read_memory with start_line={end + 1} for the rest" if truncated else None,
        source=f"{auto_memory.WRITTEN_BY}: {real}",
    )


def read_transcript_lines(memory: Memory, virtual: str, start_line: int | None, end_line: int | None) -> ReadResult:
    """The messages of a transcript overlapping the lines asked for, read from Claude Code's file while it is
    there and from the root's kept copy once it is gone; `source` says which."""
    record = memory.fts.file(virtual)
    recorded = Path(record.source) if record is not None and record.source else None
    source = transcript_index.readable_source(virtual, recorded, memory.root, memory.settings)
    lines = transcript_index.read_transcript(source, start_line, end_line)
    text: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > READ_MAX_CHARS and text:
            text.append("… truncated: ask for a narrower line range")
            break
        text.append(line)
        used += len(line) + 1
    return ReadResult(
        path=virtual,
        start_line=start_line or 1,
        end_line=end_line,
        text="\n".join(text),
        source=transcript_index.source_note(source, memory.root),
    )


def topic_count(memory: Memory) -> int:
    """How many topic files there are (list_topics shows the first few of a large root)."""
    return sum(1 for rel, layer in memory.root.memory_files() if layer == "topic" and rel.startswith("topics/"))


def list_topics(memory: Memory, limit: int | None = None) -> list[Topic]:
    """Topic files with their title, description, updated date and tags (from front matter), in path
    order: all of them, or the first `limit` (only those files are read)."""
    topics: list[Topic] = []
    for rel, layer in memory.root.memory_files():
        if layer != "topic" or not rel.startswith("topics/"):
            continue
        if limit is not None and len(topics) >= limit:
            break
        topics.append(topic_of(memory, rel))
    return topics


def topic_of(memory: Memory, rel: str) -> Topic:
    """A topic file as list_topics shows it: its front matter, or its file name when that cannot be read."""
    meta: dict[str, object] = {}
    try:
        text = memory.root.read_text(rel, max_bytes=memory.settings.index.max_file_bytes).text
        meta, _, _ = split_front_matter(text.splitlines())
    except (MemoryServerError, OSError) as exc:  # listed all the same, by its file name
        log.info("list_topics: %s read without its front matter (%s)", as_data(rel), exc)
    tags = meta.get("tags") or []
    return Topic(
        path=rel,
        title=str(meta.get("title") or Path(rel).stem),
        description=str(meta.get("description") or "") or None,
        updated=iso_date(meta.get("updated")),
        tags=([str(t) for t in tags] if isinstance(tags, list) else [str(tags)]) or None,
    )


def is_resource_path(rel: str) -> bool:
    """The files served as resources: MEMORY.md and the topics (Markdown files under topics/)."""
    return rel == MEMORY_INDEX or (rel.startswith(TOPICS_DIR + "/") and rel.endswith(".md"))


def resource_files(memory: Memory, limit: int | None = None) -> list[Topic]:
    """MEMORY.md (when there is one) and the topics (the first `limit`), as list_topics describes them."""
    index = memory.root.path / MEMORY_INDEX
    first = [Topic(path=MEMORY_INDEX, title="MEMORY.md", description="the memory's table of contents")]
    return (first if index.is_file() else []) + list_topics(memory, limit)


def resource_text(memory: Memory, rel: str) -> str:
    """The whole text of MEMORY.md or a topic, read as the indexer reads it (confined, bounded, text only).
    Resources are read-only, like the files: nothing here writes."""
    refusal = f"{rel[:200]!r} is not a resource: they are MEMORY.md and topics/*.md (read_memory reads the others)"
    if not is_resource_path(rel):
        raise PathRefusedError(refusal)
    real = confine_memory(memory.root.path, rel)
    shown = memory.root.relpath(real)
    if not is_resource_path(shown):  # a topic that is a symlink to another kind of file
        raise PathRefusedError(refusal)
    return memory.root.read_text(shown, max_bytes=memory.settings.index.max_file_bytes).text
