"""Ranking variants side by side, on the same open roots in one process.

Chroma's nearest-neighbour search is approximate and not the same from one process to the next (bench/README.md,
Caveats), so two runs of bench/run.py with different settings differ by that too. Here every variant is asked
on the same open root, one after the other, so each sees the same Chroma answers: a difference between two
rows is the ranking's. For each set, query source and variant: R@1/3/5/10 with `search_memory`, and how many
questions rank the gold higher (+) or lower (-) at 5 than the first variant does. In process (coding-probe too,
scored as run.py --in-process scores it); LoCoMo and BEAM default to their tune splits.

  python bench/variants.py --variant base --variant fw05:ranking.file_weight=0.5
  python bench/variants.py --sets beam --beam 1-20 --variant base --variant m:ranking.mmr_weight=0.1,ranking.file_top=1
  python bench/variants.py --sets beam --beam 1-20 --also-queries new=/tmp/queries   # two query sets, one process
  python bench/variants.py --fake --locomo 0 --beam 1 --max-questions 4 --variant base --variant x:ranking.late_weight=0
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import beam  # noqa: E402
import benchlib  # noqa: E402
import caller_queries  # noqa: E402
import locomo  # noqa: E402
import run  # noqa: E402

from memory_server.index.embedder import Embedder, MiniLMEmbedder  # noqa: E402
from memory_server.search.query import Hit  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402

SETS = ("locomo", "beam", "coding")
KS = run.KS


@dataclass
class Variant:
    name: str
    overrides: list[tuple[str, str, Any]]


@dataclass
class Root:
    """One memory root of a set, with its questions: (id, query text by source, scorer, subset). The sources are
    "asked", one per writer set of bench/queries ("caller", or "caller-1", "caller-2", ...) and one "caller-NAME"
    per folder of --also-queries."""

    set_name: str
    path: Path
    k: int
    questions: list[tuple[str, dict[str, str | None], Callable[[list[Hit]], dict[str, float]], str]]


def parse_variant(text: str) -> Variant:
    """'name' or 'name:section.key=value,section.key=value'."""
    name, _, rest = text.partition(":")
    if not name.strip():
        raise SystemExit(f"variant {text!r} has no name: write NAME or NAME:section.key=value,...")
    return Variant(name.strip(), [benchlib.parse_override(part) for part in rest.split(",") if part.strip()])


def parse_also(text: str) -> tuple[str, Path]:
    """'NAME=DIR': a folder of caller-written queries (bench/queries/README.md), as (source caller-NAME, DIR)."""
    name, _, folder = text.partition("=")
    if not name.strip() or not folder.strip() or not Path(folder).is_dir():
        raise SystemExit(f"--also-queries {text!r}: write NAME=DIR, DIR a folder of caller-written query files")
    return f"caller-{name.strip()}", Path(folder)


def roots_of(args: argparse.Namespace) -> list[Root]:
    """Every root of the sets asked for, written (only what differs) under bench/results/roots/, with its
    questions."""
    base = run.roots_base(args)
    sets = run.choices(args.sets, SETS, "set")
    written = caller_queries.load_writers({**args.writers, **dict(args.also_queries)}, sets)

    def texts(set_name: str, key: str, asked: str) -> dict[str, str | None]:
        return {"asked": asked, **{source: (by_set[set_name] or {}).get(key) for source, by_set in written.items()}}

    out: list[Root] = []
    if "locomo" in sets:
        data = benchlib.data_dir() / locomo.DATA_FILE
        for conv in locomo.load_conversations(data, locomo.parse_indices(args.locomo), args.max_questions):
            path = base / "locomo" / conv.sample_id
            path.mkdir(parents=True, exist_ok=True)
            locomo.sync_root(path, conv)
            qs = [(f"{conv.index}:{q.index}", q.text, run._locomo_scorer(conv, q), "all") for q in conv.questions]
            out.append(Root("locomo", path, args.k, [(i, texts("locomo", i, t), s, u) for i, t, s, u in qs]))
    if "beam" in sets:
        for chat in beam.load_chats(benchlib.data_dir(), locomo.parse_indices(args.beam)):
            path = base / "beam" / str(chat.number)
            path.mkdir(parents=True, exist_ok=True)
            benchlib.write_root(path, chat.files)
            chosen = chat.questions[: args.max_questions] if args.max_questions else chat.questions
            qs = [(f"{chat.number}:{q.index}", q.text, run._beam_scorer(chat, q), "all") for q in chosen]
            out.append(Root("beam", path, args.k, [(i, texts("beam", i, t), s, u) for i, t, s, u in qs]))
    if "coding" in sets:
        queries = json.loads((benchlib.data_dir() / run.CODING_DIR / "queries.json").read_text(encoding="utf-8"))
        if args.max_questions:
            queries = [q for kind in ("paraphrase", "literal") for q in queries if q["kind"] == kind]
            queries = queries[: args.max_questions]
        path = run.coding_root(args, [])
        qs = [(q["id"], q["query"], run._coding_scorer(q), q["kind"]) for q in queries]
        out.append(Root("coding", path, 10, [(i, texts("coding", i, t), s, u) for i, t, s, u in qs]))
    return out


def ask_all(
    roots: Sequence[Root], variants: Sequence[Variant], sources: Sequence[str], embedder: Embedder, k: int
) -> dict[tuple[str, str, str, str], list[dict[str, Any]]]:
    """(set, subset, source, variant) -> one scored row per question. Each root is opened once and every variant
    asked on it in turn."""
    rows: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    settings = {v.name: locomo.base_settings(v.overrides, k) for v in variants}
    for root in roots:
        memory = run.open_root(root.path, settings[variants[0].name], embedder)
        try:
            for variant in variants:
                memory.settings = settings[variant.name]
                for source in sources:
                    for key, by_source, score, subset in root.questions:
                        text = by_source[source]
                        if text is None:
                            raise SystemExit(f"no caller-written query for {root.set_name} question {key}")
                        row = {"id": key, **score(memory.search_memory(text, root.k)[0])}
                        rows.setdefault((root.set_name, subset, source, variant.name), []).append(row)
        finally:
            memory.close()
    return rows


def summary(rows: dict[tuple[str, str, str, str], list[dict[str, Any]]], first: str) -> list[dict[str, Any]]:
    """One line per (set, subset, source, variant): mean R@k, and questions up or down at 5 against `first`."""
    out = []
    for (set_name, subset, source, name), scored in rows.items():
        reference = rows[set_name, subset, source, first]
        line: dict[str, Any] = {"set": set_name, "subset": subset, "queries": source, "variant": name}
        line["n"] = len(scored)
        line.update({f"R@{k}": round(statistics.mean(r[f"R@{k}"] for r in scored), 4) for k in KS})
        pairs = list(zip(reference, scored, strict=True))
        line["up@5"] = sum(b["R@5"] > a["R@5"] for a, b in pairs)
        line["down@5"] = sum(b["R@5"] < a["R@5"] for a, b in pairs)
        out.append(line)
    names = list(dict.fromkeys(key[3] for key in rows))
    out.sort(
        key=lambda r: (SETS.index(r["set"]), r["subset"] != "all", r["subset"], r["queries"], names.index(r["variant"]))
    )
    return out


def print_summary(lines: Sequence[dict[str, Any]], label: str) -> None:
    headers = ["set", "subset", "queries", "variant", "n", *[f"R@{k}" for k in KS], "+@5", "-@5"]
    table = [
        [r["set"], r["subset"], r["queries"], r["variant"], r["n"], *[r[f"R@{k}"] for k in KS], r["up@5"], r["down@5"]]
        for r in lines
    ]
    print(benchlib.format_table(headers, table, f"search_memory, ranking variants in one process ({label})"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/variants.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, out of {', '.join(SETS)}")
    parser.add_argument("--locomo", default=run.QUICK_LOCOMO, help="LoCoMo conversations (default: tune 0-1)")
    parser.add_argument("--beam", default=run.QUICK_BEAM, help="BEAM chats (default: tune 1-5; 1-20 for all)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME or NAME:section.key=value,... (repeat; the first is the reference; default: base only)",
    )
    parser.add_argument("--queries", default=",".join(caller_queries.SOURCES), help="asked, caller, or both")
    parser.add_argument(
        "--queries-dir",
        help="folder of writer-N/ folders of caller-written queries, or of one set's files (default bench/queries)",
    )
    parser.add_argument(
        "--also-queries",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another folder of caller-written queries, asked as source caller-NAME (repeat)",
    )
    parser.add_argument("--k", type=int, default=20, help="hits asked per LoCoMo/BEAM query (default 20)")
    parser.add_argument("--max-questions", type=int, default=None, help="at most N questions per root (smoke runs)")
    parser.add_argument("--fake", action="store_true", help="FakeEmbedder (plumbing only, not a quality number)")
    parser.add_argument("--roots", help="folder for the memory roots (default bench/results/roots/dev-<embedder>)")
    parser.add_argument("--json-out", help="where to write the results (default bench/results/variants.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.queries_dir = Path(args.queries_dir) if args.queries_dir else caller_queries.QUERIES_DIR
    sources = run.choices(args.queries, caller_queries.SOURCES, "query source")
    args.also_queries = [parse_also(text) for text in args.also_queries]
    args.writers = caller_queries.writer_folders(args.queries_dir)
    if "caller" in sources:
        sources = [s for s in sources if s != "caller"] + list(args.writers)
    sources += [source for source, _ in args.also_queries]
    variants = [parse_variant(v) for v in args.variant] or [Variant("base", [])]
    if len({v.name for v in variants}) != len(variants):
        raise SystemExit("two variants share a name")
    embedder: Embedder = (
        FakeEmbedder()
        if args.fake
        else run.QueryCachingEmbedder(MiniLMEmbedder(), benchlib.RESULTS_DIR / "query-embeddings.sqlite3")
    )
    started = time.perf_counter()
    rows = ask_all(roots_of(args), variants, sources, embedder, args.k)
    lines = summary(rows, variants[0].name)
    print_summary(lines, embedder.name + (" - FAKE: plumbing only" if args.fake else ""))
    out = {
        "benchmark": "variants",
        "environment": benchlib.environment(),
        "config": {
            "sets": args.sets,
            "locomo": args.locomo,
            "beam": args.beam,
            "k": args.k,
            "embedder": embedder.name,
            "fake_embedder": bool(args.fake),
            "variants": {v.name: benchlib.flat_overrides(v.overrides) for v in variants},
            "queries": sources,
            "max_questions": args.max_questions,
        },
        "seconds": round(time.perf_counter() - started, 1),
        "results": lines,
        "questions": {"|".join(key): value for key, value in rows.items()},
    }
    path = benchlib.write_json(Path(args.json_out) if args.json_out else benchlib.default_json_out("variants"), out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
