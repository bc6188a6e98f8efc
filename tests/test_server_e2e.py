"""End to end: `memory-server serve` as a subprocess, driven by the MCP SDK's stdio client."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import anyio
import pytest
from filelock import FileLock
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_client import connect, error_text, payload, wait_until_indexed

from memory_server import __version__

SEARCH_TOOLS = {"search_memory", "search_exact", "read_memory", "list_topics", "memory_status"}
DREAM_TOOLS = {"dream_gather", "dream_propose", "dream_record", "dream_verdicts"}  # for clients without a shell
EXPECTED_TOOLS = SEARCH_TOOLS | DREAM_TOOLS


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
                assert t.annotations is not None and t.annotations.destructive_hint is False
                assert bool(t.annotations.read_only_hint) is (t.name in SEARCH_TOOLS | {"dream_record"}), t.name
                assert t.description and len(t.description) > 80  # written for the model that reads it
            status = await wait_indexed(s)
            assert status["files_by_layer"] == {"topic": 4, "session": 1}

            got = payload(await s.call_tool("search_exact", {"query": "192.168.1.50", "k": 3}))
            top = got["hits"][0]
            assert set(top) >= {"path", "start_line", "end_line", "layer", "date", "score", "text"}
            assert got["titles"] == {"topics/printer.md": "Printer"}
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

    code: object
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None)
    assert "--root" in capsys.readouterr().out


# -- a root that cannot be served -----------------------------------------------------------------------


async def every_tool_refuses(session, *needles: str) -> None:
    """Every tool answers with a tool error holding each of `needles`."""
    calls = {
        "search_memory": {"query": "belt"},
        "search_exact": {"query": "belt"},
        "read_memory": {"path": "MEMORY.md"},
        "list_topics": {},
        "memory_status": {},
        "dream_gather": {},
        "dream_propose": {"items": []},
        "dream_record": {"ref": "transcript:x:1"},
        "dream_verdicts": {"proposal_id": "x", "verdicts": []},
    }
    tools = {t.name for t in (await session.list_tools()).tools}
    assert tools == EXPECTED_TOOLS
    for name, args in calls.items():
        message = error_text(await session.call_tool(name, args))
        for needle in needles:
            assert needle in message, (name, message)


def test_a_folder_that_is_not_a_memory_root_is_refused_and_left_alone(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("# Notes\n\nbelt tension 110 Hz\n", encoding="utf-8")

    async def main() -> None:
        async with connect(plain) as s:
            await every_tool_refuses(s, "not a memory root", "memory-server init", "MEMORY_ROOT")

    anyio.run(main)
    assert sorted(p.name for p in plain.iterdir()) == ["notes.md"], "nothing may be written outside a memory root"


def test_the_server_gives_its_version_and_names_the_program_that_serves_in_its_hints(tmp_path: Path):
    """serverInfo.version is the package's version. Started by its path with no `memory-server` on PATH (as
    `claude mcp add ... "$PWD/.venv/bin/memory-server" serve` starts it), a tool's error names that path in
    its hint: a bare `memory-server` would not run."""
    plain = tmp_path / "plain"
    plain.mkdir()
    script = Path(sys.executable).parent / "memory-server"
    assert script.is_file(), "the package's `memory-server` script is installed beside this Python"
    path = os.pathsep.join(p for p in ("/usr/bin", "/bin") if not (Path(p) / "memory-server").exists())
    params = StdioServerParameters(
        command=str(script),
        args=["serve", "--root", str(plain)],
        env={"PATH": path, "HOME": str(tmp_path), "MEMORY_SERVER_CONFIG": os.devnull},
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            info = (await s.initialize()).server_info
            assert (info.name, info.version) == ("memory", __version__)
            message = error_text(await s.call_tool("search_exact", {"query": "belt"}))
            assert f"run `{script} init --root {plain}`" in message, message
            assert "`memory-server init" not in message

    anyio.run(main)


def test_a_missing_root_is_a_tool_error_and_a_log_line(tmp_path: Path):
    missing = tmp_path / "missing"
    errlog = (tmp_path / "stderr.txt").open("w+")

    async def main() -> None:
        async with connect(missing, errlog=errlog) as s:
            await every_tool_refuses(s, f"memory root {missing} does not exist", "memory-server init")

    anyio.run(main)
    errlog.seek(0)
    assert f"memory root {missing} does not exist" in errlog.read()
    assert not missing.exists()


def test_a_bad_memory_yaml_is_refused_like_the_cli_until_fixed(root: Path):
    (root / "memory.yaml").write_text("search:\n  defualt_k: 3\n", encoding="utf-8")

    async def main() -> None:
        async with connect(root) as s:
            await every_tool_refuses(s, "unknown setting search.defualt_k")
            (root / "memory.yaml").write_text("search:\n  default_k: 3\n", encoding="utf-8")
            got = payload(await s.call_tool("search_exact", {"query": "192.168.1.50"}))
            assert got["hits"][0]["path"] == "topics/printer.md", "a fixed memory.yaml needs no restart"

    anyio.run(main)


def test_memory_yaml_edits_apply_while_the_server_runs(root: Path):
    """memory.yaml is read again when it changes: a valid edit applies at the next call (the tools' default `k`
    included), a broken one makes every tool answer with the error until it is fixed, and a change that needs
    the model or vector store opened again says it waits for the next start. No restart anywhere."""
    lines = "\n".join(f"- Belt note {i}: tension {100 + i} Hz." for i in range(12))
    (root / "topics" / "belts.md").write_text(f"# Belts\n\n{lines}\n", encoding="utf-8")

    async def hits(s) -> int:
        return len(payload(await s.call_tool("search_exact", {"query": "Belt note"}))["hits"])

    async def main() -> None:
        async with connect(root) as s:
            schema = {t.name: t for t in (await s.list_tools()).tools}["search_exact"].input_schema
            assert "default" not in schema["properties"]["k"], "k's default is the current setting, not a number"
            await wait_indexed(s)
            assert await hits(s) == 6
            (root / "memory.yaml").write_text("search:\n  default_k: 3\n", encoding="utf-8")
            assert await hits(s) == 3, "a valid edit applies at the next call"
            (root / "memory.yaml").write_text("search:\n  default_k: 3\n  defualt_k: 4\n", encoding="utf-8")
            await every_tool_refuses(s, "unknown setting search.defualt_k")
            (root / "memory.yaml").write_text("search:\n  default_k: 2\n", encoding="utf-8")
            assert await hits(s) == 2, "a fixed memory.yaml works at the next call"
            (root / "memory.yaml").write_text("search:\n  default_k: 2\nembedding:\n  batch_size: 8\n")
            status = payload(await s.call_tool("memory_status", {}))
            assert any("embedding settings: they apply when the server starts again" in n for n in status["notes"])
            assert await hits(s) == 2

    anyio.run(main)


def test_init_after_start_needs_no_restart(tmp_path: Path):
    from memory_server.files.scaffold import init_root

    later = tmp_path / "later"
    later.mkdir()

    async def main() -> None:
        async with connect(later) as s:
            await every_tool_refuses(s, "not a memory root")
            init_root(later)
            assert payload(await s.call_tool("list_topics", {}))["topics"]

    anyio.run(main)


# -- answers: complete early, compact, honest about indexing --------------------------------------------


def test_first_search_on_a_never_indexed_small_root_has_hits(root: Path):
    """The first keyword pass of a small root finishes before the first answer."""
    assert not (root / ".memory" / "index.sqlite3").exists()

    async def main() -> None:
        async with connect(root) as s:
            got = payload(await s.call_tool("search_memory", {"query": "belt tension"}))
            assert got["hits"], got
            assert "not been indexed" not in got.get("note", "")

    anyio.run(main)


def test_tools_publish_output_schemas_and_short_descriptions(root: Path):
    async def main() -> None:
        async with connect(root) as s:
            tools = (await s.list_tools()).tools
            for t in tools:
                schema = t.output_schema
                assert schema and schema.get("properties"), f"{t.name} publishes no output schema"
                assert schema.get("additionalProperties") is not True or len(schema["properties"]) > 2
                # search_memory's asks for the query in the notes' words, with an example, and for a request the
                # words of how the person wants it done (bench/queries/README.md): longer, still one line
                limit = 575 if t.name == "search_memory" else 300
                assert t.description and "\n" not in t.description and len(t.description) <= limit, t.description
            search = next(t for t in tools if t.name == "search_memory").output_schema
            assert search is not None
            hit = search["$defs"]["SearchHit"]["properties"]
            assert {"path", "start_line", "end_line", "layer", "date", "score", "text"} <= set(hit)

            # What the model reads of the tools (name, description, input schema) stays small: no derived
            # titles, no "or null" on optional fields (3,688 characters before they were written this way); the
            # dream tools, for clients without a shell, add at most 1,400 (the Claude Code plugin leaves them out).
            def seen(names: set[str]) -> int:
                read = [[t.name, t.description, t.input_schema] for t in tools if t.name in names]
                return len(json.dumps(read, separators=(",", ":")))

            assert seen(SEARCH_TOOLS) <= 2500, seen(SEARCH_TOOLS)
            assert seen(DREAM_TOOLS) <= 1400, seen(DREAM_TOOLS)
            published = json.dumps([[t.input_schema, t.output_schema] for t in tools])
            assert not re.search(r'"title": "', published), "derived titles"  # a property named title stays
            assert '{"type": "null"}' not in published, "optional fields are written as their type alone"
            after = next(t for t in tools if t.name == "search_exact").input_schema["properties"]["after"]
            assert after == {"type": "string", "description": "YYYY-MM-DD, inclusive"}

    anyio.run(main)


def test_a_search_answer_is_compact_json_in_rank_order(root: Path):
    async def main() -> None:
        async with connect(root) as s:
            await wait_indexed(s)
            result = await s.call_tool("search_exact", {"query": "belt", "k": 6})
            text = "".join(getattr(c, "text", "") for c in result.content)
            got = json.loads(text)
            assert text == json.dumps(got, ensure_ascii=False, separators=(",", ":")), "no indentation, no padding"
            assert got == result.structured_content
            assert "note" not in got, "indexing is over: nothing to explain"
            assert len(got["hits"]) >= 3
            for hit in got["hits"]:
                assert set(hit) <= {
                    "path",
                    "start_line",
                    "end_line",
                    "layer",
                    "date",
                    "score",
                    "heading",
                    "text",
                    "match",
                }
                assert "title" not in hit and hit["path"] in got["titles"]
            scores = [h["score"] for h in got["hits"]]
            assert scores == sorted(scores, reverse=True), scores

    anyio.run(main)


def test_a_search_on_a_never_indexed_root_says_why_it_found_nothing(root: Path):
    from memory_server import Memory

    memory = Memory(root, keyword_only=True)
    try:
        assert memory.search_exact("SAVE_CONFIG") == []
        note = memory.search_note("keyword", found=False, semantic=False)
        assert note is not None and "not been indexed yet (5 files waiting)" in note, note
        assert f"memory-server index --root {root}" in note and "few seconds" not in note  # no server indexes it
        memory.index()
        assert memory.search_exact("SAVE_CONFIG")
        assert memory.search_note("keyword", found=True, semantic=False) is None
    finally:
        memory.close()


def test_a_server_s_search_before_its_first_pass_says_indexing_has_started(root: Path):
    """With the memory's own worker running (the server's), the index is on its way: ask again shortly."""
    from memory_server import Memory
    from memory_server.files.locks import INDEX_LOCK

    (root / ".memory").mkdir(exist_ok=True)
    memory = Memory(root, keyword_only=True)
    try:
        with FileLock(str(root / ".memory" / INDEX_LOCK)):  # another writer: the worker's first pass waits
            memory.background(watch=False).start()
            note = memory.search_note("keyword", found=False, semantic=False)
        assert note is not None and "not been indexed yet" in note, note
        assert "indexing has started in the background; ask again in a few seconds" in note, note
    finally:
        memory.close()


def test_a_search_during_the_first_keyword_pass_says_how_far_it_got(tmp_path: Path):
    """The indexer reports its progress after every file; a search meanwhile says how far it is."""
    from memory_server import Memory
    from memory_server.files.scaffold import init_root

    root = tmp_path / "big"
    init_root(root)
    for i in range(401):  # with MEMORY.md and lessons.md: 403 files
        (root / "topics" / f"note{i:03d}.md").write_text(f"# Note {i}\n\nwidget {i}\n", encoding="utf-8")
    memory = Memory(root, keyword_only=True)
    notes: list[str | None] = []

    def during(stage: str, done: int, total: int) -> None:
        if stage == "reading files" and done < total:
            notes.append(memory.search_note("keyword", found=True, semantic=False))

    try:
        memory.index(progress=during)
        assert notes == [
            f"indexing: {403 - n} of 403 files not read yet; keyword results only, so far" for n in range(403)
        ]
        assert memory.search_note("keyword", found=True, semantic=False) is None, "finished: no note"
        notes.clear()
        memory.index(verify=True, progress=during)  # a later pass over an index already full: nothing to say
        assert notes and set(notes) == {None}
    finally:
        memory.close()


def test_a_search_while_vectors_fill_says_so_and_how_many_files_wait(tmp_path: Path):
    """Over MCP with the real model, on a never-indexed root of 640 passages: the first search answers while the
    vector store is still filling (or before it has any vector), and its answer says so: mode `partial` (or
    `keyword`), and a note with how many files wait. Once every file has its vectors: `hybrid`, no note."""
    from memory_server.files.scaffold import init_root

    root = tmp_path / "big"
    init_root(root)
    for i in range(80):
        paragraphs = "\n\n".join(f"Widget {i}.{j} was calibrated to {i * 10 + j} units on bench {j}." for j in range(8))
        (root / "topics" / f"widget{i:02d}.md").write_text(f"# Widget {i}\n\n{paragraphs}\n", encoding="utf-8")

    async def main() -> None:
        async with connect(root) as s:
            got = payload(await s.call_tool("search_memory", {"query": "how was widget 7 calibrated?"}))
            assert got["mode"] in ("partial", "keyword"), got
            waiting = re.match(r"indexing: (\d+) of (\d+) files wait for their vectors", got.get("note", ""))
            assert waiting and 0 < int(waiting[1]) <= int(waiting[2]) == 82, got.get("note")  # with MEMORY.md, lessons
            await wait_until_indexed(s, semantic=True)
            got = payload(await s.call_tool("search_memory", {"query": "how was widget 7 calibrated?"}))
            assert got["mode"] == "hybrid" and "note" not in got, got

    anyio.run(main)


RANKING_QUERIES = [
    "how do several servers share one index safely?",
    "chroma lock",
    "what was decided about ranking",
    "hooks",
    "read only root",
    "dream proposal review",
    "test suite shared data",
    "compress transcripts",
]


def test_shown_scores_fall_with_rank(tmp_path: Path):
    """Diversity and the literal tiers reorder hits after scoring; the scores shown must still fall down the
    list (this repository's own memory, the real model, over MCP)."""
    import shutil

    from mcp_client import wait_until_indexed

    repo = Path(__file__).resolve().parents[1]
    root = tmp_path / "memory"
    root.mkdir()
    shutil.copy(repo / "MEMORY.md", root / "MEMORY.md")
    for folder in ("topics", "sessions"):
        if (repo / folder).is_dir():
            shutil.copytree(repo / folder, root / folder)

    async def main() -> None:
        async with connect(root) as s:
            await wait_until_indexed(s)
            for tool in ("search_memory", "search_exact"):
                for query in RANKING_QUERIES:
                    got = payload(await s.call_tool(tool, {"query": query, "k": 10}))
                    scores = [h["score"] for h in got["hits"]]
                    assert scores == sorted(scores, reverse=True), (tool, query, scores)

    anyio.run(main)


ANSWER_BUDGET_CHARS = 6000  # about 1,500 tokens of JSON


def test_a_default_answer_fits_the_token_budget(tmp_path: Path):
    """Long matching passages in many files: the whole answer (text and metadata) stays within the budget."""
    from memory_server.files.scaffold import init_root

    root = tmp_path / "memory"
    init_root(root)
    subjects = [
        "pulley",
        "stepper",
        "hotend",
        "extruder",
        "bed mesh",
        "fan duct",
        "probe",
        "gantry",
        "nozzle",
        "thermistor",
        "idler",
        "frame",
        "spool",
        "enclosure",
        "firmware",
    ]
    for n in range(30):  # different passages (near-duplicates would be dropped), each far over one hit's share
        paragraph = " ".join(
            f"Widget calibration of the {subjects[(n + i) % len(subjects)]} ({n}.{i}) tightens "
            f"the belt to {100 + n + i} Hz."
            for i in range(24)
        )
        (root / "topics" / f"widget-{n:02d}.md").write_text(
            f"---\ntitle: Widget {n}\nupdated: 2026-03-{n % 28 + 1:02d}\n---\n# Widget {n}\n\n## Calibration\n\n"
            f"{paragraph}\n",
            encoding="utf-8",
        )

    async def main() -> None:
        async with connect(root) as s:
            await wait_indexed(s)
            for tool in ("search_exact", "search_memory"):
                result = await s.call_tool(tool, {"query": "widget calibration belt"})
                text = "".join(getattr(c, "text", "") for c in result.content)
                got = json.loads(text)
                assert len(got["hits"]) == 6, got
                assert len(text) <= ANSWER_BUDGET_CHARS, (tool, len(text))

    anyio.run(main)
