"""End to end: `memory-server serve` as a subprocess, driven by the MCP SDK's stdio client."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from mcp_client import connect, error_text, payload

EXPECTED_TOOLS = {"search_memory", "search_exact", "read_memory", "list_topics", "memory_status"}


async def wait_indexed(session, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = payload(await session.call_tool("memory_status", {}))
        if status["keyword_index"]["fresh"] and status["files"] > 0:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"index never became fresh: {status}")
        await anyio.sleep(0.2)


def test_every_tool_over_stdio(root: Path):
    async def main() -> None:
        async with connect(root) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == EXPECTED_TOOLS
            for t in tools.values():
                assert t.annotations is not None and t.annotations.read_only_hint is True
                assert t.description and len(t.description) > 80  # written for the model that reads it
            status = await wait_indexed(s)
            assert status["files_by_layer"] == {"topic": 4, "session": 1}

            got = payload(await s.call_tool("search_exact", {"query": "192.168.1.50", "k": 3}))
            top = got["hits"][0]
            assert set(top) >= {"path", "start_line", "end_line", "layer", "title", "heading", "date", "score", "text"}
            assert top["path"] == "topics/printer.md" and top["start_line"] == 9 and top["layer"] == "topic"
            assert "192.168.1.50" in top["text"] and top["match"] == "phrase"

            got = payload(await s.call_tool("search_exact", {"query": 'NEAR(" AND * -x:', "k": 3}))
            assert isinstance(got["hits"], list)

            got = payload(await s.call_tool("read_memory", {"path": top["path"], "start_line": 9, "end_line": 9}))
            assert "192.168.1.50" in got["text"]

            topics = payload(await s.call_tool("list_topics", {}))["topics"]
            assert {t["path"] for t in topics} >= {"topics/printer.md", "topics/tooling.md", "topics/lessons.md"}

            got = payload(await s.call_tool("search_memory", {"query": "tightening the drive belt", "k": 3}))
            assert got["hits"] and got["mode"] in ("hybrid", "keyword")

            refused = await s.call_tool("read_memory", {"path": "../../etc/passwd"})
            assert "outside the memory root" in error_text(refused)
            bad_k = await s.call_tool("search_exact", {"query": "x", "k": 0})
            assert "k is 0" in error_text(bad_k)
            # the server still answers after errors
            assert payload(await s.call_tool("search_exact", {"query": "E-1042"}))["hits"]

    anyio.run(main)


def test_repository_memory_literal_search_over_mcp():
    """This repository is a memory root: a literal from its own topics comes back with file and lines."""
    repo = Path(__file__).resolve().parents[1]

    async def main() -> None:
        async with connect(repo) as s:
            await wait_indexed(s)
            got = payload(await s.call_tool("search_exact", {"query": "BEGIN IMMEDIATE", "k": 3}))
            hits = got["hits"]
            assert hits and hits[0]["path"].startswith("topics/")
            lines = (repo / hits[0]["path"]).read_text().splitlines()
            assert "BEGIN IMMEDIATE" in "\n".join(lines[hits[0]["start_line"] - 1 : hits[0]["end_line"]])

    anyio.run(main)


@pytest.mark.parametrize("argv", [["serve", "--help"], ["index", "--help"], ["search", "--help"]])
def test_help_documents_commands(argv, capsys):
    from memory_server.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "--root" in capsys.readouterr().out
