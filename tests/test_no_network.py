"""Nothing in the server opens a network connection: no telemetry, no model download, no lookup.

The server runs under a Python audit hook that records every attempt to resolve a host name or to connect
a socket to anything but a local (AF_UNIX) address, and is driven end to end: background indexing with the
real model and Chroma, both searches, status, read, and a clean shutdown. The hook's record must be empty.
(tests/test_live_server.py also runs the server in a network namespace with no interfaces at all.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_client import payload, server_params

AUDITED_SERVER = """
import socket, sys
record = open(sys.argv[1], "a", buffering=1)

def hook(event, args):
    if event == "socket.getaddrinfo":
        record.write(f"getaddrinfo {args[0]!r}:{args[1]!r}\\n")
    elif event == "socket.connect":
        sock, address = args
        if sock.family != socket.AF_UNIX:
            record.write(f"connect {address!r}\\n")

sys.addaudithook(hook)
from memory_server.cli import main
sys.exit(main(["serve", "--root", sys.argv[2]]))
"""


def test_the_server_never_touches_the_network(root: Path, tmp_path: Path) -> None:
    record = tmp_path / "network.log"
    record.write_text("")
    base = server_params(root)
    params = StdioServerParameters(
        command=sys.executable, args=["-c", AUDITED_SERVER, str(record), str(root)], env=base.env
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                deadline = time.monotonic() + 120
                while True:  # the real model loads and every chunk gets its vector in Chroma
                    st = payload(await s.call_tool("memory_status", {}))
                    sem = st["semantic_index"]
                    if st["keyword_index"]["fresh"] and sem["pending_files"] == 0 and sem["vectors"] == st["chunks"]:
                        break
                    assert time.monotonic() < deadline, st
                    await anyio.sleep(0.2)
                got = payload(await s.call_tool("search_memory", {"query": "how tight is the X belt?"}))
                assert got["mode"] == "hybrid" and got["hits"]
                assert payload(await s.call_tool("search_exact", {"query": "192.168.1.50"}))["hits"]
                assert payload(await s.call_tool("list_topics", {}))["topics"]
                assert "SAVE_CONFIG" in payload(await s.call_tool("read_memory", {"path": "topics/printer.md"}))["text"]

    anyio.run(main)
    attempts = record.read_text()
    assert attempts == "", f"the server tried to use the network:\n{attempts}"


def test_the_audit_hook_would_see_a_connection(tmp_path: Path) -> None:
    """The hook above is not blind: a process that does open a connection is recorded."""
    import subprocess

    record = tmp_path / "network.log"
    probe = AUDITED_SERVER.split("from memory_server.cli")[0] + (
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\nexcept OSError:\n    pass\n"
    )
    subprocess.run([sys.executable, "-c", probe, str(record), "unused"], check=True, timeout=60)
    assert "connect ('127.0.0.1', 9)" in record.read_text()
