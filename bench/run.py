"""All three retrieval development sets with one command, one table.

  LoCoMo        10 conversations, 1,982 questions; turn-level recall (bench/locomo.py builds the roots)
  BEAM 100K     20 long user-assistant chats, 354 questions with gold messages; message-level recall
  coding-probe  37 design records of a real project, 40 paraphrase + 20 literal questions; passage recall,
                scored by the set's own score.py over MCP (the real server), or in process with --fake

Each set is reported separately, per tool (`search_memory`, `search_exact`): R@1/3/5/10 and per-query
latency p50/p95 (in process for LoCoMo and BEAM; through MCP for coding-probe, as its scorer measures).
`search_memory` is asked with the question as the set words it (`asked`), and with the query each of three
writer sets of the calling model wrote for it from the tool description alone (`caller-1` to `caller-3`, then
their mean; bench/queries/README.md).
Roots live under bench/results/roots/ and keep their embedding cache, so a re-run re-embeds nothing that
did not change. `--quick` runs the tune subsets (LoCoMo conversations 0-1, BEAM chats 1-5) for iterating.

  python bench/run.py                                   # everything, real model
  python bench/run.py --quick --set ranking.file_weight=0.3
  python bench/run.py --sets coding --details /tmp/d    # one set; per-question hits written to /tmp/d
  python bench/run.py --fake --locomo 0 --beam 1 --max-questions 10   # plumbing only
  python bench/run.py --queries caller --tools search_memory          # the caller's queries only
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import beam  # noqa: E402
import benchlib  # noqa: E402
import caller_queries  # noqa: E402
import locomo  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.index.embed_cache import EmbeddingCache, text_key  # noqa: E402
from memory_server.index.embedder import Embedder, MiniLMEmbedder  # noqa: E402
from memory_server.search.query import Hit  # noqa: E402
from memory_server.settings import Settings  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402

KS = (1, 3, 5, 10)
SETS = ("locomo", "beam", "coding")
TOOLS = ("search_memory", "search_exact")
QUICK_LOCOMO = "0-1"
QUICK_BEAM = "1-5"
CODING_DIR = "coding-probe"

Search = Callable[[Memory, str, int], list[Hit]]
Scorer = Callable[[list[Hit]], dict[str, float]]
Question = tuple[str, Scorer, dict[str, Any]]  # (query, scorer, labels)
Asked = tuple[str, str, Scorer, dict[str, Any]]  # (question id, question as asked, scorer, labels)
Run = tuple[str, str]  # (tool, query source)
PerRun = dict[Run, tuple[list[dict[str, Any]], list[float]]]  # scored rows and latencies of each run


class QueryCachingEmbedder:
    """The model, with the vectors of single texts (queries) kept in a file under bench/results: a re-run
    with other ranking settings then spends no time embedding its 2,400 questions. Chunks are embedded in
    batches and go through each root's own embedding cache as usual."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.cache = EmbeddingCache(path)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if len(texts) == 1:
            return self.cache.embed(self.inner, texts)
        return self.inner.embed(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], list[NDArray[np.float32]]]:
        """A question's token vectors are kept too (as int8, which ranks as float does)."""
        if len(texts) != 1:
            return self.inner.embed_with_tokens(texts)  # type: ignore[attr-defined]
        vector = self.cache.embed(self.inner, texts, "int8")
        key = text_key(self.inner.name, texts[0])
        return vector, [self.cache.get_tokens([key], "int8")[key]]


def searcher(tool: str) -> Search:
    if tool == "search_exact":
        return lambda memory, query, k: memory.search_exact(query, k)
    return lambda memory, query, k: memory.search_memory(query, k)[0]


def recall_at(units: Sequence[Any], gold: Sequence[Any]) -> dict[str, float]:
    """Share of `gold` among the first k of `units` (deduplicated, in order), for each k."""
    seen: list[Any] = []
    for u in units:
        if u not in seen:
            seen.append(u)
    return {f"R@{k}": sum(g in set(seen[:k]) for g in gold) / len(gold) for k in KS}


def mean_row(rows: Sequence[dict[str, Any]], latencies: Sequence[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for k in KS:
        out[f"R@{k}"] = round(sum(r[f"R@{k}"] for r in rows) / len(rows), 4) if rows else None
    lat = benchlib.latency_summary(latencies)
    out["p50_ms"], out["p95_ms"] = lat["p50_ms"], lat["p95_ms"]
    return out


REBUILD = False  # --rebuild: re-chunk every root (the embedding cache keeps every vector made before)


def open_root(root: Path, settings: Settings, embedder: Embedder) -> Memory:
    memory = Memory(root, settings=settings, embedder=embedder)
    started = time.perf_counter()
    report = memory.index(timeout=3600.0, rebuild=REBUILD)
    benchlib.log(f"[run] {root.name}: indexed in {time.perf_counter() - started:.1f}s ({report.summary()})")
    return memory


def ask(
    memory: Memory,
    questions: Sequence[Question],
    tool: str,
    k: int,
    details: list[dict[str, Any]] | None,
) -> tuple[list[dict[str, Any]], list[float]]:
    """Ask each (query, scorer, labels) once with `tool`; the scored rows and latencies (seconds)."""
    search = searcher(tool)
    if questions:
        search(memory, questions[0][0], k)  # not timed: the first query loads the model, warms caches
    rows, latencies = [], []
    for text, score, labels in questions:
        started = time.perf_counter()
        hits = search(memory, text, k)
        latencies.append(time.perf_counter() - started)
        row = {**labels, **score(hits)}
        rows.append(row)
        if details is not None:
            details.append(
                {
                    **row,
                    "tool": tool,
                    "query": text,
                    "hits": [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits[:10]],
                }
            )
    return rows, latencies


def runs_of(args: argparse.Namespace, name: str) -> list[Run]:
    """(tool, query source) pairs to run on set `name`: every tool with the questions as asked, and the tools
    the caller's queries are written for with those, when the set has them."""
    runs: list[Run] = [(tool, "asked") for tool in args.tools if "asked" in args.queries]
    if not any(t in caller_queries.CALLER_TOOLS for t in args.tools):
        return runs
    for source, by_set in args.caller.items():
        if by_set.get(name) is None:
            benchlib.log(f"[run] {name}: no caller-written queries in {args.writers[source]}; that row is left out")
        else:
            runs += [(tool, source) for tool in args.tools if tool in caller_queries.CALLER_TOOLS]
    return runs


def sourced(args: argparse.Namespace, name: str, asked: Sequence[Asked], source: str) -> list[Question]:
    """The questions with the query of `source`: the question as asked, or a writer set's query for it."""
    if source == "asked":
        return [(text, score, {**labels, "id": key, "queries": source}) for key, text, score, labels in asked]
    queries, folder = args.caller[source][name], args.writers[source]
    return [
        (caller_queries.query_for(queries, name, key, folder), score, {**labels, "id": key, "queries": source})
        for key, _t, score, labels in asked
    ]


def ask_runs(
    args: argparse.Namespace,
    name: str,
    memory: Memory,
    asked: Sequence[Asked],
    per_run: PerRun,
    details: list[dict[str, Any]] | None,
) -> None:
    """Every run of set `name` over one root's questions, added to `per_run`."""
    for tool, source in per_run:
        rows, lat = ask(memory, sourced(args, name, asked, source), tool, args.k, details)
        per_run[tool, source][0].extend(rows)
        per_run[tool, source][1].extend(lat)


# -- the sets -----------------------------------------------------------------------------------------


def run_locomo(args: argparse.Namespace, settings: Settings, embedder: Embedder) -> list[dict[str, Any]]:
    conversations = locomo.load_conversations(
        benchlib.data_dir() / locomo.DATA_FILE, locomo.parse_indices(args.locomo), args.max_questions
    )
    base = roots_base(args) / "locomo"
    per_run: PerRun = {run: ([], []) for run in runs_of(args, "locomo")}
    details: list[dict[str, Any]] | None = [] if args.details else None
    for conv in conversations:
        root = base / conv.sample_id
        root.mkdir(parents=True, exist_ok=True)
        locomo.sync_root(root, conv)
        memory = open_root(root, settings, embedder)
        try:
            asked = [
                (
                    f"{conv.index}:{q.index}",
                    q.text,
                    _locomo_scorer(conv, q),
                    {"conversation": conv.index, "category": q.category},
                )
                for q in conv.questions
            ]
            ask_runs(args, "locomo", memory, asked, per_run, details)
        finally:
            memory.close()
    out = summarise(
        "locomo",
        per_run,
        "turn",
        [
            ("tune 0-1", lambda row: row["conversation"] in locomo.TUNE),
            ("held out 2-9", lambda row: row["conversation"] in locomo.HELD_OUT),
        ],
    )
    _write_details(args, "locomo", details)
    return out


def _locomo_scorer(conv: locomo.Conversation, q: locomo.Question) -> Scorer:
    def score(hits: list[Hit]) -> dict[str, float]:
        return recall_at([t for h in hits for t in conv.turns_of(h)], q.evidence)

    return score


def run_beam(args: argparse.Namespace, settings: Settings, embedder: Embedder) -> list[dict[str, Any]]:
    chats = beam.load_chats(benchlib.data_dir(), locomo.parse_indices(args.beam))
    base = roots_base(args) / "beam"
    per_run: PerRun = {run: ([], []) for run in runs_of(args, "beam")}
    details: list[dict[str, Any]] | None = [] if args.details else None
    for chat in chats:
        root = base / str(chat.number)
        root.mkdir(parents=True, exist_ok=True)
        benchlib.write_root(root, chat.files)
        memory = open_root(root, settings, embedder)
        chosen = chat.questions[: args.max_questions] if args.max_questions else chat.questions
        try:
            asked = [
                (
                    f"{chat.number}:{q.index}",
                    q.text,
                    _beam_scorer(chat, q),
                    {"chat": chat.number, "category": chat.category, "type": q.kind},
                )
                for q in chosen
            ]
            ask_runs(args, "beam", memory, asked, per_run, details)
        finally:
            memory.close()
    tune = locomo.parse_indices(QUICK_BEAM) or []
    out = summarise(
        "beam",
        per_run,
        "message",
        [
            (f"tune {QUICK_BEAM}", lambda row: row["chat"] in tune),
            (f"held out (not {QUICK_BEAM})", lambda row: row["chat"] not in tune),
            ("coding chats", lambda row: row["category"] == "Coding"),
        ],
    )
    _write_details(args, "beam", details)
    return out


def _beam_scorer(chat: beam.Chat, q: beam.Question) -> Scorer:
    def score(hits: list[Hit]) -> dict[str, float]:
        return recall_at([m for h in hits for m in chat.units_of(h.path, h.start_line, h.end_line)], q.gold)

    return score


def coding_root(args: argparse.Namespace, overrides: Sequence[tuple[str, str, Any]]) -> Path:
    """A copy of the probe's root under bench/results (kept, with its .memory/), with memory.yaml holding
    the --set overrides so that the server the scorer starts uses them."""
    source = benchlib.data_dir() / CODING_DIR / "root"
    root = roots_base(args) / "coding-probe"
    for path in source.rglob("*"):
        if path.is_file():
            target = root / path.relative_to(source)
            if not target.is_file() or target.read_bytes() != path.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    settings_file = root / "memory.yaml"
    mapping = benchlib.overrides_to_mapping(overrides)
    if mapping:
        settings_file.write_text(yaml.safe_dump(mapping, sort_keys=True), encoding="utf-8")
    elif settings_file.exists():
        settings_file.unlink()
    return root


def run_coding(
    args: argparse.Namespace, settings: Settings, embedder: Embedder, overrides: Sequence[tuple[str, str, Any]]
) -> list[dict[str, Any]]:
    probe = benchlib.data_dir() / CODING_DIR
    queries = json.loads((probe / "queries.json").read_text(encoding="utf-8"))
    if args.max_questions:
        queries = [q for kind in ("paraphrase", "literal") for q in queries if q["kind"] == kind][: args.max_questions]
    root = coding_root(args, overrides)
    runs = [(tool, source, coding_queries(args, queries, source)) for tool, source in runs_of(args, "coding")]
    if args.fake or args.in_process:
        # The scorer starts the real server (real model); with --fake or --in-process the same scoring runs
        # here, without the MCP round trip (latency is then in process).
        return _coding_in_process(args, root, settings, embedder, runs)
    return [row for tool, source, chosen in runs for row in _coding_over_mcp(args, probe, root, chosen, tool, source)]


def coding_queries(args: argparse.Namespace, queries: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """The probe's queries (with their gold), each with a writer set's query in place of the question for a
    caller source: scored against the same gold by the same scorer."""
    if source == "asked":
        return queries
    caller, folder = args.caller[source]["coding"], args.writers[source]
    return [{**q, "query": caller_queries.query_for(caller, "coding", q["id"], folder)} for q in queries]


def _coding_in_process(
    args: argparse.Namespace,
    root: Path,
    settings: Settings,
    embedder: Embedder,
    runs: list[tuple[str, str, list[dict[str, Any]]]],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    details: list[dict[str, Any]] | None = [] if args.details else None
    with open_root(root, settings, embedder) as memory:
        for tool, source, queries in runs:
            questions = [
                (q["query"], _coding_scorer(q), {"kind": q["kind"], "id": q["id"], "queries": source}) for q in queries
            ]
            rows, lat = ask(memory, questions, tool, 10, details)
            for kind in ("paraphrase", "literal"):
                chosen = [(r, t) for r, t in zip(rows, lat, strict=True) if r["kind"] == kind]
                if chosen:
                    row = mean_row([r for r, _ in chosen], [t for _, t in chosen])
                    out.append({"set": "coding", "tool": tool, "queries": source, "kind": f"paragraph, {kind}", **row})
    _write_details(args, "coding", details)
    return out


def _coding_over_mcp(
    args: argparse.Namespace, probe: Path, root: Path, queries: list[dict[str, Any]], tool: str, source: str
) -> list[dict[str, Any]]:
    """The set's own scorer, through the real server over MCP (the caller's queries given to it as its query
    file: the scorer, its gold and the ranks it counts are the set's own)."""
    server = Path(sys.executable).parent / "memory-server"
    detail_file = Path(args.details) / f"coding-{tool}-{source}.json" if args.details else None
    command = [
        sys.executable,
        str(probe / "score.py"),
        "--root",
        str(root),
        "--in-place",
        "--server",
        str(server if server.exists() else "memory-server"),
        "--tool",
        tool,
        "--k",
        "10",
    ]
    if args.max_questions or source != "asked":
        query_file = root.parent / f"coding-queries-{source}.json"  # under bench/results: never in the repository
        query_file.write_text(json.dumps(queries), encoding="utf-8")
        command += ["--queries", str(query_file)]
    if detail_file is not None:
        detail_file.parent.mkdir(parents=True, exist_ok=True)
        command += ["--details", str(detail_file)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"coding-probe scorer failed:\n{proc.stdout}\n{proc.stderr}")
    result = json.loads(proc.stdout[proc.stdout.index("{") : proc.stdout.rindex("}") + 1])
    return [
        {
            "set": "coding",
            "tool": tool,
            "queries": source,
            "kind": f"paragraph, {kind}",
            "n": result[kind]["n"],
            **{f"R@{k}": result[kind][f"R@{k}"] for k in KS},
            "file_R@1": result[kind]["file_R@1"],
            "p50_ms": result["latency_ms_p50"],
            "p95_ms": result["latency_ms_p95"],
        }
        for kind in ("paraphrase", "literal")
        if kind in result
    ]


def _coding_scorer(q: dict[str, Any]) -> Scorer:
    def score(hits: list[Hit]) -> dict[str, float]:
        rank = next(
            (
                i
                for i, h in enumerate(hits, 1)
                for g in q["gold"]
                if h.path == g["path"] and h.start_line <= g["end_line"] and g["start_line"] <= h.end_line
            ),
            None,
        )
        return {f"R@{k}": float(rank is not None and rank <= k) for k in KS}

    return score


# -- command line -------------------------------------------------------------------------------------


def roots_base(args: argparse.Namespace) -> Path:
    if args.roots:
        return Path(args.roots)
    return benchlib.RESULTS_DIR / "roots" / ("dev-fake" if args.fake else "dev-minilm")


def summarise(
    name: str,
    per_run: PerRun,
    unit: str,
    subsets: Sequence[tuple[str, Callable[[dict[str, Any]], bool]]],
) -> list[dict[str, Any]]:
    """One table row per run (tool, query source) over all questions, and one per subset that holds some of
    them but not all."""
    out: list[dict[str, Any]] = []
    for (tool, source), (rows, lat) in per_run.items():
        head = {"set": name, "tool": tool, "queries": source}
        out.append({**head, "kind": f"{unit}, all", **mean_row(rows, lat)})
        for label, in_subset in subsets:
            chosen = [(r, t) for r, t in zip(rows, lat, strict=True) if in_subset(r)]
            if chosen and len(chosen) < len(rows):
                row = mean_row([r for r, _ in chosen], [t for _, t in chosen])
                out.append({**head, "kind": f"{unit}, {label}", **row})
    return out


def with_writer_means(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, and with more than one writer set, per set, tool and unit a row "caller, mean of N" averaging
    the writer sets' rows (recall, and the latencies' percentiles), after the set's last writer row."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["queries"].startswith("caller-"):
            groups.setdefault((row["set"], row["tool"], row["kind"]), []).append(row)
    means: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (name, tool, kind), group in groups.items():
        if len(group) > 1:
            mean: dict[str, Any] = {"set": name, "tool": tool, "queries": f"caller, mean of {len(group)}", "kind": kind}
            mean["n"] = group[0]["n"]
            for field in [*(f"R@{k}" for k in KS), "p50_ms", "p95_ms"]:
                mean[field] = round(statistics.mean(r[field] for r in group), 6)  # rounded once, when shown
            means.setdefault((name, tool), []).append(mean)
    last = {(row["set"], row["tool"]): i for i, row in enumerate(rows)}
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        out.append(row)
        if last[row["set"], row["tool"]] == i:
            out += means.get((row["set"], row["tool"]), [])
    return out


def _write_details(args: argparse.Namespace, name: str, details: list[dict[str, Any]] | None) -> None:
    if args.details and details is not None:
        benchlib.write_json(Path(args.details) / f"{name}.json", {"questions": details})


def print_table(rows: Sequence[dict[str, Any]], embedder: str) -> None:
    headers = ["set", "tool", "queries", "unit, questions", "n", *[f"R@{k}" for k in KS], "p50 ms", "p95 ms"]
    table = [
        [r["set"], r["tool"], r["queries"], r["kind"], r["n"], *[r[f"R@{k}"] for k in KS], r["p50_ms"], r["p95_ms"]]
        for r in rows
    ]
    print(benchlib.format_table(headers, table, f"retrieval on the development sets ({embedder})"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, out of {', '.join(SETS)}")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"tune subsets: LoCoMo conversations {QUICK_LOCOMO}, BEAM chats {QUICK_BEAM}",
    )
    parser.add_argument("--locomo", help="LoCoMo conversations, e.g. 0-1 or 2,5 (default: all 10)")
    parser.add_argument("--beam", help="BEAM chats, e.g. 1-5 (default: all 20)")
    benchlib.add_set_option(parser, "ranking.file_weight=0.3")
    parser.add_argument("--k", type=int, default=20, help="hits asked per LoCoMo/BEAM query (default 20)")
    parser.add_argument("--max-questions", type=int, default=None, help="at most N questions per root (smoke runs)")
    parser.add_argument("--fake", action="store_true", help="FakeEmbedder (plumbing only, not a quality number)")
    parser.add_argument("--roots", help="folder for the memory roots (default bench/results/roots/dev-<embedder>)")
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild each root's indices (after a chunker change); cached vectors are reused",
    )
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, out of {', '.join(TOOLS)}")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="score coding-probe in process instead of through its MCP scorer (for tuning)",
    )
    parser.add_argument(
        "--queries",
        default=",".join(caller_queries.SOURCES),
        help="comma-separated: asked (the question as the set words it), caller (the queries each writer set of "
        "the calling model wrote for it, bench/queries/; search_memory only); default both",
    )
    parser.add_argument(
        "--queries-dir",
        help="folder of writer-N/ folders of caller-written queries, or of one set's files (default bench/queries)",
    )
    parser.add_argument("--details", help="folder for per-question hits (JSON)")
    parser.add_argument("--json-out", help="where to write the results (default bench/results/run.json)")
    return parser


def choices(text: str, allowed: Sequence[str], what: str) -> list[str]:
    """A comma-separated option's values, each one of `allowed`."""
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    for value in chosen:
        if value not in allowed:
            raise SystemExit(f"unknown {what} {value!r}: use {', '.join(allowed)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sets = choices(args.sets, SETS, "set")
    args.tools = choices(args.tools, TOOLS, "tool")
    args.queries = choices(args.queries, caller_queries.SOURCES, "query source")
    args.queries_dir = Path(args.queries_dir) if args.queries_dir else caller_queries.QUERIES_DIR
    args.writers = caller_queries.writer_folders(args.queries_dir) if "caller" in args.queries else {}
    args.caller = caller_queries.load_writers(args.writers, sets)
    if args.quick:
        args.locomo = args.locomo or QUICK_LOCOMO
        args.beam = args.beam or QUICK_BEAM
    global REBUILD
    REBUILD = bool(args.rebuild)
    overrides = [benchlib.parse_override(o) for o in args.overrides]
    settings = locomo.base_settings(overrides, args.k)
    embedder: Embedder = (
        FakeEmbedder()
        if args.fake
        else QueryCachingEmbedder(MiniLMEmbedder(), benchlib.RESULTS_DIR / "query-embeddings.sqlite3")
    )
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    if "locomo" in sets:
        rows += run_locomo(args, settings, embedder)
    if "beam" in sets:
        rows += run_beam(args, settings, embedder)
    if "coding" in sets:
        rows += run_coding(args, settings, embedder, overrides)
    label = embedder.name + (" - FAKE: plumbing only, not a quality number" if args.fake else "")
    rows = with_writer_means(rows)
    print_table(rows, label)
    out = {
        "benchmark": "run",
        "environment": benchlib.environment(),
        "config": {
            "sets": sets,
            "locomo": args.locomo,
            "beam": args.beam,
            "k": args.k,
            "embedder": embedder.name,
            "fake_embedder": bool(args.fake),
            "overrides": benchlib.flat_overrides(overrides),
            "max_questions": args.max_questions,
            "queries": args.queries,
            "caller_queries": {
                source: {
                    name: str(args.writers[source] / caller_queries.FILES[name])
                    for name, found in by_set.items()
                    if found
                }
                for source, by_set in args.caller.items()
            },
        },
        "seconds": round(time.perf_counter() - started, 1),
        "results": rows,
    }
    path = benchlib.write_json(Path(args.json_out) if args.json_out else benchlib.default_json_out("run"), out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
