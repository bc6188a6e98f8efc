"""Bytes per kept transcript, against the budget: how big the evidence that outlives Claude Code's clean-up is.

Every transcript under ../shared/transcripts (or $MEMORY_SERVER_SHARED/transcripts; real sessions and the
curated fixtures, 39 files) is kept into a throwaway memory root through the same code compression runs
(`sessions/keep.py`: parse, redact, gzip), with
the default budget (`transcripts.keep_budget_bytes`) and with a tight one (`--tight`, to show the levels cut
tool output and never a line). Printed per budget: the median, 95th percentile (linear interpolation) and
largest kept size, the size against the transcript's, how many sessions needed cutting, how many went over;
and for every copy, whether it parses to the same messages at the same lines as the transcript (line
references stay valid). Then the cost: compressing the whole set with keeping on over keeping off (CPU time,
best of `--repeat`, in one process).

    python bench/kept_size.py                     # ~2 minutes on 2 cores
    python bench/kept_size.py --quick             # the first 10 transcripts, one repeat
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import default_json_out, environment, format_table, log, percentile, shared_dir, write_json  # noqa: E402

from memory_server.files.root import MemoryRoot  # noqa: E402
from memory_server.files.scaffold import init_root  # noqa: E402
from memory_server.sessions.compress import compress_transcript  # noqa: E402
from memory_server.sessions.keep import Keeper  # noqa: E402
from memory_server.sessions.kept import find_kept  # noqa: E402
from memory_server.sessions.parser import transcript_id  # noqa: E402
from memory_server.sessions.reader import parse_transcript  # noqa: E402
from memory_server.settings import TranscriptSettings  # noqa: E402

SHARED = shared_dir() / "transcripts"  # ../shared/transcripts, or $MEMORY_SERVER_SHARED/transcripts
TIGHT = 32 * 1024


def transcripts(quick: bool) -> list[Path]:
    found = sorted(SHARED.rglob("*.jsonl"))
    if not found:
        raise SystemExit(f"no transcripts under {SHARED}: this benchmark reads ../shared/transcripts")
    return found[:10] if quick else found


def same_messages(a: Path, b: Path) -> bool:
    def shape(p: Path) -> tuple[list[tuple[int, int, str, str]], int]:
        t = parse_transcript(p)
        return [(m.line, m.end_line, m.role, m.search_text) for m in t.messages], t.line_count

    return shape(a) == shape(b)


def keep_all(files: list[Path], budget: int, work: Path) -> list[dict[str, Any]]:
    """Keep every transcript into a fresh root with `budget`; one row per transcript."""
    root_dir = work / f"root-{budget}"
    init_root(root_dir)
    root = MemoryRoot(root_dir)
    settings = TranscriptSettings(keep_budget_bytes=budget)
    rows = []
    for path in files:
        keeper = Keeper(root, path, settings)
        parsed = parse_transcript(path, on_record=keeper.take)
        result = keeper.commit(parsed.started)
        kept = find_kept(root, transcript_id(path))
        assert kept is not None, f"{path.name} was not kept: {result.note}"
        rows.append(
            {
                "transcript": str(path.relative_to(SHARED)),
                "bytes": path.stat().st_size,
                "kept_bytes": kept.stat().st_size,
                "level": result.level,
                "over_budget": result.over_budget,
                "same_lines": same_messages(path, kept) if result.level == 0 else None,
                "same_line_count": parse_transcript(kept).line_count == parsed.line_count,
            }
        )
    return rows


def summary(rows: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    sizes = [float(r["kept_bytes"]) for r in rows]
    return {
        "budget": budget,
        "sessions": len(rows),
        "median_bytes": percentile(sizes, 50),
        "p95_bytes": percentile(sizes, 95),
        "max_bytes": max(sizes),
        "p95_of_budget": percentile(sizes, 95) / budget,
        "kept_over_original": sum(sizes) / sum(r["bytes"] for r in rows),
        "cut": sum(1 for r in rows if r["level"]),
        "over_budget": sum(1 for r in rows if r["over_budget"]),
        "same_messages": sum(1 for r in rows if r["same_lines"]),
        "same_line_count": sum(1 for r in rows if r["same_line_count"]),
    }


def compress_time(files: list[Path], keep: bool, work: Path, repeat: int) -> float:
    """CPU seconds to compress every transcript into a fresh root, keeping or not; best of `repeat`."""
    best = float("inf")
    for n in range(repeat):
        root_dir = work / f"compress-{keep}-{n}"
        init_root(root_dir)
        (root_dir / "memory.yaml").write_text(f"transcripts:\n  keep: {'true' if keep else 'false'}\n")
        started = time.process_time()
        for path in files:
            compress_transcript(path, MemoryRoot(root_dir))
        best = min(best, time.process_time() - started)
        shutil.rmtree(root_dir)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first 10 transcripts, one repeat")
    parser.add_argument("--tight", type=int, default=TIGHT, help=f"the tight budget in bytes (default {TIGHT})")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each compression pass; the best counts")
    parser.add_argument("--json", type=Path, default=default_json_out("kept_size"))
    args = parser.parse_args()
    files = transcripts(args.quick)
    default_budget = TranscriptSettings().keep_budget_bytes
    work = Path(tempfile.mkdtemp(prefix="kept-size-"))
    try:
        log(f"keeping {len(files)} transcripts ({sum(p.stat().st_size for p in files):,} bytes)")
        runs = {budget: keep_all(files, budget, work) for budget in (default_budget, args.tight)}
        repeat = 1 if args.quick else args.repeat
        log("compressing with and without keeping")
        off = compress_time(files, False, work, repeat)
        on = compress_time(files, True, work, repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sums = [summary(rows, budget) for budget, rows in runs.items()]
    table = [
        [
            s["budget"],
            s["sessions"],
            int(s["median_bytes"]),
            int(s["p95_bytes"]),
            int(s["max_bytes"]),
            f"{s['p95_of_budget']:.1%}",
            f"{s['kept_over_original']:.1%}",
            s["cut"],
            s["over_budget"],
            f"{s['same_messages']}/{s['sessions'] - s['cut']}",
            f"{s['same_line_count']}/{s['sessions']}",
        ]
        for s in sums
    ]
    headers = [
        "budget",
        "n",
        "median",
        "p95",
        "max",
        "p95/budget",
        "kept/raw",
        "cut",
        "over",
        "same msgs",
        "same lines",
    ]
    print(format_table(headers, table, title="Kept transcripts, bytes per session (../shared/transcripts)"))
    print(f"\ncompressing all {len(files)}: {off:.2f} s CPU without keeping, {on:.2f} s with: x{on / off:.2f}")
    write_json(
        args.json,
        {
            "environment": environment(),
            "summaries": sums,
            "compress_seconds": {"keep_off": off, "keep_on": on, "ratio": on / off},
            "rows": runs,
        },
    )


if __name__ == "__main__":
    main()
