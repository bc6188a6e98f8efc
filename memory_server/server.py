"""The MCP server: thin tools over `Memory`, on stdio, written as the MCP SDK's examples write a server.

The server's lifespan owns the memory (through `MemoryGate`): it starts the memory's background worker when the
server runs, yields a typed `ServerState` to every call, and closes the memory when it ends. Each tool is a typed
function that takes `ctx`; its docstring is the description the model reads.

The handshake never waits for the model or Chroma: the server only opens the root, then a background
thread brings the indices up to date and starts the file watcher. A search waits up to a second for the
first keyword pass (a small root is indexed by then); past that, answers say how far indexing is.

Besides the tools, for clients other than Claude Code: the prompts `dream` (the /dream procedure through the
dream tools), `recall` and `resume` (prompts/), the topics and MEMORY.md as resources (`memory://<path>`,
read whole, read-only), and the dream tools that write proposals, never topics (`dream_tools=False`, the
Claude Code plugin's setting, leaves the dream tools and prompt out: its /dream skill uses the command line).

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
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp_types import INTERNAL_ERROR, CallToolResult, ToolAnnotations
from mcp_types import Resource as MCPResource
from pydantic import BaseModel, Field

from memory_server import __version__
from memory_server.api import Memory
from memory_server.browse import resource_files, resource_text
from memory_server.errors import (
    ConfigError,
    IndexUnavailableError,
    MemoryServerError,
    NotFoundError,
    PathRefusedError,
)
from memory_server.files.logs import LOG_DIR, rotate
from memory_server.files.program import with_program
from memory_server.files.root import Layer
from memory_server.files.sqlite import release_this_thread
from memory_server.process_memory import limit_arenas
from memory_server.settings import Settings, load_settings, settings_stamp
from memory_server.stdio_guard import exit_now, exit_on_hangup, repair_stdin, serve_stdio, stop_on_signals
from memory_server.tool_results import (
    DreamGathered,
    DreamProposed,
    DreamRecord,
    DreamVerdicts,
    ReadResult,
    SearchResult,
    Status,
    Topic,
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
    "search_memory for questions, in the words the notes would use; search_exact for literal strings; then "
    "read_memory on a hit's path and lines for more. Results are short on purpose: read only what you need."
)

# search_memory's description and its query's are the text the benchmark's caller-written queries were written
# from (bench/queries/README.md): changing their meaning means writing those queries again.
MeaningQuery = Annotated[str, Field(description="the question, in the notes' words as above")]
LiteralQuery = Annotated[str, Field(description="literal text")]
K = Annotated[int | None, Field(description="number of hits; keep it small")]
Layers = Annotated[list[Layer] | None, Field(description="default: topic, auto_memory and session")]
After = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]
Before = Annotated[str | None, Field(description="YYYY-MM-DD, inclusive")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# The dream tools that write: under dreams/ only (a proposal, the evidence pack, verdicts), never a topic.
WRITES_PROPOSALS = ToolAnnotations(destructive_hint=False, open_world_hint=False)
RESOURCE_URI = "memory://{+path}"  # memory://MEMORY.md, memory://topics/releases.md


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


def answering(
    error: Callable[[MemoryServerError | None, str], Exception],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The one place failures become answers, for tools, prompts and resources alike: our errors as the errors
    the client shows (`error(exc, message)`); anything else (a bug, a panic in a native library) logged with its
    traceback and reported plainly (`error(None, message)`). Answered, the call hands its database connections
    back for the next call (files/sqlite.py)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def answered(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except MemoryServerError as exc:
                raise error(exc, with_program(str(exc))) from exc
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # a bug, or a panic in a native library: say so instead of failing silently
                log.exception("%s failed", fn.__name__)
                raise error(
                    None,
                    f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}. The server log (stderr) has "
                    "details.",
                ) from exc
            finally:
                release_this_thread()  # the worker may retire or serve another call: its connections go back

        return answered

    return decorate


def _resource_error(exc: MemoryServerError | None, message: str) -> Exception:
    missing = isinstance(exc, (NotFoundError, PathRefusedError))
    return ResourceNotFoundError(message) if missing else ResourceError(message)


answers = answering(lambda _exc, message: ToolError(message))
prompt_answers = answering(lambda _exc, message: MCPError(INTERNAL_ERROR, message))
resource_answers = answering(_resource_error)


def _hint(note: str | None) -> str | None:
    return None if note is None else with_program(note)


def gate_of(ctx: Ctx) -> MemoryGate:
    return ctx.request_context.lifespan_context.gate


# -- the tools: their docstrings are the descriptions the model reads -------------------------------------


@answers
def search_memory(
    ctx: Ctx, query: MeaningQuery, k: K = None, layers: Layers = None, after: After = None, before: Before = None
) -> Annotated[CallToolResult, SearchResult]:
    """Search memory by meaning. Write the query in the words the notes would contain: the question, then the
    names, technical terms and synonyms its answer likely uses ("what did we decide about retries? retry policy,
    backoff, max attempts, timeout"). For a request to do something, add words for how the person said they want
    it done ("my preference, always, never"). One query; no boolean syntax.
    Hits: path, start_line-end_line, layer, date, score (falls with rank), text; titles once per file.
    A topic hit (curated truth) wins over a session hit (a past session)."""
    memory = gate_of(ctx).ready()
    hits, mode = memory.search_memory(query, k, layers, after, before)
    return compact(search_result(hits, mode=mode, note=_hint(memory.search_note(mode, found=bool(hits)))))


@answers
def search_exact(
    ctx: Ctx, query: LiteralQuery, k: K = None, layers: Layers = None, after: After = None, before: Before = None
) -> Annotated[CallToolResult, SearchResult]:
    """Find literal text: IPs, error codes, identifiers, file names, exact phrases; the query is taken as-is.
    match says phrase (contains the query), all_terms or any_terms. Add layer "transcript" only to
    settle a disagreement."""
    memory = gate_of(ctx).ready()
    hits = memory.search_exact(query, k, layers, after, before)
    return compact(search_result(hits, note=_hint(memory.search_note("keyword", found=bool(hits), semantic=False))))


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


# -- the dream tools, for clients without a shell: they write under dreams/, never a topic; a person applies --


class Verdict(BaseModel):
    change: int
    verdict: Literal["accept", "reject"]
    reason: str


Items = Annotated[list[dict[str, Any]], Field(description="the items, as the dream prompt describes them")]
ProposalId = Annotated[str, Field(description="the proposal's id, as dream_propose gave it")]


@answers
def dream_gather(ctx: Ctx) -> Annotated[CallToolResult, DreamGathered]:
    """Dream step 1 (see the dream prompt): write the evidence pack of the sessions no dream has read; read it
    whole with read_memory. Changes no topic."""
    memory = gate_of(ctx).get()
    done = memory.dream.gather()
    pack = done.pack
    return compact(
        DreamGathered(
            message=done.message,
            path=memory.root.relpath(done.path) if done.path else None,
            sessions=len(pack.sessions) if pack else 0,
            tokens=pack.tokens if pack else 0,
        )
    )


@answers
def dream_propose(ctx: Ctx, items: Items) -> Annotated[CallToolResult, DreamProposed]:
    """Dream step 4: check the items against the record; when none is refused, write the proposal dreams/<id>/
    for a person to apply. Never changes a topic."""
    memory = gate_of(ctx).get()
    kept = memory.dream.keep_items(json.dumps({"items": items}, ensure_ascii=False, indent=1))
    result = memory.dream.propose(kept)
    message = result.message
    if result.id is None and result.refusals:
        message = f"{len(result.refusals)} item(s) refused; no proposal was written. Fix them (or leave them out) "
        message += "and call dream_propose again."
    return compact(
        DreamProposed(
            message=message,
            id=result.id,
            report=f"dreams/{result.id}/REPORT.md" if result.id else None,
            changes=result.changes,
            refusals=result.refusals or None,
            waiting=result.held_back or None,
            notes=result.notes or None,
            warnings=result.warnings or None,
        )
    )


@answers
def dream_record(ctx: Ctx, ref: str, around: int = 6) -> Annotated[CallToolResult, DreamRecord]:
    """The turns around an evidence reference (transcript:<id>:LINE or sessions/...md:LINE), who said each."""
    return compact(DreamRecord(text=gate_of(ctx).get().dream.record(ref, max(0, min(around, 200)))))


@answers
def dream_verdicts(
    ctx: Ctx, proposal_id: ProposalId, verdicts: list[Verdict]
) -> Annotated[CallToolResult, DreamVerdicts]:
    """Dream step 5: record a fresh reader's verdicts on a proposal's changes (a rejected one is withheld).
    Never changes a topic."""
    data = {"verdicts": [v.model_dump() for v in verdicts]}
    done = gate_of(ctx).get().dream.verdicts(data, proposal_id)
    return compact(DreamVerdicts(id=done["id"], summary=done["summary"]))


DREAM_TOOLS = (dream_gather, dream_propose, dream_record, dream_verdicts)
READ_ONLY_DREAM_TOOLS = (dream_record,)


def published(fn: Callable[..., CallToolResult], annotations: ToolAnnotations = READ_ONLY) -> Tool:
    """A tool as `tools/list` shows it: its docstring on one line as the description, its schemas tidied."""
    tool = Tool.from_function(fn, description=one_line_doc(fn), annotations=annotations)
    tidy_schema(tool.parameters)
    tidy_schema(tool.output_schema)
    return tool


def one_line_doc(fn: Callable[..., object]) -> str:
    return " ".join((inspect.getdoc(fn) or "").split())


def tools_of(dream_tools: bool) -> list[Tool]:
    tools = [published(fn) for fn in TOOLS]
    if dream_tools:
        tools += [published(fn, READ_ONLY if fn in READ_ONLY_DREAM_TOOLS else WRITES_PROPOSALS) for fn in DREAM_TOOLS]
    return tools


# -- the prompts: a client shows them to the person, who picks one; their docstrings describe them ----------


@prompt_answers
def dream(ctx: Ctx) -> str:
    """Consolidate recent sessions into a proposal for topics/ that a person reviews (with the dream tools)."""
    from memory_server.prompts.dream import dream_prompt

    memory = gate_of(ctx).get()
    return dream_prompt(memory.root.path, memory.settings.dream.max_changes)


@prompt_answers
def recall(ctx: Ctx, subject: Annotated[str, Field(description="a subject or a question, in your own words")]) -> str:
    """What the memory holds about a subject, summarised with paths."""
    from memory_server.prompts.recall import recall_prompt

    memory = gate_of(ctx).ready()
    hits, mode = memory.search_memory(subject)
    return recall_prompt(subject, hits, mode, memory.search_note(mode, found=bool(hits)))


@prompt_answers
def resume(ctx: Ctx) -> str:
    """Where the last session stopped and what it left open, from the session records."""
    from memory_server.prompts.resume import resume_prompt

    memory = gate_of(ctx).get()
    return resume_prompt(memory.root, memory.settings.index.max_file_bytes)


PROMPTS: tuple[Callable[..., str], ...] = (recall, resume)
DREAM_PROMPTS: tuple[Callable[..., str], ...] = (dream,)


def prompts_of(dream_tools: bool) -> list[Prompt]:
    chosen = (DREAM_PROMPTS if dream_tools else ()) + PROMPTS
    return [Prompt.from_function(fn, description=one_line_doc(fn)) for fn in chosen]


# -- the resources: MEMORY.md and the topics, read whole, read-only ------------------------------------------


@resource_answers
def memory_file(ctx: Ctx, path: str) -> str:
    """MEMORY.md or a topic (topics/….md), whole, as the file holds it."""
    return resource_text(gate_of(ctx).get(), path)


class MemoryMCPServer(MCPServer[ServerState]):
    """The SDK's server, whose resource list is read from the root at each request: topics come and go."""

    def __init__(self, gate: MemoryGate, **kwargs: Any) -> None:
        super().__init__("memory", **kwargs)
        self.gate = gate
        self.resource(
            RESOURCE_URI, name="memory file", description=one_line_doc(memory_file), mime_type="text/markdown"
        )(memory_file)

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        files = await anyio.to_thread.run_sync(self.files)  # opening the memory and reading topics block
        uri = UriTemplate.parse(RESOURCE_URI)
        return listed + [
            MCPResource(
                uri=uri.expand({"path": f.path}),
                name=f.path,
                title=f.title,
                description=f.description,
                mime_type="text/markdown",
            )
            for f in files
        ]

    def files(self) -> list[Topic]:
        """MEMORY.md and the topics, or none while the root cannot be served (every tool says why)."""
        memory = self.gate.try_open()
        if memory is None:
            return []
        try:
            return resource_files(memory, LIST_TOPICS_LIMIT)
        except MemoryServerError as exc:
            log.warning("resources/list: %s", exc)
            return []


def build_server(
    memory: Memory | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    open_memory: Callable[[Path], Memory] = Memory,
    background: bool = True,
    watch: bool = True,
    dream_tools: bool = True,
) -> MCPServer[ServerState]:
    """An MCPServer whose tools search and read `memory`, or the memory at `root` once it can be opened;
    `dream_tools=False` leaves out the dream tools and the dream prompt."""
    if memory is None and root is None:
        raise ValueError("build_server needs a Memory or a root")
    gate = MemoryGate(Path(root) if root is not None else Path("."), open_memory, background=background, watch=watch)
    if memory is not None:
        gate.adopt(memory)
    else:
        gate.try_open()
    return server_for(gate, dream_tools=dream_tools)


def server_for(gate: MemoryGate, *, dream_tools: bool = True) -> MCPServer[ServerState]:
    """The MCP server of `gate`: a lifespan that starts its background work and closes it, the tools, the
    prompts and the resources (the dream tools and prompt only with `dream_tools`)."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        gate.start()
        try:
            yield ServerState(gate)
        finally:
            gate.close()

    refused = gate.refusal
    instructions = INSTRUCTIONS if refused is None else f"Memory is not available here: {with_program(refused)}"
    server = MemoryMCPServer(
        gate, version=__version__, instructions=instructions, lifespan=lifespan, tools=tools_of(dream_tools)
    )
    for prompt in prompts_of(dream_tools):
        server.add_prompt(prompt)
    return server


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


def serve(memory: Memory, *, dream_tools: bool = True) -> None:
    """Run the MCP server for an opened `memory` on stdio (benchmarks pass their own; they call
    `process_memory.limit_arenas()` before opening it, as `serve_root` does)."""
    gate = MemoryGate(memory.root.path, Memory)
    gate.adopt(memory)
    _run(server_for(gate, dream_tools=dream_tools), gate.cancel)


def serve_root(
    root: str | os.PathLike[str], open_memory: Callable[[Path], Memory] = Memory, *, dream_tools: bool = True
) -> None:
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
    _run(server_for(gate, dream_tools=dream_tools), gate.cancel)


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
