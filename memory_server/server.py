"""The MCP server: thin tools over `Memory`, on stdio, written as the MCP SDK's examples write a server.

The server's lifespan owns the memory (through `MemoryGate`): it starts the memory's background worker when the
server runs, yields a typed `ServerState` to every call, and closes the memory when it ends. Each tool is a typed
function that takes `ctx`; its docstring is the description the model reads.

The handshake never waits for the model or Chroma: the server only opens the root, then a background
thread brings the indices up to date and starts the file watcher. A search waits up to a second for the
first keyword pass (a small root is indexed by then); past that, answers say how far indexing is.

A folder that is not a memory root, a root that does not exist, or a broken memory.yaml does not stop the
server: it starts, logs why on stderr, and answers every tool with that reason and how to fix it, writing
nothing. Each call looks again, so `memory-server init` or a fixed memory.yaml takes effect at once.

Settings apply live: each call checks whether memory.yaml (or the user config) changed on disk, and reads it
again when it did. A valid edit applies from that call on (the tools' default `k` included); a broken one
makes every tool answer with the error, as at start, until it is fixed.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from memory_server.api import Memory
from memory_server.errors import ConfigError, IndexUnavailableError, MemoryServerError
from memory_server.files.logs import LOG_DIR, rotate
from memory_server.files.root import Layer
from memory_server.process_memory import limit_arenas
from memory_server.settings import Settings, load_settings, settings_stamp
from memory_server.stdio_guard import exit_now, exit_on_hangup, repair_stdin, serve_stdio, stop_on_signals
from memory_server.tool_results import (
    ReadResult,
    SearchResult,
    Status,
    TopicList,
    compact,
    search_result,
)

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

FIRST_PASS_WAIT_SECONDS = 1.0  # a search waits this long for the first keyword pass of a fresh server
LIST_TOPICS_LIMIT = 200  # list_topics answers with the first this many (by path) and the total

INSTRUCTIONS = (
    "Long-term memory for this project, kept as Markdown files. When sources disagree: topics (curated current "
    "truth) > auto_memory (Claude Code's own notes, written by the model, unreviewed) > sessions (what happened "
    "in past sessions) > transcripts (raw, for arbitration only). "
    "search_memory for questions in your own words, search_exact for literal strings, then read_memory on a "
    "hit's path and lines for more. Results are short on purpose: read only what you need."
)

Query = Annotated[str, Field(description="question (search_memory) or literal text (search_exact)")]
K = Annotated[int | None, Field(description="number of hits (default: the memory's search.default_k); keep it small")]
Layers = Annotated[list[Layer] | None, Field(description="default: topic, auto_memory and session")]
After = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]
Before = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class MemoryGate:
    """The memory the tools answer from, opened once the root can be served; until then, why not.

    `open_memory` raises a MemoryServerError (not a memory root, missing, broken memory.yaml) whose message
    says what to do. Every `get()` before success tries again, so fixing the root needs no restart. Once the
    server runs (`start()`), the opened memory's background worker indexes and watches; `close()` refuses
    every later call and closes the memory.
    """

    def __init__(
        self,
        root: Path,
        open_memory: Callable[[Path], Memory],
        *,
        background: bool = True,
        watch: bool = True,
        load: Callable[[Path], Settings] = load_settings,
    ) -> None:
        self.root = root
        self._open_memory = open_memory
        self._load = load
        self._background = background
        self._watch = watch
        self._lock = threading.Lock()
        self._serving = False
        self.memory: Memory | None = None
        self.refusal: str | None = None
        self.closed = False
        self._stamp: tuple[object, ...] | None = None  # memory.yaml and the user config as last read
        self._bad_stamp: tuple[object, ...] | None = None  # ... as last found broken

    def get(self) -> Memory:
        with self._lock:
            if self.closed:
                raise IndexUnavailableError("the memory server is shutting down; ask again after it restarts")
            if self.memory is not None:
                self._follow_settings(self.memory)
                return self.memory
            stamp = settings_stamp(self.root)  # before opening: an edit made meanwhile is read at the next call
            try:
                memory = self._open_memory(self.root)
            except MemoryServerError as exc:
                if str(exc) != self.refusal:
                    log.error("cannot serve %s: %s", self.root, exc)
                self.refusal = str(exc)
                raise
            self.memory, self.refusal, self._stamp = memory, None, stamp
            log.info("serving %s", memory.root.path)
            if self._serving:
                self._start_background(memory)
        return memory

    def ready(self) -> Memory:
        """The memory, after waiting briefly for the first keyword pass of a fresh server."""
        memory = self.get()
        memory.wait_for_keyword_pass(FIRST_PASS_WAIT_SECONDS)
        return memory

    def adopt(self, memory: Memory) -> None:
        """Serve an already opened memory (its settings as they are on disk now)."""
        self.memory, self._stamp = memory, settings_stamp(memory.root.path)

    def try_open(self) -> Memory | None:
        try:
            return self.get()
        except MemoryServerError:
            return None

    def start(self) -> None:
        """The server runs: start background indexing of the memory (now, or once it opens)."""
        with self._lock:
            self._serving = True
            if self.memory is not None:
                self._start_background(self.memory)

    def cancel(self) -> None:
        """The client is gone: stop background indexing at once (between two steps)."""
        memory = self.memory
        if memory is not None:
            memory.cancel()

    def close(self) -> None:
        """Refuse every later call, stop background indexing and close the memory."""
        with self._lock:
            self.closed = True
            memory = self.memory
        if memory is not None:
            memory.close()

    def _start_background(self, memory: Memory) -> None:
        worker = memory.background(watch=self._watch)
        if self._background:
            worker.start()

    def _follow_settings(self, memory: Memory) -> None:
        """Read the settings again when their files changed; a broken edit refuses every call until fixed."""
        stamp = settings_stamp(memory.root.path)
        if stamp == self._stamp:
            return
        if stamp == self._bad_stamp and self.refusal is not None:
            raise ConfigError(self.refusal)
        try:
            settings = self._load(memory.root.path)
        except ConfigError as exc:
            self._bad_stamp, self.refusal = stamp, str(exc)
            log.error("the settings changed and are invalid; every tool answers with this until fixed: %s", exc)
            raise
        self._stamp, self._bad_stamp, self.refusal = stamp, None, None
        pending = memory.apply_settings(settings)
        log.info("settings read again%s", f"; {', '.join(pending)} apply at the next start" if pending else "")


@dataclass(frozen=True)
class ServerState:
    """What the lifespan yields to every tool call: the gate to the memory."""

    gate: MemoryGate


Ctx = Context[ServerState, object]


def answers(fn: Callable[P, CallToolResult]) -> Callable[P, CallToolResult]:
    """The one place a tool's failures become answers: our errors as tool errors the model can read; anything
    else (a bug, a panic in a native library) logged with its traceback and reported plainly."""

    @functools.wraps(fn)
    def tool(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except MemoryServerError as exc:
            raise ToolError(str(exc)) from exc
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a bug, or a panic in a native library: say so instead of failing silently
            log.exception("tool %s failed", fn.__name__)
            raise ToolError(
                f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}. The server log (stderr) has details."
            ) from exc

    return tool


def gate_of(ctx: Ctx) -> MemoryGate:
    return ctx.request_context.lifespan_context.gate


# -- the tools: their docstrings are the descriptions the model reads -------------------------------------


@answers
def search_memory(
    ctx: Ctx, query: Query, k: K = None, layers: Layers = None, after: After = None, before: Before = None
) -> Annotated[CallToolResult, SearchResult]:
    """Search memory by meaning, for questions in your own words ("what did we decide about retries?").
    Hits: path, start_line-end_line, layer, date, score (falls with rank), text; titles once per file.
    Ties: topic (curated truth) > auto_memory (the model's unreviewed notes) > session (a past session)."""
    memory = gate_of(ctx).ready()
    hits, mode = memory.search_memory(query, k, layers, after, before)
    return compact(search_result(hits, mode=mode, note=memory.search_note(mode, found=bool(hits))))


@answers
def search_exact(
    ctx: Ctx, query: Query, k: K = None, layers: Layers = None, after: After = None, before: Before = None
) -> Annotated[CallToolResult, SearchResult]:
    """Find literal text: IPs, error codes, identifiers, file names, exact phrases; the query is taken as-is.
    match says phrase (contains the query), all_terms or any_terms. Add layer "transcript" only to
    settle a disagreement."""
    memory = gate_of(ctx).ready()
    hits = memory.search_exact(query, k, layers, after, before)
    return compact(search_result(hits, note=memory.search_note("keyword", found=bool(hits), semantic=False)))


@answers
def read_memory(
    ctx: Ctx, path: str, start_line: int | None = None, end_line: int | None = None
) -> Annotated[CallToolResult, ReadResult]:
    """Read lines of a memory file: the text behind a hit and around it. path as in hits; start_line and
    end_line 1-based, inclusive (omit for the whole file, up to 400 lines)."""
    return compact(gate_of(ctx).get().read(path, start_line, end_line))


@answers
def list_topics(ctx: Ctx) -> Annotated[CallToolResult, TopicList]:
    """List the curated topic files (title, description, updated, tags): what the memory knows for sure."""
    memory = gate_of(ctx).get()
    topics = memory.list_topics(limit=LIST_TOPICS_LIMIT)
    if len(topics) < LIST_TOPICS_LIMIT:
        return compact(TopicList(topics=topics, total=len(topics)))
    total = memory.topic_count()
    note = f"the first {len(topics)} of {total} topics, by path; search_memory finds the others"
    return compact(TopicList(topics=topics, total=total, note=note if total > len(topics) else None))


@answers
def memory_status(ctx: Ctx) -> Annotated[CallToolResult, Status]:
    """Health of the memory: counts, index freshness and progress, skipped files and why, config errors,
    whether a /dream is due."""
    return compact(gate_of(ctx).get().status())


TOOLS = (search_memory, search_exact, read_memory, list_topics, memory_status)


def published(fn: Callable[..., CallToolResult]) -> Tool:
    """A tool as `tools/list` shows it: its docstring on one line as the description, its schemas tidied."""
    tool = Tool.from_function(fn, description=" ".join((inspect.getdoc(fn) or "").split()), annotations=READ_ONLY)
    tidy_schema(tool.parameters)
    tidy_schema(tool.output_schema)
    return tool


def build_server(
    memory: Memory | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    open_memory: Callable[[Path], Memory] = Memory,
    background: bool = True,
    watch: bool = True,
) -> MCPServer[ServerState]:
    """An MCPServer whose tools search and read `memory`, or the memory at `root` once it can be opened."""
    if memory is None and root is None:
        raise ValueError("build_server needs a Memory or a root")
    gate = MemoryGate(Path(root) if root is not None else Path("."), open_memory, background=background, watch=watch)
    if memory is not None:
        gate.adopt(memory)
    else:
        gate.try_open()
    return server_for(gate)


def server_for(gate: MemoryGate) -> MCPServer[ServerState]:
    """The MCP server of `gate`: a lifespan that starts its background work and closes it, and the tools."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        gate.start()
        try:
            yield ServerState(gate)
        finally:
            gate.close()

    instructions = INSTRUCTIONS if gate.refusal is None else f"Memory is not available here: {gate.refusal}"
    return MCPServer("memory", instructions=instructions, lifespan=lifespan, tools=[published(fn) for fn in TOOLS])


def tidy_schema(schema: object) -> None:
    """Shorten a published schema without changing what it accepts from us: drop the titles pydantic derives
    from names ("Query" for `query`), which repeat the property names, and write an optional field as its
    type alone instead of "that type or null, default null" (results leave empty fields out; a client may
    leave out an optional argument), and leave out `"additionalProperties": true`, which is what JSON Schema
    assumes anyway. A property that is itself called `title` stays."""
    if isinstance(schema, dict):
        schema.pop("title", None)
        if schema.get("additionalProperties") is True:
            del schema["additionalProperties"]
        options = schema.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            (kept,) = [o for o in options if o != {"type": "null"}]
            del schema["anyOf"]
            schema.update(kept)
            if "default" in schema and schema["default"] is None:
                del schema["default"]
        for key, value in schema.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                for sub in value.values():
                    tidy_schema(sub)
            else:
                tidy_schema(value)
    elif isinstance(schema, list):
        for item in schema:
            tidy_schema(item)


def log_to_file(path: Path) -> None:
    """Also log to `path` (rotated once past its size limit): clients hide a server's stderr, and a person
    debugging needs to see it."""
    try:
        rotate(path)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError as exc:
        log.warning("cannot write the server log %s: %s", path, exc)
        return
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)


def serve(memory: Memory) -> None:
    """Run the MCP server for an opened `memory` on stdio (benchmarks pass their own; they call
    `process_memory.limit_arenas()` before opening it, as `serve_root` does)."""
    gate = MemoryGate(memory.root.path, Memory)
    gate.adopt(memory)
    _run(server_for(gate), gate.cancel)


def serve_root(root: str | os.PathLike[str], open_memory: Callable[[Path], Memory] = Memory) -> None:
    """`memory-server serve`: run the MCP server for `root` on stdio until the client closes stdin; gone
    within two seconds of that even when a request is stuck (see stdio_guard.py). A root that cannot be
    served is logged on stderr here and reported by every tool."""
    logging.getLogger().setLevel(logging.INFO)
    limit_arenas()  # before any thread starts (see process_memory.py)

    def open_and_log(where: Path) -> Memory:
        memory = open_memory(where)  # called until it succeeds, so this runs once
        log_to_file(memory.root.ensure_state_dir() / LOG_DIR / "server.log")
        log.info("memory server for %s (pid %d)", memory.root.path, os.getpid())
        return memory

    gate = MemoryGate(Path(root).expanduser(), open_and_log)
    gate.try_open()
    _run(server_for(gate), gate.cancel)


def _run(server: MCPServer[ServerState], on_hangup: Callable[[], None]) -> None:
    end_input = repair_stdin()
    exit_on_hangup(on_hangup)
    signalled = stop_on_signals(on_hangup, end_input)
    # The one private part of the SDK used: its low-level server, served on our own stdio loop, because the
    # SDK offers no public hook for answering lines it cannot parse (it drops them unanswered).
    anyio.run(serve_stdio, server._lowlevel_server)
    log.info("server stopped on a signal" if signalled.is_set() else "client closed the connection; server stopped")
    # The lifespan closed the indices. Skip the interpreter's teardown: it takes over a second with the model
    # loaded, and aborts the process when the indexing thread is still inside the model (a daemon thread).
    exit_now(0)
