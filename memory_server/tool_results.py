"""What the MCP tools return: typed models (so `tools/list` publishes each tool's output schema), written
compactly because every character is read by the model.

A search answer names each file's title once (`titles`), then gives per hit only what the model needs to
judge it and to read more: path and lines (the read_memory arguments), layer, date, score, the heading
when it adds to the title, and the text. Empty fields are left out; the JSON has no indentation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict

from memory_server.search.query import Hit

Layer = Literal["topic", "auto_memory", "session", "transcript"]


class SearchHit(BaseModel):
    path: str
    start_line: int
    end_line: int
    layer: Layer
    date: str | None = None
    score: float
    heading: str | None = None
    text: str
    match: Literal["phrase", "substring", "all_terms", "any_terms"] | None = None


class SearchResult(BaseModel):
    hits: list[SearchHit]
    titles: dict[str, str] = {}
    mode: Literal["hybrid", "keyword", "semantic"] | None = None
    note: str | None = None


class ReadResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    path: str
    start_line: int
    end_line: int | None = None
    total_lines: int | None = None
    text: str
    more: str | None = None


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


class AtRiskSession(BaseModel):
    session: str
    transcript: str
    deleted_in_days: float
    state: Literal["not kept", "kept in part"]


class KeptTranscripts(BaseModel):
    keep: bool
    cleanup_period_days: int  # Claude Code's cleanupPeriodDays (its user settings; 30 by default)
    cleanup_setting: str
    transcripts: int  # named by the compressed sessions
    kept: int
    at_risk_count: int  # not kept yet, and Claude Code deletes them within transcripts.cleanup_warn_days
    at_risk: list[AtRiskSession]
    gone_count: int  # deleted before they were kept
    gone: list[str]
    over_budget: list[str]
    how: str | None = None


class AutoMemoryStatus(BaseModel):
    model_config = ConfigDict(extra="allow")

    folder: str
    how: str | None = None
    written_by: str | None = None
    files: int | None = None
    past_limit_count: int | None = None  # MEMORY.md entries past what Claude Code loads (200 lines / 25,000 chars)
    orphan_count: int | None = None  # files MEMORY.md does not point to
    problem: str | None = None


class DreamStatus(BaseModel):
    due: bool
    reason: str
    how: str | None = None


class Status(BaseModel):
    model_config = ConfigDict(extra="allow")

    root: str
    files: int
    files_by_layer: dict[str, int]
    chunks: int
    chunks_by_layer: dict[str, int]
    keyword_index: KeywordIndexStatus
    semantic_index: SemanticIndexStatus
    indexing: dict[str, int | str]
    problem_files: list[ProblemFile]
    problem_count: int | None = None  # problem_files holds the first few of these
    notes: list[str]
    sessions_queue: SessionsQueue | None = None
    kept_transcripts: KeptTranscripts | None = None
    auto_memory: AutoMemoryStatus | None = None
    dream: DreamStatus
    memory_index: dict[str, Any] | None = None
    config_error: str | None = None


def search_result(hits: Sequence[Hit], *, mode: str | None = None, note: str | None = None) -> SearchResult:
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
                layer=hit.layer,  # type: ignore[arg-type]
                date=hit.date,
                score=round(hit.score, 3),
                heading=heading,
                text=hit.text,
                match=hit.match,  # type: ignore[arg-type]
            )
        )
    return SearchResult(hits=out, titles=titles, mode=mode, note=note)  # type: ignore[arg-type]


def compact(model: BaseModel) -> CallToolResult:
    """The tool result: the model's fields without empty ones, as structured content and as compact JSON text
    (clients show the model one or the other)."""
    data = model.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
