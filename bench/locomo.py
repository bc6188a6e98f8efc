"""LoCoMo retrieval benchmark: how often memory-server's search finds the turns that answer a question.

Each of LoCoMo's 10 conversations becomes its own memory root: one compressed-session file per
conversation session (front matter with the session's date, then one paragraph per dialogue turn), indexed
by the project's indexer. Every question with evidence is asked through `Memory.search_exact` /
`Memory.search_memory`, the code the MCP tools run, and scored as the LoCoMo paper does:

  turn level     hits are flattened, in order, into the turns their line ranges cover (deduplicated);
                 recall@k = share of the question's evidence turns among the first k turns.
  session level  the first k distinct sessions in hit order; an evidence turn counts when its session
                 is among them.

Modes: exact (search_exact), semantic (search_memory with ranking.keyword_weight=0), default
(search_memory with the default settings, plus any --set overrides).

Results are printed for the tune split (conversations 0-1, where settings may be tuned), the held-out split
(2-9, the numbers to report) and all, overall and per question category, with per-query latency.
`--sweep` evaluates a grid of ranking settings on the tune split only.

Data: locomo10.json from $MEMORY_BENCH_DATA, else ../shared/bench next to the repository.
Results: bench/results/locomo.json (or --json-out). Roots: bench/results/roots/locomo-<embedder>/<sample>.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import itertools
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.index.embedder import Embedder, MiniLMEmbedder  # noqa: E402
from memory_server.search.query import Hit  # noqa: E402
from memory_server.settings import Settings, apply_overrides  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402

DATA_FILE = "locomo10.json"
TUNE = (0, 1)
HELD_OUT = tuple(range(2, 10))
TURN_KS = (1, 3, 5, 10)
SESSION_KS = (1, 3, 5)
MODES = ("exact", "semantic", "default")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
# Axes whose setting does not exist in the installed version are left out (with a note).
DEFAULT_GRID = (
    "ranking.semantic_weight=0.5,0.7,1.0",
    "ranking.file_weight=0.0,0.5,1.0",
    "ranking.neighbour_weight=0.0,0.3,0.6",
    "ranking.mmr_weight=0.0,0.2",
)
EMBED_VARIANTS = ("context", "body")
MODE_OVERRIDES: dict[str, list[tuple[str, str, Any]]] = {
    "exact": [],
    "semantic": [("ranking", "keyword_weight", 0.0)],
    "default": [],
}


# -- the data -----------------------------------------------------------------------------------------


@dataclass
class Question:
    index: int  # position in the conversation's qa list
    text: str
    category: int
    evidence: tuple[str, ...]  # normalised dia_ids, e.g. ("D3:7",)


@dataclass
class SessionFile:
    number: int
    rel: str  # path inside the root
    text: str
    lines: dict[int, str]  # line number -> dia_id of the turn written there


@dataclass
class Conversation:
    index: int
    sample_id: str
    sessions: list[SessionFile]
    questions: list[Question]
    turns: int
    dropped_evidence: list[str] = field(default_factory=list)  # evidence naming no turn of the conversation
    skipped_questions: int = 0  # questions with no usable evidence

    def __post_init__(self) -> None:
        self._lines = {s.rel: s.lines for s in self.sessions}
        self._numbers = {s.rel: s.number for s in self.sessions}

    def turns_of(self, hit: Hit) -> list[str]:
        """The dia_ids of the turns a hit's line range covers, in line order."""
        lines = self._lines.get(hit.path, {})
        return [lines[n] for n in range(hit.start_line, hit.end_line + 1) if n in lines]

    def session_of_path(self, path: str) -> int | None:
        """The conversation session a hit's file holds."""
        return self._numbers.get(path)


def parse_date(text: str) -> dt.datetime:
    """LoCoMo's '1:56 pm on 8 May, 2023' as a datetime."""
    return dt.datetime.strptime(" ".join(text.split()), DATE_FORMAT)


def normalise_evidence(raw: Sequence[str]) -> list[str]:
    """Evidence strings as clean dia_ids: 'D8:6; D9:17' -> D8:6, D9:17; 'D:11:26' -> D11:26; 'D30:05' -> D30:5."""
    out: list[str] = []
    for item in raw:
        for m in EVIDENCE.finditer(str(item)):
            dia = f"D{int(m[1])}:{int(m[2])}"
            if dia not in out:
                out.append(dia)
    return out


def session_number(dia_id: str) -> int:
    return int(dia_id[1:].split(":")[0])


def turn_line(turn: dict[str, Any]) -> str:
    """One dialogue turn as one Markdown paragraph on one line."""
    text = " ".join(str(turn.get("text", "")).split())
    line = f"**{turn['speaker']}:** {text}".rstrip()
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    if caption:
        line += f" [shares a photo: {caption}]"
    elif turn.get("img_url"):
        line += " [shares a photo]"
    return line


def render_session(
    sample_id: str, speakers: tuple[str, str], number: int, when: str, turns: list[dict[str, Any]]
) -> SessionFile:
    """A compressed-session file for one conversation session, and where each turn landed."""
    started = parse_date(when)
    title = f"{speakers[0]} and {speakers[1]}: session {number}"
    lines = [
        "---",
        f"session_id: {sample_id}-s{number}",
        f"started: '{started.isoformat(timespec='minutes')}'",
        f"title: {json.dumps(title)}",
        "---",
        "",
        f"# Session {number} ({' '.join(when.split())})",
        "",
    ]
    where: dict[int, str] = {}
    for turn in turns:
        lines.append(turn_line(turn))
        where[len(lines)] = str(turn["dia_id"])
        lines.append("")
    rel = f"sessions/compressed/{started.year}/{started.date().isoformat()}-{sample_id}-s{number}.md"
    return SessionFile(number, rel, "\n".join(lines), where)


def build_conversation(index: int, sample: dict[str, Any], max_questions: int | None) -> Conversation:
    conv = sample["conversation"]
    speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    sessions: list[SessionFile] = []
    known: set[str] = set()
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    for number in numbers:
        turns = conv[f"session_{number}"]
        if not turns:
            continue
        sessions.append(
            render_session(sample["sample_id"], speakers, number, conv[f"session_{number}_date_time"], turns)
        )
        known.update(str(t["dia_id"]) for t in turns)
    questions: list[Question] = []
    dropped: list[str] = []
    skipped = 0
    for qi, qa in enumerate(sample["qa"]):
        evidence = normalise_evidence(qa.get("evidence") or [])
        dropped.extend(e for e in evidence if e not in known)
        evidence = [e for e in evidence if e in known]
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(qi, str(qa["question"]), int(qa["category"]), tuple(evidence)))
    if max_questions is not None:
        questions = questions[:max_questions]
    return Conversation(index, sample["sample_id"], sessions, questions, len(known), dropped, skipped)


def load_conversations(path: Path, indices: Sequence[int] | None, max_questions: int | None) -> list[Conversation]:
    if not path.is_file():
        raise SystemExit(f"LoCoMo data not found at {path}: set {benchlib.DATA_ENV} to the folder holding {DATA_FILE}")
    samples = json.loads(path.read_text(encoding="utf-8"))
    chosen = range(len(samples)) if indices is None else indices
    return [build_conversation(i, samples[i], max_questions) for i in chosen]


# -- roots and indexing -------------------------------------------------------------------------------


def sync_root(root: Path, conversation: Conversation) -> int:
    """Write the conversation's session files under `root` (only those whose text differs); return writes."""
    written = 0
    wanted = {s.rel for s in conversation.sessions}
    for session in conversation.sessions:
        path = root / session.rel
        if path.is_file() and path.read_text(encoding="utf-8") == session.text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(session.text, encoding="utf-8")
        written += 1
    sessions_dir = root / "sessions"
    if sessions_dir.is_dir():
        for stale in sessions_dir.rglob("*.md"):
            if stale.relative_to(root).as_posix() not in wanted:
                stale.unlink()
    (root / "topics").mkdir(parents=True, exist_ok=True)
    return written


class CachingEmbedder:
    """Wraps an embedder and remembers query vectors (same vectors; used by --sweep to save time)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: dict[str, NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        texts = list(texts)
        if len(texts) != 1:
            return self.inner.embed(texts)
        if texts[0] not in self._cache:
            self._cache[texts[0]] = self.inner.embed(texts)[0]
        return self._cache[texts[0]][None, :]


class BodyOnlyEmbedder:
    """Experiment (--embed-variant body): embeds a chunk without the context line that Chunk.embed_text()
    puts before it (title > heading (date)), to measure what that prefix does to semantic retrieval.
    Queries (one line) pass through unchanged."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name + "+body-only"
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.inner.embed([t.split("\n", 1)[1] if "\n" in t else t for t in texts])


def open_memory(root: Path, settings: Settings, embedder: Embedder) -> tuple[Memory, dict[str, Any]]:
    """Open and index a root; the Memory and what indexing did."""
    memory = Memory(root, settings=settings, embedder=embedder)
    started = time.perf_counter()
    report = memory.index(timeout=600.0)
    seconds = time.perf_counter() - started
    chunks = int(memory.status().chunks)
    return memory, {
        "index_seconds": round(seconds, 3),
        "files_indexed": len(report.added) + len(report.updated),
        "chunks": chunks,
        "chunks_embedded": report.chunks_embedded,
    }


# -- scoring ------------------------------------------------------------------------------------------


def score_hits(conversation: Conversation, question: Question, hits: Sequence[Hit]) -> dict[str, float]:
    """Turn-level and session-level recall at each k for one question."""
    turns: list[str] = []
    sessions: list[int] = []
    for hit in hits:
        for dia in conversation.turns_of(hit):
            if dia not in turns:
                turns.append(dia)
        number = conversation.session_of_path(hit.path)
        if number is not None and number not in sessions:
            sessions.append(number)
    evidence = question.evidence
    out: dict[str, float] = {}
    for k in TURN_KS:
        first = set(turns[:k])
        out[f"turn_recall@{k}"] = sum(e in first for e in evidence) / len(evidence)
    for k in SESSION_KS:
        first_s = set(sessions[:k])
        out[f"session_recall@{k}"] = sum(session_number(e) in first_s for e in evidence) / len(evidence)
    out["turns_retrieved"] = float(len(turns))
    return out


METRICS = [f"turn_recall@{k}" for k in TURN_KS] + [f"session_recall@{k}" for k in SESSION_KS]


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean of each metric over rows (each row one question's scores)."""
    out: dict[str, Any] = {"n": len(rows)}
    for metric in METRICS:
        out[metric] = round(sum(r[metric] for r in rows) / len(rows), 4) if rows else None
    return out


def summarise(rows: Sequence[dict[str, Any]], splits: dict[str, list[int]]) -> dict[str, Any]:
    """Per split: overall and per category."""
    out: dict[str, Any] = {}
    for split, members in splits.items():
        chosen = [r for r in rows if r["conversation"] in members]
        if not chosen:
            continue
        by_cat = {
            str(c): aggregate([r for r in chosen if r["category"] == c])
            for c in CATEGORIES
            if any(r["category"] == c for r in chosen)
        }
        out[split] = {"conversations": members, "overall": aggregate(chosen), "by_category": by_cat}
    return out


# -- running ------------------------------------------------------------------------------------------


Search = Callable[[Memory, str, int], list[Hit]]


def search_fn(mode: str) -> Search:
    if mode == "exact":
        return lambda memory, query, k: memory.search_exact(query, k)
    return lambda memory, query, k: memory.search_memory(query, k)[0]


def mode_settings(base: Settings, mode: str) -> Settings:
    settings = copy.deepcopy(base)
    apply_overrides(settings, benchlib.overrides_to_mapping(MODE_OVERRIDES[mode]), source=f"mode {mode}")
    return settings


def run_questions(
    memory: Memory, conversation: Conversation, mode: str, k: int, details: bool
) -> tuple[list[dict[str, Any]], list[float]]:
    """Ask every question of a conversation in one mode; per-question scores and latencies (seconds)."""
    search = search_fn(mode)
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    if conversation.questions:  # not timed: the first query of a mode loads the model / warms caches
        search(memory, conversation.questions[0].text, k)
    for q in conversation.questions:
        started = time.perf_counter()
        hits = search(memory, q.text, k)
        latencies.append(time.perf_counter() - started)
        row: dict[str, Any] = {"conversation": conversation.index, "question": q.index, "category": q.category}
        row.update(score_hits(conversation, q, hits))
        if details:
            row["text"] = q.text
            row["evidence"] = list(q.evidence)
            row["hits"] = [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits]
        rows.append(row)
    return rows, latencies


def base_settings(overrides: Sequence[tuple[str, str, Any]], k: int) -> Settings:
    """Default settings plus --set overrides, with max_k and the text budget out of the way of k hits."""
    settings = benchlib.make_settings(overrides)
    settings.search.max_k = max(settings.search.max_k, k)
    settings.search.budget_chars = max(settings.search.budget_chars, k * settings.search.hit_chars)
    return settings


def make_embedder(fake: bool, variant: str = "context") -> Embedder:
    inner: Embedder = FakeEmbedder() if fake else MiniLMEmbedder()
    return BodyOnlyEmbedder(inner) if variant == "body" else inner


def roots_dir(args: argparse.Namespace) -> Path:
    if args.roots:
        return Path(args.roots)
    tag = "fake" if args.fake else "minilm"
    if args.embed_variant != "context":
        tag += f"-{args.embed_variant}"
    return benchlib.RESULTS_DIR / "roots" / f"locomo-{tag}"


def prepare(
    conversations: Sequence[Conversation], args: argparse.Namespace, settings: Settings, embedder: Embedder
) -> tuple[dict[int, Memory], list[dict[str, Any]]]:
    """Write and index every conversation's root; the open Memory objects and the corpus report."""
    base = roots_dir(args)
    memories: dict[int, Memory] = {}
    corpus: list[dict[str, Any]] = []
    for conv in conversations:
        root = base / conv.sample_id
        if args.fresh and root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        written = sync_root(root, conv)
        benchlib.log(f"[locomo] {conv.sample_id}: {len(conv.sessions)} sessions, {conv.turns} turns; indexing {root}")
        memory, info = open_memory(root, settings, embedder)
        memories[conv.index] = memory
        corpus.append(
            {
                "index": conv.index,
                "sample_id": conv.sample_id,
                "root": str(root),
                "sessions": len(conv.sessions),
                "turns": conv.turns,
                "questions": len(conv.questions),
                "skipped_questions": conv.skipped_questions,
                "dropped_evidence": conv.dropped_evidence,
                "files_written": written,
                **info,
            }
        )
        benchlib.log(f"[locomo] {conv.sample_id}: {info}")
    return memories, corpus


def evaluate(
    conversations: Sequence[Conversation],
    memories: dict[int, Memory],
    base: Settings,
    modes: Sequence[str],
    k: int,
    splits: dict[str, list[int]],
    details: bool,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    results: dict[str, Any] = {}
    all_rows: dict[str, list[dict[str, Any]]] = {}
    for mode in modes:
        rows: list[dict[str, Any]] = []
        latencies: list[float] = []
        for conv in conversations:
            memory = memories[conv.index]
            memory.settings = mode_settings(base, mode)
            got, secs = run_questions(memory, conv, mode, k, details)
            rows.extend(got)
            latencies.extend(secs)
        benchlib.log(f"[locomo] mode {mode}: {len(rows)} questions")
        results[mode] = {"splits": summarise(rows, splits), "latency": benchlib.latency_summary(latencies)}
        all_rows[mode] = rows
    return results, all_rows


def parse_grid(specs: Sequence[str], skip_unknown: bool = False) -> list[tuple[str, str, list[Any]]]:
    """'ranking.rrf_k=10,30,60' -> ('ranking', 'rrf_k', [10, 30, 60])."""
    grid = []
    defaults = Settings()
    for spec in specs:
        section, key, _ = benchlib.parse_override(spec.split(",")[0])
        if skip_unknown and not hasattr(getattr(defaults, section, None), key):
            benchlib.log(f"[locomo] sweep: no setting {section}.{key} in this version; axis left out")
            continue
        values = [benchlib.parse_override(f"{section}.{key}={v}")[2] for v in spec.split("=", 1)[1].split(",")]
        grid.append((section, key, values))
    return grid


def sweep(
    conversations: Sequence[Conversation],
    memories: dict[int, Memory],
    base: Settings,
    grid_specs: Sequence[str],
    k: int,
) -> dict[str, Any]:
    """search_memory on the tune split for every combination of the grid."""
    tune = [c for c in conversations if c.index in TUNE]
    if not tune:
        raise SystemExit("--sweep needs the tune split: include conversation 0 and/or 1")
    grid = parse_grid(grid_specs, skip_unknown=grid_specs is DEFAULT_GRID)
    rows: list[dict[str, Any]] = []
    combos = list(itertools.product(*[values for _, _, values in grid]))
    for n, combo in enumerate(combos, 1):
        overrides = [(s, key, v) for (s, key, _), v in zip(grid, combo, strict=False)]
        settings = copy.deepcopy(base)
        apply_overrides(settings, benchlib.overrides_to_mapping(overrides), source="sweep")
        scored: list[dict[str, Any]] = []
        latencies: list[float] = []
        for conv in tune:
            memory = memories[conv.index]
            memory.settings = settings
            got, secs = run_questions(memory, conv, "default", k, False)
            scored.extend(got)
            latencies.extend(secs)
        row = {"overrides": benchlib.flat_overrides(overrides), "metrics": aggregate(scored)}
        row["latency"] = benchlib.latency_summary(latencies)
        rows.append(row)
        benchlib.log(f"[locomo] sweep {n}/{len(combos)} {row['overrides']}: {row['metrics']['turn_recall@10']}")
    rows.sort(key=lambda r: (-r["metrics"]["turn_recall@10"], -r["metrics"]["turn_recall@5"]))
    defaults = Settings()
    default_values = {f"{s}.{key}": getattr(getattr(defaults, s), key) for s, key, _ in grid}
    return {"split": "tune", "conversations": [c.index for c in tune], "defaults": default_values, "rows": rows}


# -- printing -----------------------------------------------------------------------------------------


SHORT = {**{f"turn_recall@{k}": f"T@{k}" for k in TURN_KS}, **{f"session_recall@{k}": f"S@{k}" for k in SESSION_KS}}


def metric_cells(metrics: dict[str, Any]) -> list[Any]:
    return [metrics["n"], *[metrics[m] for m in METRICS]]


def print_results(results: dict[str, Any]) -> None:
    headers = ["mode", "split", "n", *[SHORT[m] for m in METRICS]]
    rows = []
    for mode, res in results.items():
        for split, data in res["splits"].items():
            rows.append([mode, split, *metric_cells(data["overall"])])
    print(benchlib.format_table(headers, rows, "LoCoMo retrieval, overall (T = turn-level recall, S = session-level)"))
    print()
    splits = sorted({s for res in results.values() for s in res["splits"]}, key=["tune", "held_out", "all"].index)
    for split in splits:
        rows = []
        for mode, res in results.items():
            data = res["splits"].get(split)
            if not data:
                continue
            for cat, metrics in data["by_category"].items():
                rows.append([mode, f"{cat} {CATEGORIES[int(cat)]}", *metric_cells(metrics)])
            rows.append([mode, "overall", *metric_cells(data["overall"])])
        headers = ["mode", "category", "n", *[SHORT[m] for m in METRICS]]
        members = next(iter(results.values()))["splits"][split]["conversations"]
        print(benchlib.format_table(headers, rows, f"split {split} (conversations {members}), by category"))
        print()
    rows = [
        [mode, *[res["latency"][key] for key in ("n", "mean_ms", "p50_ms", "p95_ms", "max_ms")]]
        for mode, res in results.items()
    ]
    print(
        benchlib.format_table(
            ["mode", "queries", "mean ms", "p50 ms", "p95 ms", "max ms"], rows, "latency per query (in process)"
        )
    )
    print()


def print_sweep(data: dict[str, Any]) -> None:
    keys = list(data["defaults"])
    headers = [*[k.split(".")[-1] for k in keys], "n", *[SHORT[m] for m in METRICS], "p50 ms", ""]
    rows = []
    for row in data["rows"]:
        is_default = all(row["overrides"][k] == data["defaults"][k] for k in keys)
        rows.append(
            [
                *[row["overrides"][k] for k in keys],
                *metric_cells(row["metrics"]),
                row["latency"]["p50_ms"],
                "<- defaults" if is_default else "",
            ]
        )
    print(
        benchlib.format_table(
            headers,
            rows,
            f"sweep of search_memory settings on the tune split {data['conversations']}, best turn R@10 first",
        )
    )
    print()


# -- command line -------------------------------------------------------------------------------------


def parse_indices(text: str | None) -> list[int] | None:
    if not text:
        return None
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/locomo.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", help="subset of conversations by index, e.g. 0,1 or 2-9 (default: all 10)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated modes out of {', '.join(MODES)}")
    benchlib.add_set_option(parser, scope=" for every mode")
    parser.add_argument(
        "--k", type=int, default=20, help="hits asked per query (default 20; >= 10 turns are needed for R@10)"
    )
    parser.add_argument("--fake", action="store_true", help="FakeEmbedder instead of all-MiniLM-L6-v2 (plumbing only)")
    parser.add_argument(
        "--max-questions", type=int, default=None, help="ask at most N questions per conversation (smoke runs)"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="also evaluate a grid of ranking settings on the tune split"
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=None,
        metavar="SECTION.KEY=V1,V2,...",
        help=f"a sweep axis (repeatable); default: {' '.join(DEFAULT_GRID)}",
    )
    parser.add_argument(
        "--embed-variant",
        choices=EMBED_VARIANTS,
        default="context",
        help="experiment: 'body' embeds chunks without the title/heading/date line (own roots)",
    )
    parser.add_argument(
        "--roots", help="folder for the conversations' memory roots (default: bench/results/roots/locomo-<embedder>)"
    )
    parser.add_argument("--fresh", action="store_true", help="delete the roots first (re-index everything)")
    parser.add_argument("--details", action="store_true", help="keep each question's hits in the JSON")
    parser.add_argument("--data", help=f"path of {DATA_FILE} (default: ${benchlib.DATA_ENV} or ../shared/bench)")
    parser.add_argument("--json-out", help="where to write the JSON results (default bench/results/locomo.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}: use {', '.join(MODES)}")
    if args.k < max(TURN_KS):
        raise SystemExit(f"--k must be at least {max(TURN_KS)}")
    overrides = [benchlib.parse_override(o) for o in args.overrides]
    data_path = Path(args.data) if args.data else benchlib.data_dir() / DATA_FILE
    conversations = load_conversations(data_path, parse_indices(args.conversations), args.max_questions)
    settings = base_settings(overrides, args.k)
    embedder = make_embedder(args.fake, args.embed_variant)
    memories, corpus = prepare(conversations, args, settings, embedder)
    present = [c.index for c in conversations]
    splits = {
        "tune": [i for i in present if i in TUNE],
        "held_out": [i for i in present if i in HELD_OUT],
        "all": present,
    }
    try:
        results, rows = evaluate(conversations, memories, settings, modes, args.k, splits, args.details)
        sweep_data = None
        if args.sweep:
            cached = CachingEmbedder(embedder)
            for memory in memories.values():
                memory.embedder = cached
            sweep_data = sweep(conversations, memories, settings, args.grid or DEFAULT_GRID, args.k)
    finally:
        for memory in memories.values():
            memory.close()
    out: dict[str, Any] = {
        "benchmark": "locomo",
        "environment": benchlib.environment(),
        "data": {"path": str(data_path), "sha256": benchlib.sha256_file(data_path)},
        "config": {
            "conversations": present,
            "modes": modes,
            "k": args.k,
            "embedder": embedder.name,
            "fake_embedder": bool(args.fake),
            "embed_variant": args.embed_variant,
            "overrides": benchlib.flat_overrides(overrides),
            "mode_overrides": {m: benchlib.flat_overrides(MODE_OVERRIDES[m]) for m in modes},
            "max_questions": args.max_questions,
        },
        "corpus": corpus,
        "splits": splits,
        "results": results,
    }
    if sweep_data is not None:
        out["sweep"] = sweep_data
    if args.details:
        out["questions"] = rows
    print(
        f"embedder: {embedder.name}{' (FAKE: plumbing only, not a quality number)' if args.fake else ''}; "
        f"k={args.k} hits per query"
    )
    print_results(results)
    if sweep_data is not None:
        print_sweep(sweep_data)
    path = benchlib.write_json(Path(args.json_out) if args.json_out else benchlib.default_json_out("locomo"), out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
