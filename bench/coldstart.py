"""Cold-start benchmark: how long a freshly started `memory-server serve` takes to be useful.

On an already-indexed root, each run starts the server through the MCP SDK's stdio client (as Claude Code
does) and records, in seconds since the process was spawned:

  initialize       the answer to the initialize handshake
  tools_list       the answer to tools/list (and its size: the bytes of its JSON, as every client reads it)
  search_exact     the first answered search_exact
  search_memory    the first answered search_memory (loads the embedding model and opens Chroma)

in two orders: exact_first (initialize, tools/list, search_exact, search_memory) and memory_first
(initialize, tools/list, search_memory). Medians over --runs runs. For where the time goes it also times,
each in a fresh interpreter: Python itself, importing the server module (mcp and friends), importing
chromadb, and loading the embedding model.

The root: --root DIR (indexed first if it is not up to date), else a generated corpus of --chunks chunks
under bench/results/roots/coldstart-<chunks>-<seed>-<embedder> (real model; --fake runs index and server
with FakeEmbedder, for smoke tests: no model load in the numbers).
Results: bench/results/coldstart.json (or --json-out).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
import corpus as corpus_mod  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.index.embedder import MiniLMEmbedder  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402

STEPS = ("initialize", "tools_list", "search_exact", "search_memory")
ORDERS = ("exact_first", "memory_first")
BASELINES = {
    "python_startup": "pass",
    "import_server": "import memory_server.server",
    "import_chromadb": "import chromadb",
    "load_model": "from memory_server.index.embedder import MiniLMEmbedder; MiniLMEmbedder().load()",
}


def prepare_root(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The root to start servers on, indexed; and what was done to get there."""
    if args.root:
        root = Path(args.root).expanduser().resolve()
    else:
        tag = "fake" if args.fake else "minilm"
        root = benchlib.RESULTS_DIR / "roots" / f"coldstart-{args.chunks}-{args.seed}-{tag}"
        corpus = corpus_mod.generate(args.chunks, seed=args.seed)
        root.mkdir(parents=True, exist_ok=True)
        benchlib.write_root(root, corpus.files)
    embedder = FakeEmbedder() if args.fake else MiniLMEmbedder()
    memory = Memory(root, embedder=embedder)
    try:
        started = time.perf_counter()
        report = memory.index(timeout=7200)
        status = memory.status()
    finally:
        memory.close()
    return root, {
        "root": str(root),
        "files": status.files,
        "chunks": status.chunks,
        "index_seconds_before_runs": round(time.perf_counter() - started, 3),
        "chunks_embedded_before_runs": report.chunks_embedded,
        "embedder": embedder.name,
        "vectors_fake": bool(args.fake),
    }


async def one_run(root: Path, order: str, exact_query: str, memory_query: str, fake: bool) -> dict[str, float]:
    """Start a server, walk through the steps of `order`; seconds since spawn at each answer."""
    marks: dict[str, float] = {}
    async with benchlib.mcp_server(root, fake=fake) as (server, init_marks):
        marks["initialize"] = init_marks["initialize"]
        tools = await server.session.list_tools()
        marks["tools_list"] = time.perf_counter() - server.spawned
        marks["tools_list_bytes"] = float(len(tools.model_dump_json(by_alias=True, exclude_none=True).encode()))
        if len(tools.tools) < 5:
            raise RuntimeError(f"expected the five memory tools, got {[t.name for t in tools.tools]}")
        if order == "exact_first":
            await server.call("search_exact", {"query": exact_query})
            marks["search_exact"] = time.perf_counter() - server.spawned
        result = await server.call("search_memory", {"query": memory_query})
        marks["search_memory"] = time.perf_counter() - server.spawned
        marks["search_memory_mode_hybrid"] = float(result.get("mode") == "hybrid")
        if server.pid:
            marks["rss_bytes"] = float(benchlib.proc_status(server.pid).get("VmRSS") or 0)
    return marks


def baseline(runs: int) -> dict[str, Any]:
    """Seconds for each baseline snippet in a fresh interpreter (median of `runs`)."""
    out: dict[str, Any] = {}
    for name, code in BASELINES.items():
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        out[name] = {"median_s": round(statistics.median(times), 3), "runs": [round(t, 3) for t in times]}
    return out


def summarise(runs: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs)}
    for step in (*STEPS, "rss_bytes", "tools_list_bytes"):
        values = [r[step] for r in runs if step in r]
        if values:
            out[step] = {
                "median": round(statistics.median(values), 4),
                "min": round(min(values), 4),
                "max": round(max(values), 4),
                "all": [round(v, 4) for v in values],
            }
    out["search_memory_hybrid_share"] = statistics.fmean(r["search_memory_mode_hybrid"] for r in runs)
    return out


def print_results(results: dict[str, Any], baselines: dict[str, Any] | None, info: dict[str, Any]) -> None:
    rows = []
    for order, data in results.items():
        rows.append(
            [
                order,
                data["runs"],
                *[data[s]["median"] if s in data else "-" for s in STEPS],
                f"{data['rss_bytes']['median'] / 1e6:.0f}" if "rss_bytes" in data else "-",
                f"{data['tools_list_bytes']['median']:.0f}" if "tools_list_bytes" in data else "-",
            ]
        )
    print(
        benchlib.format_table(
            [
                "order",
                "runs",
                "initialize s",
                "tools/list s",
                "1st search_exact s",
                "1st search_memory s",
                "RSS MB",
                "tools/list bytes",
            ],  # fmt: skip
            rows,
            f"cold start on {info['root']} ({info['chunks']} chunks), seconds since spawn, median",
        )
    )
    print()
    if baselines:
        rows = [[name, BASELINES[name], data["median_s"]] for name, data in baselines.items()]
        print(benchlib.format_table(["part", "code (fresh interpreter)", "median s"], rows, "where the time goes"))
        print()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/coldstart.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="server starts per order (default 5)")
    parser.add_argument("--orders", default=",".join(ORDERS), help=f"which orders to run: {', '.join(ORDERS)}")
    parser.add_argument("--root", help="an existing memory root (default: a generated one)")
    parser.add_argument("--chunks", type=int, default=1000, help="size of the generated root (default 1000)")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed for the generated root")
    parser.add_argument(
        "--fake",
        action="store_true",
        help="FakeEmbedder for the index and the server (bench/fake_server.py): plumbing only",
    )
    parser.add_argument("--exact-query", default="E-1234", help="the first search_exact query")
    parser.add_argument("--memory-query", default="why did the deploy fail", help="the first search_memory query")
    parser.add_argument("--no-baseline", action="store_true", help="skip the import/model-load breakdown")
    parser.add_argument("--json-out", help="where to write the JSON results (default bench/results/coldstart.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    for order in orders:
        if order not in ORDERS:
            raise SystemExit(f"unknown order {order!r}: use {', '.join(ORDERS)}")
    root, info = prepare_root(args)
    benchlib.log(f"[coldstart] root {root}: {info['chunks']} chunks")
    results: dict[str, Any] = {}
    for order in orders:
        runs = []
        for n in range(args.runs):
            runs.append(asyncio.run(one_run(root, order, args.exact_query, args.memory_query, args.fake)))
            benchlib.log(f"[coldstart] {order} run {n + 1}: {runs[-1]}")
        results[order] = summarise(runs)
    baselines = None if args.no_baseline else baseline(max(1, min(args.runs, 5)))
    out = {
        "benchmark": "coldstart",
        "environment": benchlib.environment(),
        "config": {
            "runs": args.runs,
            "orders": orders,
            "exact_query": args.exact_query,
            "memory_query": args.memory_query,
            "server": "bench/fake_server.py (FakeEmbedder)" if args.fake else "memory-server serve",
        },
        "root": info,
        "results": results,
        "baseline": baselines,
    }
    print_results(results, baselines, info)
    path = benchlib.write_json(Path(args.json_out) if args.json_out else benchlib.default_json_out("coldstart"), out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
