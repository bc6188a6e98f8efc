"""Per-prompt recall: what each way of answering returns for real prompts, how fast, and the score bar to use.

Every person's prompt of ../shared/transcripts (slash commands and prompts too short to search left out, as
the hook leaves them out) is searched on its project's memory as it stood then: the sessions of the project
that had ended, compressed and indexed (the replay of bench/failure_replay.py). Two ways are measured:

- keyword: what the UserPromptSubmit hook runs (inject/prompt_recall.py): search_memory's ranking over the
  keyword index alone, in the hook's own process;
- server: search_memory as the running server answers it (the model loaded, hybrid ranking), which the hook
  could ask over a local socket: timed in a warm process (a socket round trip adds about a millisecond).

For each, the two best hits per prompt with their scores go to a file a reader judges ("would this hit help
the agent with this prompt?"); the verdicts are recorded in bench/judged/prompt_recall.jsonl (keys only: the
transcripts stay outside the repository). The bar is the lowest score at which the hits at or above it are
helpful in at least --target of cases (unjudged hits count as not helpful). Ranking changes move scores, so
run this again after one: it prints the bar it picks today and the hits that still need a verdict.

    python bench/prompt_recall.py --cases bench/results/prompt_recall_cases.md
    python bench/prompt_recall.py --fake        # plumbing only (no model)
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
from failure_replay import Session, projects, sessions_of  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.files.root import MemoryRoot  # noqa: E402
from memory_server.files.scaffold import init_root  # noqa: E402
from memory_server.inject.prompt_recall import recall, searchable  # noqa: E402
from memory_server.sessions.compress import compress_transcript  # noqa: E402
from memory_server.sessions.events import session_events  # noqa: E402
from memory_server.settings import Settings  # noqa: E402

JUDGED = Path(__file__).resolve().parent / "judged" / "prompt_recall.jsonl"
QUESTION = "Would this memory hit help the agent with this prompt?"
WAYS = ("keyword", "server")


@dataclass
class Hit:
    way: str
    project: str
    session: str
    line: int
    prompt: str
    path: str
    start_line: int
    score: float
    text: str

    @property
    def key(self) -> str:
        raw = f"{self.project}|{self.session}|{self.line}|{self.path}|{self.start_line}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass
class Measured:
    prompts: int = 0
    searched: int = 0
    hits: list[Hit] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WAYS})


def replay(name: str, paths: list[Path], work: Path, settings: Settings, fake: bool, out: Measured) -> None:
    sessions = sessions_of(paths)
    root = work / re.sub(r"[^\w.-]+", "_", name)
    init_root(root)
    embedder = None
    if fake:
        from memory_server.testing import FakeEmbedder

        embedder = FakeEmbedder()
    with Memory(root, settings=settings, embedder=embedder) as memory:

        def end(s: Session) -> None:
            compress_transcript(s.path, MemoryRoot(root))
            memory.index()

        def asked(item: tuple[Session, int, str]) -> None:
            _prompt(name, memory, settings, item, out)

        events: list[tuple[dt.datetime, int, Callable[[], None]]] = []
        for s in sessions:
            events.append((s.ended, 1, functools.partial(end, s)))
            for u in session_events(s.transcript).user_messages:
                out.prompts += 1
                if u.command is None and searchable(u.text):
                    events.append((u.timestamp or s.started, 0, functools.partial(asked, (s, u.line, u.text))))
        for _when, _order, happen in sorted(events, key=lambda e: (e[0], e[1])):
            happen()


def _prompt(name: str, memory: Memory, settings: Settings, item: tuple[Session, int, str], out: Measured) -> None:
    s, line, text = item
    out.searched += 1
    t = time.perf_counter()
    keyword = recall(memory.root, settings, text, limit=2)
    out.seconds["keyword"].append(time.perf_counter() - t)
    t = time.perf_counter()
    served, _mode = memory.search_memory(searchable(text), k=2)
    out.seconds["server"].append(time.perf_counter() - t)
    for k in keyword:
        out.hits.append(Hit("keyword", name, s.path.name, line, text, k.path, k.start_line, k.score, k.text))
    for v in served:
        out.hits.append(Hit("server", name, s.path.name, line, text, v.path, v.start_line, v.score, v.text))


def load_verdicts(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["key"]: row["verdict"] for row in rows}


def choose_bar(hits: list[Hit], verdicts: dict[str, str], target: float, least: int) -> tuple[float | None, float]:
    """The lowest score at which at least `least` hits score as high or higher and at least `target` of them
    help (unjudged: not helpful); (None, 0) when no score qualifies."""
    ranked = sorted(hits, key=lambda h: h.score, reverse=True)
    best: tuple[float | None, float] = (None, 0.0)
    helpful = 0
    for n, h in enumerate(ranked, 1):
        helpful += verdicts.get(h.key) == "helps"
        if n >= least and helpful / n >= target and (n == len(ranked) or ranked[n].score < h.score):
            best = (h.score, helpful / n)
    return best


def _precision_at_top(hits: list[Hit], verdicts: dict[str, str], n: int) -> float:
    ranked = sorted(hits, key=lambda h: h.score, reverse=True)[:n]
    return sum(verdicts.get(h.key) == "helps" for h in ranked) / len(ranked) if ranked else 0.0


def write_cases(hits: list[Hit], path: Path) -> None:
    seen: set[str] = set()
    out = [
        "# Memory hits to judge",
        "",
        f"For each case answer: {QUESTION}",
        "",
        "A case is a prompt a person typed to a coding agent and one passage of the project's memory (notes of its",
        "earlier sessions) found for it. Answer `helps` when the passage holds something the agent needs or should",
        "know to act on this prompt (a fact, a decision, an earlier fix, where it stopped), `noise` when it does",
        "not (it only shares words, or concerns other work). One line per case: `<key> helps|noise <why>`.",
        "",
    ]
    for h in sorted(hits, key=lambda h: (h.project, h.session, h.line)):
        if h.key in seen:
            continue
        seen.add(h.key)
        out += [
            f"## key `{h.key}`",
            "",
            f"Prompt: {' '.join(h.prompt.split())[:600]}",
            f"Memory ({h.path}:{h.start_line}): {' '.join(h.text.split())[:600]}",
            "",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def report(out: Measured, verdicts: dict[str, str], target: float, least: int) -> dict[str, object]:
    print(f"prompts {out.prompts}, searched {out.searched} (slash commands and short prompts left out)")
    result: dict[str, object] = {"prompts": out.prompts, "searched": out.searched}
    for way in WAYS:
        hits = [h for h in out.hits if h.way == way]
        judged = [h for h in hits if h.key in verdicts]
        helpful = sum(verdicts[h.key] == "helps" for h in judged)
        bar, precision = choose_bar(hits, verdicts, target, least)
        above = [h for h in hits if bar is not None and h.score >= bar]
        prompts_above = len({(h.session, h.line) for h in above})
        secs = sorted(out.seconds[way])
        p50 = statistics.median(secs) * 1000 if secs else 0.0
        p95 = secs[int(0.95 * (len(secs) - 1))] * 1000 if secs else 0.0
        top = max((h.score for h in hits), default=0.0)
        best = _precision_at_top(hits, verdicts, 10)
        chosen = (
            f"bar {bar:.4f}" if bar is not None else f"no bar reaches {target:.2f} (so: over {top:.4f}, the best seen)"
        )
        print(
            f"{way:<8} hits {len(hits)}, judged {len(judged)} ({helpful} help), precision of the 10 best {best:.2f}; "
            f"{chosen}: {len(above)} hits on {prompts_above} prompts at or over it; "
            f"latency p50 {p50:.1f} ms, p95 {p95:.1f} ms (search only)"
        )
        result[way] = {
            "best_score": top,
            "precision_top10": best,
            "hits": len(hits),
            "judged": len(judged),
            "helpful": helpful,
            "bar": bar,
            "above": len(above),
            "prompts_above": prompts_above,
            "precision": precision,
            "p50_ms": p50,
            "p95_ms": p95,
            "unjudged": sum(h.key not in verdicts for h in hits),
        }
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=Path(benchlib.data_dir()).parent)
    ap.add_argument("--fake", action="store_true", help="FakeEmbedder instead of the model (plumbing only)")
    ap.add_argument("--cases", type=Path, help="write the hits to judge to this file")
    ap.add_argument("--verdicts", type=Path, default=JUDGED)
    ap.add_argument("--target", type=float, default=0.9, help="precision the bar must reach")
    ap.add_argument("--least", type=int, default=5, help="hits at or above the bar, at least")
    ap.add_argument("--json-out", type=Path, default=benchlib.default_json_out("prompt_recall"))
    args = ap.parse_args(argv)
    if not (args.shared / "transcripts").is_dir():
        print(f"needs {args.shared / 'transcripts'} (set MEMORY_SERVER_SHARED)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="prompt-recall-"))
    settings = Settings()
    out = Measured()
    for name, paths in projects(args.shared, None).items():
        replay(name, paths, work, settings, args.fake, out)
    if args.cases:
        write_cases(out.hits, args.cases)
        print(f"cases to judge: {args.cases}")
    result = report(out, load_verdicts(args.verdicts), args.target, args.least)
    result["hits"] = [
        {"key": h.key, "way": h.way, "score": round(h.score, 4), "path": h.path, "line": h.start_line} for h in out.hits
    ]
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"results: {args.json_out}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
