"""Talking to a real `memory-server serve` subprocess over stdio, for end-to-end tests.

connect(root)              the MCP SDK's client session (async context manager)
wait_until_indexed(s)      poll memory_status until the index holds the files on disk
finds(query)               for wait_until_indexed(until=...): search_exact finds the query
RawClient(root, errlog)    hand-written JSON-RPC lines on the server's pipes (what an SDK will not send)
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER_COMMAND = [sys.executable, "-m", "memory_server"]
SETTLE_SECONDS = 120.0  # the real model loads and embeds every chunk on a 2-core machine
KEEP_ENV = ("PATH", "HOME", "PYTHONPATH", "LANG", "TMPDIR", "MEMORY_SERVER_TEST_RUN", "MEMORY_SERVER_CONFIG")


def server_params(root: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    full_env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    full_env.update(env or {})
    return StdioServerParameters(
        command=SERVER_COMMAND[0], args=[*SERVER_COMMAND[1:], "serve", "--root", str(root), *extra], env=full_env
    )


@asynccontextmanager
async def connect(
    root: Path, *extra: str, env: dict[str, str] | None = None, errlog: Any = None
) -> AsyncIterator[ClientSession]:
    params = server_params(root, *extra, env=env)
    async with stdio_client(params, errlog=errlog or sys.stderr) as streams:
        read, write = streams
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def payload(result: Any) -> dict[str, Any]:
    """The JSON a tool returned (structured content, else the text content parsed)."""
    if getattr(result, "structured_content", None):
        return result.structured_content
    text = "".join(getattr(c, "text", "") for c in result.content)
    return json.loads(text)


def error_text(result: Any) -> str:
    assert result.is_error, f"expected a tool error, got {result}"
    return "".join(getattr(c, "text", "") for c in result.content)


def is_indexed(status: dict[str, Any], semantic: bool) -> bool:
    """The keyword index is fresh and holds files; with `semantic`, every chunk also has its vector."""
    if not status["keyword_index"]["fresh"] or status["files"] == 0:
        return False
    sem = status["semantic_index"]
    return not semantic or (sem["pending_files"] == 0 and sem["vectors"] == status["chunks"])


async def wait_until_indexed(
    session: ClientSession,
    *,
    semantic: bool = True,
    until: Callable[[ClientSession], Awaitable[bool]] | None = None,
    timeout: float = SETTLE_SECONDS,
) -> dict[str, Any]:
    """Poll memory_status until the server's index holds the files on disk (and `until(session)` holds, when
    given); return that status. Fails with the last status after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        status = payload(await session.call_tool("memory_status", {}))
        if is_indexed(status, semantic) and (until is None or await until(session)):
            return status
        assert time.monotonic() < deadline, f"the server did not finish indexing in {timeout:.0f} s: {status}"
        await anyio.sleep(0.2)


def finds(query: str) -> Callable[[ClientSession], Awaitable[bool]]:
    """For wait_until_indexed(until=...): search_exact for `query` has a hit."""

    async def check(session: ClientSession) -> bool:
        return bool(payload(await session.call_tool("search_exact", {"query": query}))["hits"])

    return check


class RawClient:
    """`memory-server serve` driven by JSON-RPC lines written by hand on its stdin; a thread reads stdout.

    `errlog` is a path (opened and closed here) or an open binary file for the server's stderr. With
    `initialize`, the MCP handshake is done before the constructor returns.
    """

    def __init__(self, root: Path, errlog: Path | IO[bytes], *, initialize: bool = True) -> None:
        self._own_err = isinstance(errlog, Path)
        self.err: IO[bytes] = open(errlog, "wb") if isinstance(errlog, Path) else errlog
        self.proc = subprocess.Popen(
            [*SERVER_COMMAND, "serve", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.errors_without_id: list[dict[str, Any]] = []  # answers to lines whose id could not be read
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        if initialize:
            self.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            )
            self.notify("notifications/initialized")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, line: str) -> None:
        """One line exactly as given (ASCII, so escapes like \\ud800 stay escapes)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "method": method}))

    def send_request(self, method: str, params: dict[str, Any], rid: int | None = None) -> int:
        """Send a request without waiting for its answer; return its id."""
        if rid is None:
            rid, self.next_id = self.next_id, self.next_id + 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return rid

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        rid = self.send_request(method, params)
        assert not self.wait_for({rid}, timeout), f"no answer to {method} in {timeout:.0f} s"
        return self.responses[rid]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        return result.get("structuredContent") or json.loads(result["content"][0]["text"])

    def wait_for(self, ids: set[Any], timeout: float) -> set[Any]:
        """Collect responses until every id in `ids` has one or `timeout` passes; return the ids left."""
        deadline = time.monotonic() + timeout
        while ids - self.responses.keys():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            message = json.loads(line)
            if message.get("id") is None and "error" in message:
                self.errors_without_id.append(message)
            elif "id" in message and ("result" in message or "error" in message):
                self.responses[message["id"]] = message
        return ids - self.responses.keys()

    def wait_until_indexed(self, *, semantic: bool = False, timeout: float = SETTLE_SECONDS) -> dict[str, Any]:
        """The synchronous twin of wait_until_indexed() above."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.call("memory_status")
            if is_indexed(status, semantic):
                return status
            assert time.monotonic() < deadline, f"the server did not finish indexing in {timeout:.0f} s: {status}"
            time.sleep(0.2)

    def close_stdin_and_time_exit(self) -> float:
        """Close the server's stdin (the client goes away); return the seconds it took to exit."""
        assert self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.kill()
        return time.monotonic() - started

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        if self._own_err and not self.err.closed:
            self.err.close()
