"""The typed records `Memory` returns and the MCP tools publish: one type each, so `tools/list` has real
output schemas and nothing is converted at the edge. Written compactly because every character is read by
the model.

A search answer names each file's title once (`titles`), then gives per hit only what the model needs to
judge it and to read more: path and lines (the read_memory arguments), layer, date, score, the heading
when it adds to the title, and the text. Empty fields are left out; the JSON has no indentation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Literal

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, WithJsonSchema

from memory_server.files.root import Layer
from memory_server.parse.memory_md import MemoryIndexReport
from memory_server.search.exact import Match
from memory_server.search.query import Hit, Mode
from memory_server.sessions.evidence_status import AutoMemoryStatus, KeptTranscripts


class SearchHit(BaseModel):
    path: str
    start_line: int
    end_line: int
    layer: Layer
    date: str | None = None
    score: float
    heading: str | None = None
    text: str
    match: Match | None = None


class SearchResult(BaseModel):
    hits: list[SearchHit]
    titles: dict[str, str] = {}
    mode: Mode | None = None
    note: str | None = None


class ReadResult(BaseModel):
    path: str
    start_line: int
    end_line: int | None = None
    total_lines: int | None = None
    text: str
    more: str | None = None
    cut_lines: list[int] | None = None  # lines shown cut to the per-line limit
    source: str | None = None  # outside the root: which file answered (a transcript or its kept copy; auto memory)


class Topic(BaseModel):
    path: str
    title: str
    description: str | None = None
    updated: str | None = None
    tags: list[str] | None = None


class TopicList(BaseModel):
    topics: list[Topic]
    total: int | None = None  # how many topics there are (a large root lists only the first ones)
    note: str | None = None


class KeywordIndexStatus(BaseModel):
    fresh: bool
    pending_files: list[str]
    pending_count: int


class SemanticIndexStatus(BaseModel):
    enabled: bool
    backend: str | None = None
    pending_files: int
    vectors: int | None = None
    model: str | None = None
    model_loaded: bool
    token_vectors: str = "off"  # what late interaction keeps per token: bits, int8 or off
    late_interaction: bool = False  # whether search_memory reranks its best candidates token by token
    error: str | None = None


class IndexingStatus(BaseModel):
    stage: str
    done: int
    total: int
    stopped: str | None = None  # why background indexing stopped, and when it is tried again


class ProblemFile(BaseModel):
    path: str
    status: str
    reason: str | None = None


class QueuedSession(BaseModel):
    transcript: str
    state: Literal["waiting", "failed"]
    reason: str
    queued: str
    attempts: int


class SessionsQueue(BaseModel):
    waiting: int  # session ends whose compression has not run yet (another one held the lock)
    failed: int  # transcripts that could not be compressed (unreadable), with why in items
    items: list[QueuedSession] | None = None
    how: str | None = None


class DreamStatus(BaseModel):
    due: bool
    reason: str
    how: str | None = None


# Published as a plain object: the model reads these parts of memory_status when they matter, and their full
# schemas would make every tools/list a kilobyte longer.
PlainObject = WithJsonSchema({"type": "object"})


class Status(BaseModel):
    root: str
    files: int
    files_by_layer: dict[str, int]
    chunks: int
    chunks_by_layer: dict[str, int]
    keyword_index: KeywordIndexStatus
    semantic_index: SemanticIndexStatus
    indexing: Annotated[IndexingStatus, PlainObject]
    problem_files: list[ProblemFile]
    problem_count: int | None = None  # problem_files holds the first few of these
    notes: list[str]
    sessions_queue: SessionsQueue | None = None
    kept_transcripts: Annotated[KeptTranscripts, PlainObject] | None = None  # sessions/evidence_status.py
    auto_memory: Annotated[AutoMemoryStatus, PlainObject] | None = None  # None: the project has none
    dream: DreamStatus
    memory_index: Annotated[MemoryIndexReport, PlainObject] | None = None
    config_error: str | None = None


class DreamGathered(BaseModel):
    message: str
    path: str | None = None  # the evidence pack, for read_memory; None when no session waits
    sessions: int
    tokens: int


class DreamProposed(BaseModel):
    message: str
    id: str | None = None  # None: refused, nothing written
    report: str | None = None  # dreams/<id>/REPORT.md, for read_memory
    changes: int
    refusals: list[str] | None = None
    waiting: list[str] | None = None  # verified items held for the next proposal
    notes: list[str] | None = None
    warnings: list[str] | None = None  # per item: what a reader should weigh (a line under another file's section)


class DreamRecord(BaseModel):
    text: str


class DreamVerdicts(BaseModel):
    id: str
    summary: str


def search_result(hits: Sequence[Hit], *, mode: Mode | None = None, note: str | None = None) -> SearchResult:
    """Hits in rank order, each file's title once."""
    titles: dict[str, str] = {}
    out = []
    for hit in hits:
        title = titles.setdefault(hit.path, hit.title)
        heading = hit.heading if hit.heading and hit.heading != title else None
        out.append(
            SearchHit(
                path=hit.path,
                start_line=hit.start_line,
                end_line=hit.end_line,
                layer=hit.layer,
                date=hit.date,
                score=round(hit.score, 3),
                heading=heading,
                text=hit.text,
                match=hit.match,
            )
        )
    return SearchResult(hits=out, titles=titles, mode=mode, note=note)


def compact(model: BaseModel) -> CallToolResult:
    """The tool result: the model's fields without empty ones, as structured content and as compact JSON text
    (clients show the model one or the other)."""
    data = model.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
