"""Several processes on one root: three servers searching and watching, a CLI rebuild, and files being
written, all at once. Every call answers; afterwards no index is corrupt and every file is indexed exactly
once, in both indices.

The servers are real `memory-server serve` processes with the real model, driven over stdio by the MCP
SDK's client; the rebuild is the real `memory-server index --rebuild`.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
from conftest import write
from mcp_client import connect, payload, wait_until_indexed

from memory_server import Memory
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.parse.markdown import parse_document

SERVERS = 3
WRITES = 40
SETTLE_SECONDS = 90.0


def topic_text(i: int, version: int) -> str:
    return (
        f"---\ntitle: Topic {i}\nupdated: 2026-0{1 + i % 9}-1{i % 10}\n---\n# Topic {i}\n\n"
        f"Marker zqt{i}v{version} names this version of the topic.\n\n"
        f"- The service on port {8000 + i} restarts when its health check fails twice.\n"
        f"- Deploys of component {i} go through the staging cluster first.\n\n"
        f"## Notes\n\nWe measured latency for component {i} at {10 + version} milliseconds.\n"
    )


def session_text(i: int, version: int) -> str:
    return (
        f"---\nsession_id: s{i:04d}\nstarted: 2026-05-{1 + i % 28:02d}T10:00:00Z\n---\n# Session {i}\n\n"
        f"- Marker zqs{i}v{version}: tried a fix for the flaky test in module {i}.\n"
        f"- The retry budget was raised to {i + version} attempts.\n"
    )


def seed(root: Path) -> dict[str, str]:
    """The starting files; returns {relative path: marker of its current version}."""
    init_root(root)
    markers: dict[str, str] = {}
    for i in range(12):
        write(root, f"topics/t{i}.md", topic_text(i, 0))
        markers[f"topics/t{i}.md"] = f"zqt{i}v0"
    for i in range(8):
        write(root, f"sessions/compressed/2026/2026-05-0{1 + i % 9}-s{i}.md", session_text(i, 0))
        markers[f"sessions/compressed/2026/2026-05-0{1 + i % 9}-s{i}.md"] = f"zqs{i}v0"
    return markers


def mutate(root: Path, markers: dict[str, str], retired: set[str], rng: random.Random, step: int) -> None:
    """One change a person or an editor makes: edit in place, save by rename, create, delete, or rename.
    Markers of versions that no longer exist go to `retired`."""
    before = set(markers.values())
    _mutate(root, markers, rng, step)
    retired |= before - set(markers.values())


def _mutate(root: Path, markers: dict[str, str], rng: random.Random, step: int) -> None:
    topics = sorted(p for p in markers if p.startswith("topics/"))
    action = rng.choice(["edit", "edit", "save_by_rename", "create", "delete", "rename"])
    version = step + 1
    if action in ("edit", "save_by_rename") and topics:
        rel = rng.choice(topics)
        i = int(Path(rel).stem[1:])
        text = topic_text(i, version)
        if action == "edit":
            (root / rel).write_text(text, encoding="utf-8")
        else:
            tmp = root / "topics" / f".{Path(rel).name}.swp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, root / rel)
        markers[rel] = f"zqt{i}v{version}"
    elif action == "create":
        i = 100 + step
        rel = f"topics/t{i}.md"
        write(root, rel, topic_text(i, version))
        markers[rel] = f"zqt{i}v{version}"
    elif action == "delete" and len(topics) > 4:
        rel = rng.choice(topics)
        (root / rel).unlink()
        del markers[rel]
    elif action == "rename" and topics:
        rel = rng.choice(topics)
        i = int(Path(rel).stem[1:])
        new_rel = f"topics/t{i + 1000}.md"
        if new_rel not in markers:
            text = topic_text(i + 1000, version)
            (root / rel).write_text(text, encoding="utf-8")
            os.replace(root / rel, root / new_rel)
            del markers[rel]
            markers[new_rel] = f"zqt{i + 1000}v{version}"


async def ask(s, n: int, stop: anyio.Event, markers: dict[str, str], calls: dict[str, Any]) -> None:
    """One client's calls, over and over until `stop`: answers and errors counted in `calls`."""
    rng = random.Random(n)
    while not stop.is_set():
        marker = rng.choice(sorted(markers.values()))
        for name, args in (
            ("search_exact", {"query": marker, "k": 3}),
            ("search_memory", {"query": f"how fast is component {rng.randrange(12)}?", "k": 4}),
            ("memory_status", {}),
        ):
            result = await s.call_tool(name, args)
            if result.is_error:
                calls["errors"].append((n, name, args, "".join(getattr(c, "text", "") for c in result.content)))
            else:
                calls["answered"] += 1
        await anyio.sleep(0.05)


async def converged(sessions: list, markers: dict[str, str], retired: set[str]) -> None:
    """Everything has stopped writing: each server converges on the files as they are now, finding every
    file's current version and no stale version of any file."""
    for s in sessions:
        await wait_until_indexed(s, timeout=SETTLE_SECONDS)
    for n, s in enumerate(sessions):
        for rel, marker in sorted(markers.items()):
            hits = payload(await s.call_tool("search_exact", {"query": marker, "k": 5}))["hits"]
            assert [h["path"] for h in hits if marker in h["text"]] == [rel], (n, rel, marker, hits)
        for marker in sorted(retired):
            hits = payload(await s.call_tool("search_exact", {"query": marker, "k": 5}))["hits"]
            assert not [h for h in hits if marker in h["text"]], (n, "stale version found", marker, hits)


def test_three_servers_a_rebuild_and_writers_at_once(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    markers = seed(root)
    retired: set[str] = set()
    logs = [open(tmp_path / f"server{n}.log", "w") for n in range(SERVERS)]
    calls: dict[str, Any] = {"answered": 0, "errors": []}
    rebuild: dict[str, object] = {}

    async def writer(stop: anyio.Event) -> None:
        rng = random.Random(7)
        for step in range(WRITES):
            await anyio.to_thread.run_sync(mutate, root, markers, retired, rng, step)
            await anyio.sleep(0.25)
            if step == WRITES // 3:
                rebuild["started"] = True
        stop.set()

    async def rebuilder() -> None:
        while "started" not in rebuild:
            await anyio.sleep(0.1)
        done = await anyio.run_process(
            [sys.executable, "-m", "memory_server", "index", "--rebuild", "--root", str(root)], check=False
        )
        rebuild["result"] = done

    async def main() -> None:
        async with (
            connect(root, errlog=logs[0]) as s0,
            connect(root, errlog=logs[1]) as s1,
            connect(root, errlog=logs[2]) as s2,
        ):
            sessions = [s0, s1, s2]
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                for n, s in enumerate(sessions):
                    tg.start_soon(ask, s, n, stop, markers, calls)
                tg.start_soon(writer, stop)
                tg.start_soon(rebuilder)
            await converged(sessions, markers, retired)

    try:
        anyio.run(main)
    finally:
        for f in logs:
            f.close()

    assert not calls["errors"], calls["errors"][:5]
    assert calls["answered"] > 3 * SERVERS, calls
    assert len(retired) >= WRITES // 2, "the writer changed too little for the test to mean anything"
    done = rebuild["result"]
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert_indexed_exactly_once(root)


def assert_indexed_exactly_once(root: Path) -> None:
    """Both indices hold exactly the chunks of the files on disk, once each, and SQLite finds no damage."""
    db = sqlite3.connect(root / ".memory" / "index.sqlite3")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        rows = db.execute("SELECT id, path FROM chunks").fetchall()
        files = {r[0] for r in db.execute("SELECT path FROM files")}
    finally:
        db.close()
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate chunks in the keyword index"
    mroot = MemoryRoot(root)
    on_disk = dict(mroot.memory_files())
    assert files == set(on_disk), files ^ set(on_disk)
    expected: dict[str, set[str]] = {}
    for rel, layer in on_disk.items():
        text = mroot.read_text(rel).text
        expected[rel] = {c.id for c in parse_document(rel, layer, text).chunks}
    indexed: dict[str, set[str]] = {}
    for cid, path in rows:
        indexed.setdefault(path, set()).add(cid)
    assert {p: ids for p, ids in indexed.items()} == {p: ids for p, ids in expected.items() if ids}

    memory = Memory(root, embedder=MiniLMEmbedder())
    try:
        vector_ids = memory.vectors.ids()  # type: ignore[union-attr]
    finally:
        memory.close()
    assert vector_ids == set(ids), (len(vector_ids - set(ids)), len(set(ids) - vector_ids))
