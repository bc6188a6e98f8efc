"""The server as the MCP SDK's examples write it: a lifespan that owns the memory and yields a typed context, tools
that are typed functions taking `ctx` with their docstrings as descriptions, and no private part of another object
reached into but the one named. Driven in process by the SDK's own client."""

from __future__ import annotations

import ast
import inspect
import logging
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_server import Memory
from memory_server.files.scaffold import init_root
from memory_server.server import DREAM_TOOLS, TOOLS, MemoryGate, build_server, server_for
from memory_server.testing import FakeEmbedder

PACKAGE = Path(__file__).resolve().parents[1] / "memory_server"
# Private attributes of other objects the package may use, each with its reason:
ALLOWED_PRIVATE = {
    "os._exit",  # the standard library's way to end a process without its teardown (stdio_guard.py)
    "server._lowlevel_server",  # the SDK has no public hook for answering lines it cannot parse (server._run)
    "SharedSystemClient._identifier_to_system",  # Chroma keeps a broken store's system; forgotten at its boundary
    "SharedSystemClient._identifier_to_refcount",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    init_root(tmp_path / "root")
    (tmp_path / "root" / "topics" / "printer.md").write_text("# Printer\n\nThe belt runs at 110 Hz.\n")
    return tmp_path / "root"


def test_a_call_while_the_server_shuts_down_is_answered_plainly(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    """It was reported as an internal error with a traceback in the log."""
    gate = MemoryGate(root, lambda path: Memory(path, keyword_only=True), background=False)

    async def main() -> str:
        async with Client(server_for(gate)) as client:
            gate.close()
            result = await client.call_tool("search_exact", {"query": "belt"})
            assert result.is_error
            return "".join(getattr(c, "text", "") for c in result.content)

    with caplog.at_level(logging.INFO):
        text = anyio.run(main)
    assert "shutting down" in text and "internal error" not in text, text
    assert not [r for r in caplog.records if r.exc_info], "no traceback for a call during shutdown"


def test_the_lifespan_starts_the_memory_s_worker_and_closes_the_memory(root: Path) -> None:
    memory = Memory(root, embedder=FakeEmbedder())

    async def main() -> None:
        async with Client(build_server(memory, watch=False)) as client:
            memory.wait_for_keyword_pass(10)
            found = await client.call_tool("search_exact", {"query": "110 Hz"})
            assert found.structured_content and found.structured_content["hits"]
            assert memory.background().keyword_ready.is_set()  # started by the lifespan, not before

    anyio.run(main)
    assert memory.closing  # no repair starts any more; the worker stops at its next step
    deadline = time.monotonic() + 30
    while memory.background().running:
        assert time.monotonic() < deadline, "the worker did not stop"
        time.sleep(0.1)


def test_the_tools_are_typed_functions_described_by_their_docstrings(root: Path) -> None:
    async def main() -> dict[str, str]:
        async with Client(build_server(Memory(root, keyword_only=True), background=False)) as client:
            return {t.name: t.description or "" for t in (await client.list_tools()).tools}

    listed = anyio.run(main)
    assert listed == {fn.__name__: " ".join((inspect.getdoc(fn) or "").split()) for fn in (*TOOLS, *DREAM_TOOLS)}
    for fn in (*TOOLS, *DREAM_TOOLS):
        hints = inspect.signature(fn).parameters
        assert "ctx" in hints and all(p.annotation is not inspect.Parameter.empty for p in hints.values())
        assert "CallToolResult" in str(inspect.signature(fn).return_annotation)


def test_search_memory_publishes_the_description_the_caller_queries_were_written_from(root: Path) -> None:
    """The benchmark's caller-written queries (bench/queries/) were written from one description of
    search_memory, quoted in their README: the server publishes that text, so a change to it fails here
    (and the queries must then be written again from the new text)."""

    async def main() -> dict[str, tuple[str, dict[str, object]]]:
        async with Client(build_server(Memory(root, keyword_only=True), background=False)) as client:
            return {t.name: (t.description or "", t.input_schema) for t in (await client.list_tools()).tools}

    description, schema = anyio.run(main)["search_memory"]
    readme = (Path(__file__).resolve().parents[1] / "bench" / "queries" / "README.md").read_text(encoding="utf-8")
    quoted = readme.split("```text\n", 1)[1].split("```", 1)[0]
    body, parameters = quoted.split("\n\n", 1)[1].split("\nParameters:\n", 1)
    assert description == " ".join(body.split())
    assert "- query (string): the question, in the notes' words as above" in parameters
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert properties["query"]["description"] == "the question, in the notes' words as above"


def _private_reaches(path: Path) -> list[str]:
    """`x._name` where x is not self or cls and `_name` is not defined in the module itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    own |= {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Attribute)
    }
    annotated = [n.target for n in ast.walk(tree) if isinstance(n, ast.AnnAssign)]
    own |= {t.attr if isinstance(t, ast.Attribute) else ast.unparse(t) for t in annotated}
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and ast.unparse(node.value) not in ("self", "cls")
        and node.attr not in own
    ]


def test_no_private_part_of_another_object_is_reached_into_but_those_named() -> None:
    found = {f"{p.relative_to(PACKAGE)}: {reach}" for p in PACKAGE.rglob("*.py") for reach in _private_reaches(p)}
    assert {line for line in found if line.split(": ", 1)[1] not in ALLOWED_PRIVATE} == set()
    assert sum("_lowlevel_server" in line for line in found) == 1  # one place, with its reason
