"""Scale benchmark: indexing time, freshness after an edit, search latency, memory and disk at 1k-100k chunks.

For each size a deterministic corpus (bench/corpus.py: topics and sessions with prose, lists, code blocks,
snake_case identifiers, CONSTANTS, IPs, error codes) is written to a memory root, then:

  index         full index from nothing: keyword only (no model), then keyword + vectors (time split
                into reading files, embedding, and writing vectors to Chroma)
  reindex       `index()` again with nothing changed (a fresh Memory, as the CLI would)
  rebuild       `index(rebuild=True)` with the embedding cache warm
  edit          one file edited: Memory.index(paths=[file]) + the search that finds the new unique token
                (keyword only, and with vectors + search_memory)
  search        search_exact and search_memory p50/p95 over ~200 queries (half literal, half questions)
  disk          size of .memory/ (FTS database, embedding cache, Chroma)
  server        a real `memory-server serve` over MCP stdio: edit a file and poll search_exact until the
                token appears (the watcher's path), MCP-level search latency, and the server's RSS

`--fake` uses FakeEmbedder for the vectors (hashed bag of words, no model): index times then measure
everything but the model, and say so; the server phase then runs bench/fake_server.py (the same server
code with FakeEmbedder: a real server would re-embed every chunk with the model), so its RSS lacks the model.

Results: bench/results/scale.json (or --json-out). Roots: bench/results/roots/scale-<size>-<seed>.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
import corpus as corpus_mod  # noqa: E402
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.files.root import STATE_DIR  # noqa: E402
from memory_server.index.embedder import Embedder, MiniLMEmbedder  # noqa: E402
from memory_server.settings import Settings  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402


class TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent inside embed() and the texts embedded."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], list[NDArray[np.float32]]]:
        """The same, with token vectors (the indexer keeps them for late interaction)."""
        started = time.perf_counter()
        try:
            return self.inner.embed_with_tokens(texts)  # type: ignore[attr-defined]
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)


@dataclass
class StageClock:
    """A progress callback that remembers when each stage last reported."""

    started: float
    last: dict[str, float]

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.last[stage] = time.perf_counter() - self.started


# -- roots --------------------------------------------------------------------------------------------


def clear_state(root: Path) -> None:
    shutil.rmtree(root / STATE_DIR, ignore_errors=True)


def make_embedder(fake: bool) -> Embedder:
    return FakeEmbedder() if fake else MiniLMEmbedder()


# -- measurements -------------------------------------------------------------------------------------


def time_keyword_index(root: Path, settings: Settings) -> dict[str, Any]:
    clear_state(root)
    memory = Memory(root, settings=settings, keyword_only=True)
    try:
        started = time.perf_counter()
        report = memory.index(timeout=3600)
        seconds = time.perf_counter() - started
        chunks = int(memory.status().chunks)
    finally:
        memory.close()
    return {"seconds": round(seconds, 3), "files": report.files_read, "chunks": chunks}


def time_full_index(root: Path, settings: Settings, embedder: Embedder) -> dict[str, Any]:
    """Index from nothing with vectors; the split between reading files, embedding and the vector store."""
    clear_state(root)
    timed = TimedEmbedder(embedder)
    memory = Memory(root, settings=settings, embedder=timed)
    try:
        started = time.perf_counter()
        assert memory.vectors is not None
        memory.vectors.count()  # opens Chroma (import, client, collection): timed apart from the writes
        open_seconds = time.perf_counter() - started
        clock = StageClock(time.perf_counter(), {})
        report = memory.index(timeout=7200, progress=clock)
        seconds = time.perf_counter() - clock.started
    finally:
        memory.close()
    keyword = clock.last.get("reading files", 0.0)
    return {
        "seconds": round(seconds + open_seconds, 3),
        "chroma_open_seconds": round(open_seconds, 3),
        "keyword_stage_seconds": round(keyword, 3),
        "embed_seconds": round(timed.seconds, 3),
        "vector_store_seconds": round(max(0.0, seconds - keyword - timed.seconds), 3),
        "chunks_embedded": report.chunks_embedded,
        "vectors_written": report.vectors_written,
        "embed_texts_per_second": round(timed.texts / timed.seconds, 1) if timed.seconds else None,
    }


def time_noop_and_rebuild(root: Path, settings: Settings, embedder: Embedder, rebuild: bool) -> dict[str, Any]:
    started = time.perf_counter()
    memory = Memory(root, settings=settings, embedder=embedder)
    opened = time.perf_counter() - started
    try:
        started = time.perf_counter()
        report = memory.index(timeout=600)
        noop = time.perf_counter() - started
        out: dict[str, Any] = {
            "open_seconds": round(opened, 4),
            "reindex_noop_seconds": round(noop, 3),
            "reindex_noop_changed": report.changed,
        }
        if rebuild:
            started = time.perf_counter()
            report = memory.index(rebuild=True, timeout=7200)
            out["rebuild_warm_cache_seconds"] = round(time.perf_counter() - started, 3)
            out["rebuild_chunks_embedded"] = report.chunks_embedded
    finally:
        memory.close()
    return out


def pick_edit_file(files: dict[str, str]) -> str:
    """A mid-sized session file (the kind of file that changes)."""
    sessions = sorted(rel for rel in files if rel.startswith("sessions/"))
    return sessions[len(sessions) // 2] if sessions else sorted(files)[0]


def unique_token() -> str:
    return "benchedit" + uuid.uuid4().hex[:12]


def append_token(root: Path, rel: str, original: str, token: str) -> None:
    text = original.rstrip("\n") + f"\n\nEdited during the scale benchmark: the marker is {token}.\n"
    (root / rel).write_text(text, encoding="utf-8")


def time_edits(memory: Memory, root: Path, rel: str, original: str, runs: int) -> dict[str, Any]:
    """Edit one file, then index(paths=[it]) + search until the token is found; keyword-only and full."""
    keyword_ms: list[float] = []
    full_ms: list[float] = []
    for _ in range(runs):
        token = unique_token()
        append_token(root, rel, original, token)
        started = time.perf_counter()
        memory.index(paths=[rel], vectors=False)
        found = any(token in h.text for h in memory.search_exact(token, 1))
        keyword_ms.append((time.perf_counter() - started) * 1000)
        if not found:
            raise RuntimeError(f"edit token {token} not found by search_exact after index(paths=[{rel}])")
    ranks: list[int | None] = []
    for _ in range(runs):
        token = unique_token()
        append_token(root, rel, original, token)
        started = time.perf_counter()
        memory.index(paths=[rel])
        hits, _mode = memory.search_memory(token, 10)
        full_ms.append((time.perf_counter() - started) * 1000)
        # The token is in exactly one chunk; where search_memory ranks that chunk (None: not in the top 10).
        ranks.append(next((i + 1 for i, h in enumerate(hits) if token in h.text), None))
    (root / rel).write_text(original, encoding="utf-8")
    memory.index(paths=[rel])
    return {
        "file": rel,
        "keyword_only_ms": [round(x, 2) for x in keyword_ms],
        "keyword_only_median_ms": round(statistics.median(keyword_ms), 2),
        "with_vectors_ms": [round(x, 2) for x in full_ms],
        "with_vectors_median_ms": round(statistics.median(full_ms), 2),
        "search_memory_rank_of_edited_chunk": ranks,
    }


def time_searches(memory: Memory, queries: list[tuple[str, str]]) -> dict[str, Any]:
    """search_exact and search_memory over every query; first-query cost (model load) reported apart."""
    started = time.perf_counter()
    memory.search_memory("warm up the model", 6)
    first_memory = time.perf_counter() - started
    exact: list[float] = []
    semantic: list[float] = []
    by_kind: dict[str, dict[str, list[float]]] = {}
    literal_found = literal_total = 0
    modes: set[str] = set()
    for kind, query in queries:
        started = time.perf_counter()
        hits = memory.search_exact(query)
        exact.append(time.perf_counter() - started)
        started = time.perf_counter()
        _hits, mode = memory.search_memory(query)
        semantic.append(time.perf_counter() - started)
        modes.add(mode)
        by_kind.setdefault(kind, {"search_exact": [], "search_memory": []})
        by_kind[kind]["search_exact"].append(exact[-1])
        by_kind[kind]["search_memory"].append(semantic[-1])
        if kind == "literal":
            literal_total += 1
            literal_found += bool(hits) and query.casefold() in hits[0].text.casefold()
    return {
        "queries": len(queries),
        "first_search_memory_ms": round(first_memory * 1000, 2),
        "search_exact": benchlib.latency_summary(exact),
        "search_memory": benchlib.latency_summary(semantic),
        "search_memory_modes": sorted(modes),
        "by_kind": {k: {f: benchlib.latency_summary(v) for f, v in d.items()} for k, d in by_kind.items()},
        "literal_top1_contains_query": round(literal_found / literal_total, 4) if literal_total else None,
    }


def disk_usage(root: Path) -> dict[str, Any]:
    state = root / STATE_DIR
    out: dict[str, Any] = {"total": benchlib.tree_size(state)}
    if state.is_dir():
        for entry in sorted(state.iterdir()):
            out[entry.name] = (
                benchlib.tree_size(entry)
                if entry.is_dir()
                else {
                    "apparent_bytes": entry.stat().st_size,
                    "allocated_bytes": entry.stat().st_blocks * 512,
                    "files": 1,
                }
            )
    return out


# -- through a real server ----------------------------------------------------------------------------


async def server_phase(
    root: Path, rel: str, original: str, queries: list[tuple[str, str]], edits: int, log_path: Path | None, fake: bool
) -> dict[str, Any]:
    """Start `memory-server serve`, edit a file and poll search_exact until it shows; searches; RSS."""
    out: dict[str, Any] = {"server": "bench/fake_server.py (FakeEmbedder)" if fake else "memory-server serve"}
    errlog = open(log_path, "a", encoding="utf-8") if log_path else None
    try:
        return await _server_steps(root, rel, original, queries, edits, errlog, out, fake)
    finally:
        if errlog is not None:
            errlog.close()


async def _server_steps(
    root: Path,
    rel: str,
    original: str,
    queries: list[tuple[str, str]],
    edits: int,
    errlog: Any,
    out: dict[str, Any],
    fake: bool,
) -> dict[str, Any]:
    async with benchlib.mcp_server(root, errlog=errlog, fake=fake) as (server, marks):
        started = time.perf_counter()
        await benchlib.wait_until_idle(server)
        out["initialize_seconds"] = round(marks["initialize"], 3)
        out["startup_sync_seconds"] = round(time.perf_counter() - started, 3)
        rss: dict[str, int | None] = {"after_start": _rss(server.pid)}
        t0 = time.perf_counter()
        await server.call("search_memory", {"query": "warm up the model", "k": 6})
        out["first_search_memory_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        rss["after_first_search_memory"] = _rss(server.pid)
        latencies: list[float] = []
        polls = 0
        for _ in range(edits):
            await benchlib.wait_until_idle(server)  # each edit on a quiet server (see the README)
            token = unique_token()
            append_token(root, rel, original, token)
            t0 = time.perf_counter()
            while True:
                got = await server.call("search_exact", {"query": token, "k": 1})
                polls += 1
                if any(token in h["text"] for h in got["hits"]):
                    break
                if time.perf_counter() - t0 > 300:
                    raise TimeoutError(f"the server did not pick up the edit of {rel} within 300 s")
                await asyncio.sleep(0.02)
            latencies.append(time.perf_counter() - t0)
        out["edit_to_searchable_ms"] = [round(x * 1000, 1) for x in latencies]
        out["edit_to_searchable_median_ms"] = round(statistics.median(latencies) * 1000, 1)
        out["edit_polls"] = polls
        (root / rel).write_text(original, encoding="utf-8")
        await benchlib.wait_until_idle(server)
        rss["after_edits"] = _rss(server.pid)
        exact: list[float] = []
        semantic: list[float] = []
        for _kind, query in queries:
            t0 = time.perf_counter()
            await server.call("search_exact", {"query": query})
            exact.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await server.call("search_memory", {"query": query})
            semantic.append(time.perf_counter() - t0)
        out["search_exact"] = benchlib.latency_summary(exact)
        out["search_memory"] = benchlib.latency_summary(semantic)
        await benchlib.wait_until_idle(server)
        out["pid"] = server.pid
        mem = benchlib.proc_status(server.pid) if server.pid else {}
        out["rss_bytes"] = mem.get("VmRSS")
        out["peak_rss_bytes"] = mem.get("VmHWM")
        rss["after_searches"] = mem.get("VmRSS")
        out["rss_steps_bytes"] = rss
    return out


def _rss(pid: int | None) -> int | None:
    return benchlib.proc_status(pid).get("VmRSS") if pid else None


async def model_rss_phase(root: Path, queries: list[tuple[str, str]], errlog: Any) -> dict[str, Any]:
    """For a root whose vectors came from FakeEmbedder: the real `memory-server serve`, with the model, on
    the same store, to measure resident memory with the model loaded at this size. The index's vector
    recipe is relabelled as the model's for the duration (else the server would re-embed every chunk), so
    the semantic rankings mean nothing here; memory and latency are real. The label is put back after."""
    import sqlite3

    db_path = root / ".memory" / "index.sqlite3"

    def relabel(old: str, new: str) -> str:
        db = sqlite3.connect(db_path)
        try:
            recipe = db.execute("SELECT value FROM meta WHERE key = 'vector_recipe'").fetchone()[0]
            db.execute("UPDATE meta SET value = ? WHERE key = 'vector_recipe'", (recipe.replace(old, new),))
            db.commit()
            return recipe
        finally:
            db.close()

    fake_name, model_name = make_embedder(True).name, make_embedder(False).name
    relabel(fake_name, model_name)
    try:
        async with benchlib.mcp_server(root, errlog=errlog) as (server, _marks):
            await benchlib.wait_until_idle(server)
            out: dict[str, Any] = {"server": "memory-server serve (model loaded, vectors from FakeEmbedder)"}
            semantic: list[float] = []
            for _kind, query in queries:
                t0 = time.perf_counter()
                await server.call("search_memory", {"query": query})
                semantic.append(time.perf_counter() - t0)
                await server.call("search_exact", {"query": query})
            out["search_memory"] = benchlib.latency_summary(semantic)
            mem = benchlib.proc_status(server.pid) if server.pid else {}
            out["rss_bytes"] = mem.get("VmRSS")
            out["peak_rss_bytes"] = mem.get("VmHWM")
            return out
    finally:
        relabel(model_name, fake_name)


# -- one size -----------------------------------------------------------------------------------------


def run_size(size: int, args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    root = (
        Path(args.roots) / f"scale-{size}-{args.seed}"
        if args.roots
        else benchlib.RESULTS_DIR / "roots" / f"scale-{size}-{args.seed}"
    )
    benchlib.log(f"[scale {size}] generating corpus")
    started = time.perf_counter()
    corpus = corpus_mod.generate(size, seed=args.seed)
    generate_seconds = time.perf_counter() - started
    root.mkdir(parents=True, exist_ok=True)
    written = benchlib.write_root(root, corpus.files)
    queries = corpus_mod.queries(corpus, args.queries, seed=args.seed + 100)
    embedder = make_embedder(args.fake)
    result: dict[str, Any] = {
        "target_chunks": size,
        "chunks": corpus.chunks,
        "files": len(corpus.files),
        "topic_files": sum(rel.startswith("topics/") for rel in corpus.files),
        "markdown_bytes": sum(len(t.encode()) for t in corpus.files.values()),
        "generate_seconds": round(generate_seconds, 3),
        "files_written": written,
        "root": str(root),
        "embedder": embedder.name,
        "vectors_fake": bool(args.fake),
    }
    benchlib.log(f"[scale {size}] keyword-only index of {len(corpus.files)} files")
    result["index_keyword_only"] = time_keyword_index(root, settings)
    benchlib.log(f"[scale {size}] full index with {embedder.name}: {result['index_keyword_only']}")
    result["index_full"] = time_full_index(root, settings, embedder)
    benchlib.log(f"[scale {size}] {result['index_full']}; re-index with nothing changed")
    result["reindex"] = time_noop_and_rebuild(root, settings, embedder, not args.no_rebuild)
    rel = pick_edit_file(corpus.files)
    memory = Memory(root, settings=settings, embedder=embedder)
    try:
        benchlib.log(f"[scale {size}] {result['reindex']}; edits and searches")
        result["edit"] = time_edits(memory, root, rel, corpus.files[rel], args.edits)
        result["search"] = time_searches(memory, queries)
    finally:
        memory.close()
    result["disk"] = disk_usage(root)
    if not args.no_server:
        benchlib.log(f"[scale {size}] through a real server (MCP stdio)")
        try:
            log_path = Path(args.server_log) if args.server_log else None
            result["server"] = asyncio.run(
                server_phase(root, rel, corpus.files[rel], queries, args.edits, log_path, bool(args.fake))
            )
            if args.fake:
                benchlib.log(f"[scale {size}] the real server with the model on the same store (resident memory)")
                with open(log_path or os.devnull, "a", encoding="utf-8") as errlog:
                    result["server_with_model"] = asyncio.run(model_rss_phase(root, queries, errlog))
        finally:
            (root / rel).write_text(corpus.files[rel], encoding="utf-8")
            memory = Memory(root, settings=settings, embedder=embedder)
            try:
                memory.index(timeout=600)
            finally:
                memory.close()
    result["bench_process_peak_rss_bytes"] = benchlib.proc_status(__import__("os").getpid()).get("VmHWM")
    return result


# -- printing -----------------------------------------------------------------------------------------


def mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.1f}"


def print_results(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        full = r["index_full"]
        rows.append(
            [
                r["chunks"],
                r["files"],
                mb(r["markdown_bytes"]),
                r["index_keyword_only"]["seconds"],
                full["seconds"],
                full["keyword_stage_seconds"],
                full["embed_seconds"],
                full["chroma_open_seconds"],
                full["vector_store_seconds"],
                r["reindex"]["reindex_noop_seconds"],
                r["reindex"].get("rebuild_warm_cache_seconds", "-"),
                r["embedder"] + (" (FAKE)" if r["vectors_fake"] else ""),
                full["embed_texts_per_second"],
            ]
        )
    print(
        benchlib.format_table(
            [
                "chunks",
                "files",
                "md MB",
                "kw index s",
                "full index s",
                "  read s",
                "  embed s",
                "  chroma open s",
                "  chroma write s",
                "noop reindex s",
                "rebuild s",
                "embedder",
                "texts/s",
            ],
            rows,
            "indexing (full = keyword + vectors from nothing; rebuild reuses the embedding cache)",
        )
    )
    print()
    rows = []
    for r in results:
        s, e = r["search"], r["edit"]
        server = r.get("server", {})
        rows.append(
            [
                r["chunks"],
                s["search_exact"]["p50_ms"],
                s["search_exact"]["p95_ms"],
                s["search_memory"]["p50_ms"],
                s["search_memory"]["p95_ms"],
                s["first_search_memory_ms"],
                e["keyword_only_median_ms"],
                e["with_vectors_median_ms"],
                server.get("edit_to_searchable_median_ms", "-"),
                ",".join("-" if x is None else str(x) for x in e.get("search_memory_rank_of_edited_chunk", [])),
            ]
        )
    print(
        benchlib.format_table(
            [
                "chunks",
                "exact p50",
                "exact p95",
                "memory p50",
                "memory p95",
                "1st memory",
                "edit kw",
                "edit +vec",
                "edit via server",
                "rank of edit",
            ],
            rows,
            "search latency (ms, in process, ~200 queries), edit-to-searchable (ms, median), and where search_memory\n"
            "ranks the one chunk holding the edit's unique token (- = not in the top 10)",
        )
    )
    print()
    rows = []
    for r in results:
        server = r.get("server", {})
        d = r["disk"]
        rows.append(
            [
                r["chunks"],
                mb(d["total"]["apparent_bytes"]),
                mb(d.get("index.sqlite3", {}).get("apparent_bytes")),
                mb(d.get("embeddings.sqlite3", {}).get("apparent_bytes")),
                mb(d.get("chroma", {}).get("apparent_bytes")),
                mb(server.get("rss_steps_bytes", {}).get("after_start")),
                mb(server.get("rss_bytes")),
                mb(server.get("peak_rss_bytes")),
                server.get("search_exact", {}).get("p50_ms", "-"),
                server.get("search_memory", {}).get("p50_ms", "-"),
                server.get("search_memory", {}).get("p95_ms", "-"),
            ]
        )
    print(
        benchlib.format_table(
            [
                "chunks",
                ".memory MB",
                "fts MB",
                "emb cache MB",
                "chroma MB",
                "RSS start MB",
                "RSS end MB",
                "peak MB",
                "mcp exact p50",
                "mcp memory p50",
                "mcp memory p95",
            ],
            rows,
            "disk and a real server (MCP stdio round trips, ms)",
        )
    )
    print()
    rows = [
        [
            r["chunks"],
            mb(w.get("rss_bytes")),
            mb(w.get("peak_rss_bytes")),
            w.get("search_memory", {}).get("p50_ms", "-"),
        ]
        for r in results
        if (w := r.get("server_with_model"))
    ]
    if rows:
        print(
            benchlib.format_table(
                ["chunks", "RSS end MB", "peak MB", "mcp memory p50"],
                rows,
                "sizes with FAKE vectors: the real server with the model loaded on the same store",
            )
        )
        print()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/scale.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated chunk counts (default 1000,10000)")
    parser.add_argument(
        "--fake", action="store_true", help="FakeEmbedder for the vectors (no model): say so in the results"
    )
    parser.add_argument(
        "--fake-from",
        type=int,
        default=None,
        metavar="N",
        help="use FakeEmbedder only for sizes >= N (e.g. 100000), the real model below",
    )
    parser.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    parser.add_argument("--queries", type=int, default=200, help="search queries per size (default 200)")
    parser.add_argument("--edits", type=int, default=3, help="edits timed per variant (default 3)")
    parser.add_argument("--no-server", action="store_true", help="skip the real-server phase")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the rebuild-with-warm-cache timing")
    benchlib.add_set_option(parser)
    parser.add_argument("--roots", help="folder for the generated roots (default bench/results/roots)")
    parser.add_argument("--server-log", help="append the server's stderr (its log) to this file")
    parser.add_argument("--json-out", help="where to write the JSON results (default bench/results/scale.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    settings = benchlib.make_settings([benchlib.parse_override(o) for o in args.overrides])
    results: list[dict[str, Any]] = []
    fake_all = args.fake
    path = Path(args.json_out) if args.json_out else benchlib.default_json_out("scale")
    for size in sizes:
        args.fake = fake_all or (args.fake_from is not None and size >= args.fake_from)
        results.append(run_size(size, args, settings))
        results.sort(key=lambda r: r["target_chunks"])
        benchlib.write_json(path, _output(args, sizes, fake_all, results))  # after each size: a crash keeps the rest
    print_results(results)
    if any(r["vectors_fake"] for r in results):
        print(
            "FAKE: sizes marked (FAKE) used FakeEmbedder for the vectors (index, searches and the server): their "
            "embed times and semantic rankings are not the model's, and the server's RSS lacks the model."
        )
    print(f"results: {path}")
    return 0


def _output(
    args: argparse.Namespace, sizes: list[int], fake_all: bool, results: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "benchmark": "scale",
        "environment": benchlib.environment(),
        "config": {
            "sizes": sizes,
            "seed": args.seed,
            "queries": args.queries,
            "edits": args.edits,
            "overrides": [o for o in args.overrides],
            "fake": fake_all,
            "fake_from": args.fake_from,
        },
        "results": results,
    }


if __name__ == "__main__":
    sys.exit(main())
