"""The MCP server: thin tools over `Memory`, on stdio.

The handshake never waits for the model or Chroma: the lifespan only opens the root, then a background
thread brings the indices up to date and starts the file watcher. Tools answer from what is indexed so
far; `memory_status` says how far that is.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from memory_server.api import Memory
from memory_server.background import Background
from memory_server.errors import MemoryServerError
from memory_server.stdio_guard import exit_on_hangup, repair_stdin

log = logging.getLogger(__name__)

Layer = Literal["topic", "session", "transcript"]
F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
Long-term memory for this project, kept as Markdown files.
Precedence when sources disagree: topics (curated current truth) > compressed sessions (what happened in
past sessions; good for recall, not authoritative) > raw transcripts (arbitration only).
Use search_memory for questions in your own words, search_exact for literal strings (IPs, error codes,
identifiers, phrases), then read_memory on a hit's path and lines for the full text. Results are short on
purpose: read only what you need."""

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def tool_errors(fn: F) -> F:
    """Turn our errors into tool errors the model can read; anything else is logged and reported plainly."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemoryServerError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:  # a bug: say so instead of failing silently
            log.exception("tool %s failed", fn.__name__)
            raise ToolError(
                f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}. The server log (stderr) has details."
            ) from exc

    return wrapper  # type: ignore[return-value]


def build_server(memory: Memory, *, background: bool = True, watch: bool = True) -> MCPServer:
    """An MCPServer whose tools search and read `memory`."""
    worker = Background(memory, watch=watch)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        if background:
            worker.start()
        try:
            yield {"memory": memory}
        finally:
            worker.stop()
            memory.close()

    mcp = MCPServer("memory", instructions=INSTRUCTIONS, lifespan=lifespan)

    @mcp.tool(annotations=READ_ONLY)
    @tool_errors
    def search_memory(
        query: str,
        k: int = memory.settings.search.default_k,
        layers: list[Layer] | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """Search the project's long-term memory by meaning: use this for questions in your own words
        ("what did we decide about retries?", "how is the build deployed?"). Finds passages even when they
        use different words, and also weighs exact keyword matches.

        Each hit has path, start_line, end_line, layer, title, heading, date, score and a short text. Layer
        "topic" is curated current truth and wins over "session" (what happened in a past session). Call
        read_memory(path, start_line, end_line) for more of a hit.

        query: the question or description. k: how many hits (default small; raise it only if needed).
        layers: limit to "topic" and/or "session". after/before: YYYY-MM-DD dates, inclusive.
        """
        hits, mode = memory.search_memory(query, k, layers, after, before)
        out: dict[str, Any] = {"hits": [h.to_dict() for h in hits], "mode": mode}
        if mode == "keyword" and memory.vectors is not None:
            why = f"unavailable ({memory.vector_error})" if memory.vector_error else "not ready yet"
            out["note"] = f"semantic index {why}; these hits come from keyword search"
        return out

    @mcp.tool(annotations=READ_ONLY)
    @tool_errors
    def search_exact(
        query: str,
        k: int = memory.settings.search.default_k,
        layers: list[Layer] | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """Find literal text in the memory: IP addresses, error codes, identifiers like SAVE_CONFIG,
        function names, file names, exact phrases. Any text is accepted as-is (quotes, *, -, :, AND, OR are
        plain characters here). Hits whose `match` is "phrase" contain the query itself; then come hits with
        all its terms ("all_terms"), then with some ("any_terms").

        Use search_memory instead for questions in your own words. Layers default to topics and sessions;
        add "transcript" to search raw Claude Code transcripts (only to settle a disagreement).
        """
        hits = memory.search_exact(query, k, layers, after, before)
        return {"hits": [h.to_dict() for h in hits]}

    @mcp.tool(annotations=READ_ONLY)
    @tool_errors
    def read_memory(path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        """Read lines of a memory file: the text behind a search hit and around it. `path` is relative to
        the memory root, as in hits; start_line/end_line are 1-based and inclusive (omit them for the whole
        file, up to 400 lines per call)."""
        return memory.read(path, start_line, end_line)

    @mcp.tool(annotations=READ_ONLY)
    @tool_errors
    def list_topics() -> dict[str, Any]:
        """List the curated topic files (title, description, updated date, tags): the map of what the
        memory knows for sure. Read one with read_memory."""
        return {"topics": memory.list_topics()}

    @mcp.tool(annotations=READ_ONLY)
    @tool_errors
    def memory_status() -> dict[str, Any]:
        """Health of the memory: file and chunk counts, whether the indices are up to date, files that were
        skipped or degraded (and why), background indexing progress, and whether a /dream is due."""
        return memory.status()

    return mcp


def serve(memory: Memory) -> None:
    """Run the MCP server on stdio until the client closes stdin; gone within two seconds of that even
    when a request is stuck (see stdio_guard.py)."""
    server = build_server(memory)
    repair_stdin()
    exit_on_hangup(memory.indexer.cancel.set)
    server.run("stdio")
    log.info("client closed the connection; server stopped")
