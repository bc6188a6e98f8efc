"""A small synchronous wrapper around the MCP SDK's stdio client, for end-to-end tests.

Starts `memory-server serve` as a real subprocess and talks MCP to it over stdin/stdout.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER_COMMAND = [sys.executable, "-m", "memory_server.cli"]


def server_params(root: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    keep = ("PATH", "HOME", "PYTHONPATH", "LANG", "TMPDIR", "MEMORY_SERVER_TEST_RUN")
    full_env = {k: v for k, v in os.environ.items() if k in keep}
    full_env.update(env or {})
    return StdioServerParameters(
        command=SERVER_COMMAND[0], args=[*SERVER_COMMAND[1:], "serve", "--root", str(root), *extra], env=full_env
    )


@asynccontextmanager
async def connect(root: Path, *extra: str, env: dict[str, str] | None = None, errlog=None) -> AsyncIterator[ClientSession]:
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
