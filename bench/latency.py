"""Search latency on an already-indexed root: search_exact and search_memory p50/p95 in process.

    python bench/latency.py bench/results/roots/scale-100000-7            # roots made by bench/scale.py
    python bench/latency.py ROOT --model                                   # embed queries with the real model
    python bench/latency.py ROOT --model --set ranking.late_weight=0       # with settings changed

200 queries, seeded: 100 literals drawn from the root's own chunks (CONSTANTS, E-1234 codes, IPs,
snake_case names) and 100 questions ("how do we <three words from a chunk>?"). Without --model the query
vector comes from FakeEmbedder (the vectors stored in the root are used as they are); with --model, from
all-MiniLM-L6-v2, which adds its own time per query.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Callable

import benchlib

from memory_server import Memory
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.testing import FakeEmbedder

LITERAL = re.compile(r"\b[A-Z][A-Z_]{4,}\b|\bE-\d{4}\b|\b\d+\.\d+\.\d+\.\d+\b|\b[a-z]+_[a-z_]+\b")


def queries(memory: Memory, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    rows = [r[0] for r in memory.fts.conn().execute("SELECT text FROM chunks ORDER BY rowid")]
    literals: list[str] = []
    questions: list[str] = []
    while len(literals) < 100:
        found = LITERAL.findall(rng.choice(rows))
        if found:
            literals.append(rng.choice(found))
    while len(questions) < 100:
        words = re.findall(r"[a-z]{4,}", rng.choice(rows))
        if len(words) >= 3:
            questions.append("how do we " + " ".join(rng.sample(words, 3)) + "?")
    return literals, questions


def timed(fn: Callable[[str], object], qs: list[str]) -> dict[str, float]:
    for q in qs[:10]:
        fn(q)  # warm caches
    ms = []
    for q in qs:
        started = time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - started) * 1000)
    ms.sort()
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(len(ms) * 0.95)], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", help="an indexed memory root")
    parser.add_argument("--model", action="store_true", help="embed queries with the real model")
    parser.add_argument("--seed", type=int, default=5)
    benchlib.add_set_option(parser, "ranking.late_weight=0")
    args = parser.parse_args(argv)
    settings = benchlib.make_settings([benchlib.parse_override(o) for o in args.overrides])
    memory = Memory(args.root, settings=settings, embedder=MiniLMEmbedder() if args.model else FakeEmbedder())
    literals, questions = queries(memory, args.seed)
    both = literals + questions
    out = {
        "chunks": memory.fts.chunk_count(),
        "search_exact": timed(memory.search_exact, both),
        "search_exact_literals": timed(memory.search_exact, literals),
        "search_memory": timed(lambda q: memory.search_memory(q), both),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
