"""Replay real sessions in order and measure the hooks that add context: the earlier fix when a tool call fails,
and the session-start brief.

Every transcript of ../shared/transcripts (top level and fixtures/ grouped by their project, entire/ as one
project), and with --hand-written the sessions of bench/replay_sessions.py, is replayed per project on a fresh
memory root, on one timeline: a session's compressed record is written and indexed (keyword index, as the
running server's watcher does) when the session ends, and every failed tool call (a tool result marked as an
error that Claude Code fires PostToolUseFailure for: not a rejection, not one of its own input checks) is given
to the failure hook's code (`inject.fixes`) at the moment it happened. At each session's start the brief
(`inject.brief`) is made, and its size recorded.

Precision is judged by a reader who sees only the cases file this writes (the failure: command and error; the
text that would have been injected; what the agent did next) and answers, per case, "is the injected earlier
fix the fix for the same mistake?" The verdicts are recorded in bench/judged/failure_replay.jsonl (key, verdict,
reader; no transcript text: the data stays outside the repository); this command prints precision from them.
Recall is against an exhaustive scan: failures whose normalised error some earlier record shows with a fix.

    python bench/failure_replay.py                       # the real sessions
    python bench/failure_replay.py --hand-written        # and the hand-written ones (bench/replay_sessions.py)
    python bench/failure_replay.py --hand-written --cases bench/results/failure_replay_cases.md
    python bench/failure_replay.py --timing              # hook wall times on a root with many sessions
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import benchlib  # noqa: E402

from memory_server.api import Memory  # noqa: E402
from memory_server.files.root import MemoryRoot  # noqa: E402
from memory_server.files.scaffold import init_root  # noqa: E402
from memory_server.inject.answer import HookInput  # noqa: E402
from memory_server.inject.brief import BriefInput, session_brief  # noqa: E402
from memory_server.inject.fixes import failure_of, render, same_error  # noqa: E402
from memory_server.inject.fixes import lookup as fix_lookup  # noqa: E402
from memory_server.inject.index_reader import KeywordIndex  # noqa: E402
from memory_server.sessions.compress import compress_transcript  # noqa: E402
from memory_server.sessions.reader import Transcript, parse_transcript  # noqa: E402
from memory_server.sessions.redact import clean  # noqa: E402
from memory_server.settings import Settings  # noqa: E402

JUDGED = Path(__file__).resolve().parent / "judged" / "failure_replay.jsonl"
QUESTION = "Is the injected earlier fix the fix for the same mistake?"
# Tool errors Claude Code answers itself, before or instead of running the tool: no PostToolUseFailure.
NOT_FIRED = re.compile(
    r"^(?:Error: )?(?:The user doesn't want to|<tool_use_error>|\[Request interrupted|User rejected|Claude requested "
    r"permissions|Permission to use)"
)
NEXT_ACTIONS = 4


@dataclass
class Session:
    path: Path
    transcript: Transcript

    @property
    def started(self) -> dt.datetime:
        return self.transcript.started or dt.datetime.min.replace(tzinfo=dt.UTC)

    @property
    def ended(self) -> dt.datetime:
        return self.transcript.ended or self.started


@dataclass
class Failure:
    session: Session
    line: int
    when: dt.datetime
    tool: str
    call: str
    error: str
    after: list[str]


@dataclass
class Case:
    project: str
    failure: Failure
    injected: str
    key: str
    repeat: bool  # an earlier record shows the same normalised error with a fix (the exhaustive scan)


@dataclass
class ProjectResult:
    name: str
    sessions: int = 0
    tool_errors: int = 0
    failures: int = 0
    looked_up: int = 0
    repeats: int = 0
    cases: list[Case] = field(default_factory=list)
    briefs: list[tuple[str, int, float]] = field(default_factory=list)  # (session, characters, seconds)


# -- the projects ---------------------------------------------------------------------------------------


def projects(shared: Path, hand_written: Path | None) -> dict[str, list[Path]]:
    """Transcripts by project: `owner__repo__*` files by their repository, entire/ as one project."""
    out: dict[str, list[Path]] = {}
    top = shared / "transcripts"
    for path in sorted([*top.glob("*.jsonl"), *(top / "fixtures").glob("*.jsonl")]):
        out.setdefault("__".join(path.name.split("__")[:2]), []).append(path)
    entire = sorted((top / "entire").glob("*.jsonl"))
    if entire:
        out["entireio/cli (entire/)"] = entire
    if hand_written is not None:
        for path in sorted(hand_written.glob("*/*.jsonl")):
            out.setdefault(f"hand-written/{path.parent.name}", []).append(path)
    return out


def sessions_of(paths: list[Path]) -> list[Session]:
    found = []
    for path in paths:
        try:
            t = parse_transcript(path)
        except Exception as exc:  # a fixture may be a fragment: leave it out, say so
            print(f"  skipped {path.name}: {exc}", file=sys.stderr)
            continue
        if t.started is not None and t.messages:
            found.append(Session(path, t))
    return found


def one_line(text: str, limit: int) -> str:
    s = " ".join(text.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def failures_of(s: Session) -> Iterator[tuple[Failure | None, bool]]:
    """Each tool error of the session: (the failure, or None when Claude Code fires no hook for it; True)."""
    uses = [(m, u) for m in s.transcript.messages if not m.is_sidechain for u in m.tool_uses]
    answered = {r.tool_use_id: m for m in s.transcript.messages for r in m.tool_results}
    for i, (m, use) in enumerate(uses):
        result = s.transcript.result_of(use)
        if result is None or not result.is_error:
            continue
        if NOT_FIRED.match(result.text.strip()):
            yield None, True
            continue
        at = answered.get(use.id, m)
        call = use.input.get("command") if isinstance(use.input.get("command"), str) else json.dumps(use.input)
        after = [
            f"{u.name}: {one_line(clean(_call_text(u.input)), 160)}" for _, u in uses[i + 1 : i + 1 + NEXT_ACTIONS]
        ]
        when = at.timestamp or m.timestamp or s.started
        yield Failure(s, at.line, when, use.name, one_line(clean(str(call)), 300), clean(result.text), after), True


def _call_text(data: dict[str, object]) -> str:
    for key in ("command", "file_path", "pattern", "path"):
        if isinstance(data.get(key), str):
            extra = ""
            if key == "file_path" and isinstance(data.get("new_string"), str):
                extra = f" -> {data['new_string']}"
            return f"{data[key]}{extra}"
    return json.dumps(data)[:200]


# -- the replay -------------------------------------------------------------------------------------------


def replay(name: str, paths: list[Path], work: Path, settings: Settings) -> ProjectResult:
    result = ProjectResult(name)
    sessions = sessions_of(paths)
    result.sessions = len(sessions)
    root = work / re.sub(r"[^\w.-]+", "_", name)
    init_root(root)
    memory_root = MemoryRoot(root)
    with Memory(root, keyword_only=True, settings=settings) as memory:

        def start(s: Session) -> None:
            result.briefs.append(_brief(memory_root, settings, s))

        def end(s: Session) -> None:
            compress_transcript(s.path, memory_root)
            memory.index()

        def failed(f: Failure) -> None:
            _failure(result, memory_root, settings, f)

        events: list[tuple[dt.datetime, int, Callable[[], None]]] = []
        for s in sessions:
            events.append((s.started, 0, functools.partial(start, s)))
            events.append((s.ended, 2, functools.partial(end, s)))
            for f, _counted in failures_of(s):
                result.tool_errors += 1
                if f is not None:
                    events.append((f.when, 1, functools.partial(failed, f)))
        for _when, _order, happen in sorted(events, key=lambda e: (e[0], e[1])):
            happen()
    return result


def _brief(root: MemoryRoot, settings: Settings, s: Session) -> tuple[str, int, float]:
    started = time.perf_counter()
    text = session_brief(BriefInput(root, settings, s.started.timestamp(), s.transcript.session_id))
    return (s.path.name, len(text), time.perf_counter() - started)


def _failure(result: ProjectResult, root: MemoryRoot, settings: Settings, f: Failure) -> None:
    result.failures += 1
    found = failure_of(HookInput("PostToolUseFailure", f.session.transcript.session_id, f.tool, f.error))
    if found is None:
        return
    result.looked_up += 1
    repeat = _earlier_record_shows(root, found.normalised, f.session.transcript.session_id)
    result.repeats += repeat
    index = KeywordIndex.open(root.path)
    if index is None:
        return
    with index:
        fixes = fix_lookup(root, index, found, session_id=f.session.transcript.session_id)
    text = render(found, fixes, settings.hooks.fix_chars) if fixes else ""
    if text:
        key = hashlib.sha256(f"{result.name}|{f.session.path.name}|{f.line}|{text}".encode()).hexdigest()[:16]
        result.cases.append(Case(result.name, f, text, key, repeat))


ERROR_LINE = re.compile(
    r"^- (?:User pasted|\S+(?: `[^`]*`| ``[^`]*``)?): (.*?) \(line \d+[^)]*\) — passed at line \d+ after: "
)


def _earlier_record_shows(root: MemoryRoot, normalised: str, session_id: str) -> bool:
    """The exhaustive scan: does any session record (not this session's) hold this error with a fix?"""
    from memory_server.sessions.failures import normalise_error

    for path in root.sessions_dir.rglob("*.md"):
        if session_id[:8] in path.name:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            m = ERROR_LINE.match(line)
            if m and same_error(normalise_error(m.group(1).rstrip("…")), normalised):
                return True
    return False


# -- judging --------------------------------------------------------------------------------------------


def load_verdicts(path: Path) -> dict[str, dict[str, str]]:
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["key"]] = row
    return out


def write_cases(cases: list[Case], path: Path) -> None:
    """The file a reader judges: the question, then each case (no verdicts, no scores, no code)."""
    out = [
        "# Earlier fixes to judge",
        "",
        f"For each case answer: {QUESTION}",
        "",
        "A case shows a tool call that failed in a coding session (the command and its error), the text a memory",
        "system would have added to the agent's context at that moment (quoted from notes of earlier sessions or",
        "a lessons file), and what the agent did next. Answer `same` when the quoted earlier fix fixed the same",
        "mistake (the same error for the same reason, so that fix, or its kind, applies here), `different` when it",
        "is another mistake (another cause, another symbol, another file whose fix would not apply), `unsure` when",
        "the case does not let you tell. One line per case in your answer: `<key> same|different|unsure <why>`.",
        "",
    ]
    for n, c in enumerate(cases, 1):
        f = c.failure
        out += [
            f"## Case {n}: key `{c.key}`",
            "",
            f"Project: {c.project}",
            f"Failed call ({f.tool}): `{f.call}`",
            "Error (start):",
            "```",
            f.error[:900],
            "```",
            "Injected:",
            "```",
            c.injected,
            "```",
            "What the agent did next:",
            *[f"- {a}" for a in f.after],
            "",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def precision(cases: list[Case], verdicts: dict[str, dict[str, str]]) -> tuple[int, int, int, dict[str, int]]:
    """(judged, same, unjudged, verdicts by reader)."""
    judged = same = unjudged = 0
    readers: dict[str, int] = {}
    for c in cases:
        v = verdicts.get(c.key)
        if v is None:
            unjudged += 1
            continue
        judged += 1
        same += v["verdict"] == "same"
        readers[v.get("reader", "?")] = readers.get(v.get("reader", "?"), 0) + 1
    return judged, same, unjudged, readers


# -- timing -----------------------------------------------------------------------------------------------


def hook_times(root: Path, repeats: int) -> dict[str, float]:
    """Median wall time of each hook process (as Claude Code starts it) on `root`, and of bare Python."""
    cli = [sys.executable, "-m", "memory_server"]
    start = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "0"}
    failed = {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "error": "Exit code 1\nmerge: CONFLICT (content): Merge conflict in cmd/entire/cli/session/state.go",
    }
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "how do we run the linter before a commit?"}
    runs = {
        "python -c pass": ([sys.executable, "-c", "pass"], None, ""),
        "session-start": ([*cli, "hook", "session-start", "--root", str(root)], start, ""),
        "session-start, brief off": ([*cli, "hook", "session-start", "--root", str(root)], start, "brief_chars: 0"),
        "post-tool-use-failure": ([*cli, "hook", "post-tool-use-failure", "--root", str(root)], failed, ""),
        "user-prompt-submit (off)": ([*cli, "hook", "user-prompt-submit", "--root", str(root)], prompt, ""),
        "user-prompt-submit (on)": (
            [*cli, "hook", "user-prompt-submit", "--root", str(root)],
            prompt,
            "prompt_recall: true",
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # round-robin, so a busy spell of the machine falls on every hook alike
        for name, (argv, payload, hooks_yaml) in runs.items():
            (root / "memory.yaml").write_text(f"hooks:\n  {hooks_yaml}\n" if hooks_yaml else "", encoding="utf-8")
            t = time.perf_counter()
            subprocess.run(argv, input=json.dumps(payload or {}), capture_output=True, text=True, check=True)
            times[name].append(time.perf_counter() - t)
    (root / "memory.yaml").write_text("", encoding="utf-8")
    return {name: statistics.median(values) for name, values in times.items()}


def many_sessions_root(source: Path, target: Path, copies: int) -> Path:
    """A root holding `copies` copies of every session file of `source` (renamed into older days)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memory"))
    files = sorted((source / "sessions" / "compressed").rglob("*.md"))
    folder = target / "sessions" / "compressed" / "2020"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(copies):
        for f in files:
            (folder / f"2020-01-{n % 28 + 1:02d}-{n:04x}{f.name[11:15]}-{f.name[20:]}").write_bytes(f.read_bytes())
    with Memory(target, keyword_only=True) as memory:
        memory.index()
    return target


# -- the command ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=Path(benchlib.data_dir()).parent, help="the shared data folder")
    ap.add_argument("--hand-written", action="store_true", help="also replay bench/replay_sessions.py")
    ap.add_argument("--cases", type=Path, help="write the cases to judge to this file")
    ap.add_argument("--verdicts", type=Path, default=JUDGED, help="recorded verdicts (JSON lines)")
    ap.add_argument("--timing", action="store_true", help="also time the hook processes on a root of many sessions")
    ap.add_argument("--copies", type=int, default=120, help="--timing: copies of the replayed sessions")
    ap.add_argument("--rounds", type=int, default=9, help="--timing: rounds of every hook")
    ap.add_argument("--json-out", type=Path, default=benchlib.default_json_out("failure_replay"))
    args = ap.parse_args(argv)
    if not (args.shared / "transcripts").is_dir():
        print(f"needs {args.shared / 'transcripts'} (set MEMORY_SERVER_SHARED)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="failure-replay-"))
    hand = None
    if args.hand_written:
        import replay_sessions

        hand = replay_sessions.write_all(work / "hand-written")
    settings = Settings()
    results = [replay(name, paths, work / "roots", settings) for name, paths in projects(args.shared, hand).items()]
    report = summarise(results, load_verdicts(args.verdicts))
    if args.cases:
        write_cases([c for r in results for c in r.cases], args.cases)
        print(f"cases to judge: {args.cases}")
    if args.timing:
        biggest = max(results, key=lambda r: r.sessions)
        source = work / "roots" / re.sub(r"[^\w.-]+", "_", biggest.name)
        big = many_sessions_root(source, work / "many", args.copies)
        count = sum(1 for _ in (big / "sessions" / "compressed").rglob("*.md"))
        seconds = hook_times(big, args.rounds)
        report["timing"] = {"sessions": count, "rounds": args.rounds, "seconds": seconds}
        print(f"\nhook wall time (median of {args.rounds} rounds, one process each) on a root of {count:,} sessions:")
        base = seconds["python -c pass"]
        for name, value in seconds.items():
            print(f"  {name:<28} {value * 1000:7.0f} ms  ({value / base:4.1f}x bare Python)")
    benchlib_write(args.json_out, report)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def summarise(results: list[ProjectResult], verdicts: dict[str, dict[str, str]]) -> dict[str, object]:
    cases = [c for r in results for c in r.cases]
    judged, same, unjudged, readers = precision(cases, verdicts)
    print(
        f"{'project':<48} {'sessions':>8} {'errors':>7} {'failures':>8} {'looked up':>9} {'repeats':>7} {'injected':>8}"
    )
    for r in results:
        print(
            f"{r.name[:48]:<48} {r.sessions:>8} {r.tool_errors:>7} {r.failures:>8} {r.looked_up:>9} {r.repeats:>7} "
            f"{len(r.cases):>8}"
        )
    real = [r for r in results if not r.name.startswith("hand-written/")]
    for label, group in (("real sessions", real), ("all", results)):
        n_cases = [c for r in group for c in r.cases]
        j, s, u, _ = precision(n_cases, verdicts)
        repeats = sum(r.repeats for r in group)
        hit = sum(1 for c in n_cases if c.repeat and verdicts.get(c.key, {}).get("verdict") == "same")
        print(
            f"{label}: failures {sum(r.failures for r in group)}, injections {len(n_cases)}, judged {j}, "
            f"same mistake {s}, precision {s / j if j else float('nan'):.2f}, unjudged {u}; "
            f"repeats with a fix on record {repeats}, recall {hit / repeats if repeats else float('nan'):.2f}"
        )
    print(f"verdicts by reader: {readers or 'none recorded'}")
    print("session-start brief, characters per session start (in replay order, 0 = nothing to say):")
    for r in results:
        if r.briefs:
            print(f"  {r.name[:40]:<40} " + " ".join(str(size) for _, size, _ in r.briefs))
    sizes = [size for r in results for _, size, _ in r.briefs]
    seconds = [sec for r in results for _, _, sec in r.briefs]
    nonempty = [s for s in sizes if s]
    print(
        f"session-start brief over {len(sizes)} session starts: {len(nonempty)} non-empty; characters min "
        f"{min(nonempty, default=0)}, median {statistics.median(nonempty) if nonempty else 0:.0f}, max "
        f"{max(nonempty, default=0)}; time median {statistics.median(seconds) * 1000 if seconds else 0:.1f} ms"
    )
    return {
        "projects": [
            {
                "name": r.name,
                "sessions": r.sessions,
                "tool_errors": r.tool_errors,
                "failures": r.failures,
                "looked_up": r.looked_up,
                "repeats": r.repeats,
                "injections": len(r.cases),
                "briefs": [{"session": s, "chars": n, "seconds": round(t, 4)} for s, n, t in r.briefs],
                "cases": [
                    {"key": c.key, "session": c.failure.session.path.name, "line": c.failure.line} for c in r.cases
                ],
            }
            for r in results
        ],
        "judged": judged,
        "same": same,
        "unjudged": unjudged,
        "precision": same / judged if judged else None,
        "readers": readers,
    }


def benchlib_write(path: Path, report: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"results: {path}")


if __name__ == "__main__":
    os.environ.setdefault("MEMORY_SERVER_LOG_LEVEL", "WARNING")
    raise SystemExit(main())
