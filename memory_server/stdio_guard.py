"""Guards on the stdio channel between the client and the MCP SDK.

- `exit_on_hangup`: the SDK finishes requests in flight before it returns, and a request can wait (for a
  lock another process holds, say). A client that closed stdin is gone, so a watchdog polls a duplicate of
  the stdin pipe for the hang-up, stops background work at once, and ends the process if it is still alive
  EXIT_GRACE_SECONDS later. The server and everything it started are gone within two seconds.
- `stop_on_signals`: SIGINT (Ctrl-C) and SIGTERM end the input as a hang-up would: background work stops,
  the SDK returns, the server closes its indices and exits; a watchdog ends the process if that takes longer
  than STOP_GRACE_SECONDS.
- `repair_stdin`: the SDK's strict JSON parser drops a line it cannot parse without answering it, so the
  client waits forever. Lines with a lone surrogate escape (valid JSON, not valid Unicode) or an integer
  too long to parse are made answerable on the way in.
- `serve_stdio`: runs the SDK's server on its own stdio transport, and answers every line that is still not
  a valid JSON-RPC message with a JSON-RPC error (-32700 parse error, -32600 invalid request; with the
  line's id when it has one, else null), sent through the SDK's own writer so answers never interleave.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 1.0
STOP_GRACE_SECONDS = 0.9  # after SIGINT or SIGTERM, the clean stop gets this long before the process just ends


def exit_on_hangup(on_hangup: Callable[[], None]) -> None:
    """When the client hangs up stdin, call `on_hangup` (stop background work), then end the process if it
    is still alive EXIT_GRACE_SECONDS later."""
    try:
        fd = os.dup(0)  # the SDK points fd 0 at /dev/null while it serves; keep our own view of the pipe
        mode = os.fstat(fd).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        os.close(fd)  # a file or terminal on stdin: there is no hang-up to see
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0))
        while True:
            events = poller.poll()
            if any(
                ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0))
                for _, ev in events
            ):
                break
        on_hangup()
        time.sleep(EXIT_GRACE_SECONDS)
        log.warning("the client closed stdin %.1fs ago and a request is still running; exiting now", EXIT_GRACE_SECONDS)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(0)

    threading.Thread(target=watch, name="memory-hangup", daemon=True).start()


# A JSON escape for half of a UTF-16 surrogate pair, and an integer too long for the SDK's JSON parser.
_NEEDS_REPAIR = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[0-9]{4000}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def repair_line(line: bytes) -> bytes:
    """A protocol line the SDK's strict JSON parser would drop without an answer, made answerable.

    Lone surrogate escapes ("\\ud800", valid JSON that is not valid Unicode) become U+FFFD, as a search does
    with them anyway; integers too long to parse become strings, which the tool then refuses with a clear
    argument error. Any other line passes through untouched (cheaply: one regex scan)."""
    if not _NEEDS_REPAIR.search(line):
        return line
    try:
        message = json.loads(line, parse_int=lambda s: int(s) if len(s) < 4000 else s)
    except ValueError:
        return line
    return json.dumps(_replace_surrogates(message), ensure_ascii=False).encode("utf-8") + b"\n"


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def repair_stdin() -> Callable[[], None] | None:
    """Put repair_line between the client and the SDK: fd 0 becomes a pipe a thread fills from the real
    stdin, line by line; when the client closes stdin the pipe closes too, and the SDK sees the end.

    Returns a function that ends the SDK's input at once (a stop by signal), or None when stdin is left as
    it was."""
    try:
        client = os.dup(0)
        read_end, write_end = os.pipe()
    except OSError:
        return None
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(client, "rb") as src, os.fdopen(write_end, "wb") as dst:
            try:
                for line in src:
                    dst.write(repair_line(line))
                    dst.flush()
            except (BrokenPipeError, OSError):
                pass

    def end_input() -> None:
        # /dev/null takes the pipe's only write end (the fd number stays valid for the pump, which then
        # writes nowhere), so the SDK reads the end of its input.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, write_end)
            os.close(devnull)
        except OSError:
            pass

    threading.Thread(target=pump, name="memory-stdin", daemon=True).start()
    return end_input


def stop_on_signals(on_stop: Callable[[], None], end_input: Callable[[], None] | None) -> threading.Event:
    """SIGINT and SIGTERM: stop background work (`on_stop`), end the SDK's input so the server shuts down
    cleanly, and end the process STOP_GRACE_SECONDS later if it is still running. Returns the event set
    when a stop signal came."""
    stopping = threading.Event()

    def watchdog(name: str) -> None:
        time.sleep(STOP_GRACE_SECONDS)
        log.warning("%s: the server did not stop within %.1f s; exiting now", name, STOP_GRACE_SECONDS)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(0)

    def handle(signum: int, _frame: Any) -> None:
        if stopping.is_set():
            return
        stopping.set()
        name = signal.Signals(signum).name
        log.info("%s received: stopping the server", name)
        threading.Thread(target=watchdog, args=(name,), name="memory-stop", daemon=True).start()
        on_stop()
        if end_input is not None:
            end_input()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handle)
    return stopping


def exit_now(status: int = 0) -> None:
    """End the process at once, output flushed: after a clean stop, skip the interpreter's teardown of the
    libraries it loaded (over a second with the model and Chroma loaded)."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def error_answer(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message (`exc` is what its reader raised)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(
                code=types.PARSE_ERROR,
                message="parse error: the line is not valid JSON; send one JSON-RPC message per line",
            ),
        )
    rid: int | str | None = None
    for e in errors:
        got = e.get("input")
        if isinstance(got, dict) and len(e.get("loc", ())) <= 2:
            value = got.get("id")
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                rid = value
                break
    where = "; ".join(
        dict.fromkeys(f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'message'}: {e['msg']}" for e in errors[:6])
    )
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=rid,
        error=types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"invalid request: not a JSON-RPC 2.0 request, response or notification ({where[:500]})",
        ),
    )


async def serve_stdio(server: Any) -> None:
    """Serve a low-level MCP `server` on stdin/stdout until the client closes stdin; unreadable lines get a
    JSON-RPC error answer instead of none."""
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        answer = error_answer(item)
                        # the line itself is not logged: it may hold anything, a secret included
                        log.warning("answered an unreadable protocol line with JSON-RPC error %d", answer.error.code)
                        await write_stream.send(SessionMessage(answer))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            await server.run(receive, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
