"""The MCP server: thin tools over `Memory`, on stdio.

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
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from memory_server.api import Memory
from memory_server.background import Background
from memory_server.errors import ConfigError, MemoryServerError
from memory_server.files.logs import LOG_DIR, rotate
from memory_server.process_memory import limit_arenas
from memory_server.settings import Settings, load_settings, settings_stamp
from memory_server.stdio_guard import exit_now, exit_on_hangup, repair_stdin, serve_stdio, stop_on_signals
from memory_server.tool_results import (
    ReadResult,
    SearchResult,
    Status,
    Topic,
    TopicList,
    compact,
    search_result,
)

log = logging.getLogger(__name__)

Layer = Literal["topic", "auto_memory", "session", "transcript"]
F = TypeVar("F", bound=Callable[..., Any])

STOP_WAIT_SECONDS = 0.5  # at shutdown, background indexing gets this long to stop between two steps
FIRST_PASS_WAIT_SECONDS = 1.0  # a search waits this long for the first keyword pass of a fresh server
LIST_TOPICS_LIMIT = 200  # list_topics answers with the first this many (by path) and the total

INSTRUCTIONS = (
    "Long-term memory for this project, kept as Markdown files. When sources disagree: topics (curated current "
    "truth) > auto_memory (Claude Code's own notes, written by the model, unreviewed) > sessions (what happened "
    "in past sessions) > transcripts (raw, for arbitration only). "
    "search_memory for questions in your own words, search_exact for literal strings, then read_memory on a "
    "hit's path and lines for more. Results are short on purpose: read only what you need."
)

DESCRIPTIONS = {
    "search_memory": (
        'Search memory by meaning, for questions in your own words ("what did we decide about retries?"). '
        "Hits: path, start_line-end_line, layer, date, score (falls with rank), text; titles once per file. "
        "Ties: topic (curated truth) > auto_memory (the model's unreviewed notes) > session (a past session)."
    ),
    "search_exact": (
        "Find literal text: IPs, error codes, identifiers, file names, exact phrases; the query is taken as-is. "
        'match says phrase (contains the query), all_terms or any_terms. Add layer "transcript" only to '
        "settle a disagreement."
    ),
    "read_memory": (
        "Read lines of a memory file: the text behind a hit and around it. path as in hits; start_line and "
        "end_line 1-based, inclusive (omit for the whole file, up to 400 lines)."
    ),
    "list_topics": "List the curated topic files (title, description, updated, tags): what the memory knows for sure.",
    "memory_status": (
        "Health of the memory: counts, index freshness and progress, skipped files and why, config errors, "
        "whether a /dream is due."
    ),
}

Query = Annotated[str, Field(description="question (search_memory) or literal text (search_exact)")]
K = Annotated[int | None, Field(description="number of hits (default: the memory's search.default_k); keep it small")]
Layers = Annotated[list[Layer] | None, Field(description="default: topic, auto_memory and session")]
After = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]
Before = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def tool_errors(fn: F) -> F:
    """Our errors become tool errors the model can read; anything else is logged and reported plainly.
    A typed result is sent as compact JSON (structured content and text alike)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return compact(fn(*args, **kwargs))
        except MemoryServerError as exc:
            raise ToolError(str(exc)) from exc
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a bug, or a panic in a native library: say so instead of failing silently
            log.exception("tool %s failed", fn.__name__)
            raise ToolError(
                f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}. The server log (stderr) has details."
            ) from exc

    return wrapper  # type: ignore[return-value]


class MemoryGate:
    """The memory the tools answer from, opened once the root can be served; until then, why not.

    `open_memory` raises a MemoryServerError (not a memory root, missing, broken memory.yaml) whose message
    says what to do. Every `get()` before success tries again, so fixing the root needs no restart.
    """

    def __init__(
        self,
        root: Path,
        open_memory: Callable[[Path], Memory],
        on_open: Callable[[Memory], None],
        load: Callable[[Path], Settings] = load_settings,
    ) -> None:
        self.root = root
        self._open_memory = open_memory
        self._on_open = on_open
        self._load = load
        self._lock = threading.Lock()
        self.memory: Memory | None = None
        self.refusal: str | None = None
        self.closed = False
        self._stamp: tuple[object, ...] | None = None  # memory.yaml and the user config as last read
        self._bad_stamp: tuple[object, ...] | None = None  # ... as last found broken

    def get(self) -> Memory:
        with self._lock:
            if self.memory is not None:
                self._follow_settings(self.memory)
                return self.memory
            if self.closed:
                raise ToolError("the memory server is shutting down")
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
        self._on_open(memory)
        return memory

    def adopt(self, memory: Memory) -> None:
        """Serve an already opened memory (its settings as they are on disk now)."""
        self.memory, self._stamp = memory, settings_stamp(memory.root.path)

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

    def try_open(self) -> Memory | None:
        try:
            return self.get()
        except MemoryServerError:
            return None


def build_server(
    memory: Memory | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    open_memory: Callable[[Path], Memory] = Memory,
    background: bool = True,
    watch: bool = True,
) -> MCPServer:
    """An MCPServer whose tools search and read `memory`, or the memory at `root` once it can be opened."""
    if memory is None and root is None:
        raise ValueError("build_server needs a Memory or a root")
    workers: list[Background] = []
    started = threading.Event()

    def start_worker(opened: Memory) -> None:
        worker = Background(opened, watch=watch)
        workers.append(worker)
        if background and started.is_set():
            worker.start()

    gate = MemoryGate(Path(root) if root is not None else Path("."), open_memory, start_worker)
    if memory is not None:
        gate.adopt(memory)
        start_worker(memory)
    else:
        gate.try_open()

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        started.set()
        if background:
            for worker in workers:
                worker.start()
        try:
            yield {}
        finally:
            with gate._lock:
                gate.closed = True
            stopped = [worker.stop(STOP_WAIT_SECONDS) for worker in workers]
            if gate.memory is not None and all(stopped):
                gate.memory.close()
            elif gate.memory is not None:  # mid-way through loading the model, say: the process ends anyway
                log.info("background indexing is still finishing a step; the indices close with the process")

    instructions = INSTRUCTIONS if gate.refusal is None else f"Memory is not available here: {gate.refusal}"
    mcp = MCPServer("memory", instructions=instructions, lifespan=lifespan)

    def ready() -> Memory:
        opened = gate.get()
        if workers and not workers[0].keyword_ready.is_set():
            workers[0].wait_for_keyword_pass(FIRST_PASS_WAIT_SECONDS)
        return opened

    @mcp.tool(description=DESCRIPTIONS["search_memory"], annotations=READ_ONLY)
    @tool_errors
    def search_memory(
        query: Query,
        k: K = None,
        layers: Layers = None,
        after: After = None,
        before: Before = None,
    ) -> SearchResult:
        memory = ready()
        hits, mode = memory.search_memory(query, k, layers, after, before)
        return search_result(hits, mode=mode, note=memory.search_note(mode, found=bool(hits)))

    @mcp.tool(description=DESCRIPTIONS["search_exact"], annotations=READ_ONLY)
    @tool_errors
    def search_exact(
        query: Query,
        k: K = None,
        layers: Layers = None,
        after: After = None,
        before: Before = None,
    ) -> SearchResult:
        memory = ready()
        hits = memory.search_exact(query, k, layers, after, before)
        return search_result(hits, note=memory.search_note("keyword", found=bool(hits), semantic=False))

    @mcp.tool(description=DESCRIPTIONS["read_memory"], annotations=READ_ONLY)
    @tool_errors
    def read_memory(path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
        return ReadResult.model_validate(gate.get().read(path, start_line, end_line))

    @mcp.tool(description=DESCRIPTIONS["list_topics"], annotations=READ_ONLY)
    @tool_errors
    def list_topics() -> TopicList:
        memory = gate.get()
        found = memory.list_topics(limit=LIST_TOPICS_LIMIT)
        topics = [Topic.model_validate({k: v for k, v in t.items() if v}) for t in found]
        if len(found) < LIST_TOPICS_LIMIT:
            return TopicList(topics=topics, total=len(found))
        total = memory.topic_count()
        note = f"the first {len(found)} of {total} topics, by path; search_memory finds the others"
        return TopicList(topics=topics, total=total, note=note if total > len(found) else None)

    @mcp.tool(description=DESCRIPTIONS["memory_status"], annotations=READ_ONLY)
    @tool_errors
    def memory_status() -> Status:
        return Status.model_validate(gate.get().status())

    for tool in mcp._tool_manager.list_tools():  # the SDK offers no public hook for the published schemas
        tidy_schema(tool.parameters)
        tidy_schema(tool.output_schema)
    return mcp


def tidy_schema(schema: Any) -> None:
    """Shorten a published schema without changing what it accepts from us: drop the titles pydantic derives
    from names ("Query" for `query`), which repeat the property names, and write an optional field as its
    type alone instead of "that type or null, default null" (results leave empty fields out; a client may
    leave out an optional argument). A property that is itself called `title` stays."""
    if isinstance(schema, dict):
        schema.pop("title", None)
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
    _run(build_server(memory), memory.indexer.cancel.set)


def serve_root(root: str | os.PathLike[str], open_memory: Callable[[Path], Memory] = Memory) -> None:
    """`memory-server serve`: run the MCP server for `root` on stdio until the client closes stdin; gone
    within two seconds of that even when a request is stuck (see stdio_guard.py). A root that cannot be
    served is logged on stderr here and reported by every tool."""
    logging.getLogger().setLevel(logging.INFO)
    limit_arenas()  # before any thread starts (see process_memory.py)
    path = Path(root).expanduser()
    opened: list[Memory] = []

    def open_and_log(where: Path) -> Memory:
        memory = open_memory(where)
        if not opened:
            log_to_file(memory.root.state_dir / LOG_DIR / "server.log")
            log.info("memory server for %s (pid %d)", memory.root.path, os.getpid())
        opened.append(memory)
        return memory

    server = build_server(root=path, open_memory=open_and_log)

    def cancel() -> None:
        for memory in opened:
            memory.indexer.cancel.set()

    _run(server, cancel)


def _run(server: MCPServer, on_hangup: Callable[[], None]) -> None:
    end_input = repair_stdin()
    exit_on_hangup(on_hangup)
    signalled = stop_on_signals(on_hangup, end_input)
    # The SDK offers no public hook for answering unreadable lines; serve its low-level server ourselves.
    anyio.run(serve_stdio, server._lowlevel_server)
    log.info("server stopped on a signal" if signalled.is_set() else "client closed the connection; server stopped")
    # The lifespan closed the indices. Skip the interpreter's teardown: it takes over a second with the model
    # loaded, and aborts the process when the indexing thread is still inside the model (a daemon thread).
    exit_now(0)
