"""The `memory-server` command line. `memory-server COMMAND --help` documents each command.

The memory root comes from --root, else the MEMORY_ROOT environment variable, else the current folder.
Errors go to stderr with what to do about them, and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_server.errors import MemoryServerError

ROOT_HELP = "memory root (default: $MEMORY_ROOT, else the current folder)"


def root_path(args: argparse.Namespace) -> Path:
    root = getattr(args, "root", None) or os.environ.get("MEMORY_ROOT") or os.getcwd()
    return Path(root).expanduser()


def open_memory(args: argparse.Namespace, **kwargs: Any):
    from memory_server.api import Memory

    return Memory(root_path(args), **kwargs)


class ProgressBar:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        sys.stderr.write(f"\r{stage:<14} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


# -- commands -------------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the MCP server on stdio (what Claude Code starts)."""
    from memory_server.api import Memory
    from memory_server.server import serve

    logging.getLogger().setLevel(logging.INFO)
    memory = Memory.open_lenient(root_path(args))
    log_to_file(memory.root.state_dir / "logs" / "server.log")
    logging.getLogger("memory_server").info("serving %s (pid %d)", memory.root.path, os.getpid())
    serve(memory)
    return 0


SERVER_LOG_MAX_BYTES = 1_000_000


def log_to_file(path: Path) -> None:
    """Also log to `path`: clients hide a server's stderr, and a person debugging needs to see it.

    Several servers may share the file (append mode, one line per write); at start a file over
    SERVER_LOG_MAX_BYTES is moved to `<name>.1` so it never grows without bound.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > SERVER_LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError as exc:
        logging.getLogger("memory_server").warning("cannot write the server log %s: %s", path, exc)
        return
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)


def cmd_index(args: argparse.Namespace) -> int:
    memory = open_memory(args, **({"embedder": False} if args.keyword_only else {}))
    bar = ProgressBar()
    try:
        report = memory.index(rebuild=args.rebuild, progress=bar, timeout=args.wait, verify=args.verify)
    finally:
        bar.close()
        memory.close()
    print(report.summary())
    for rel in report.skipped:
        print(f"skipped: {rel}", file=sys.stderr)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    memory = open_memory(args, **({"embedder": False} if args.exact else {}))
    try:
        layers = args.layer or None
        if args.exact:
            hits, mode = memory.search_exact(args.query, args.k, layers, args.after, args.before), "exact"
        else:
            hits, mode = memory.search_memory(args.query, args.k, layers, args.after, args.before)
    finally:
        memory.close()
    if args.json:
        print(json.dumps({"hits": [h.to_dict() for h in hits], "mode": mode}, ensure_ascii=False, indent=2))
        return 0
    if not hits:
        print("no hits")
    for h in hits:
        where = f"{h.path}:{h.start_line}-{h.end_line}"
        label = f" {h.match}" if h.match else ""
        print(f"{where}  [{h.layer}{label}] {h.score:.4f}  {h.title}{' > ' + h.heading if h.heading else ''}")
        for line in h.text.splitlines():
            print(f"    {line}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    memory = open_memory(args)
    try:
        status = memory.status()
    finally:
        memory.close()
    if args.json:
        print(json.dumps(status, ensure_ascii=False, indent=2))
        return 0
    print(f"root: {status['root']}")
    print(f"files: {status['files']} {status['files_by_layer']}  chunks: {status['chunks']}")
    kw = status["keyword_index"]
    print(f"keyword index: {'up to date' if kw['fresh'] else str(kw['pending_count']) + ' files pending'}")
    sem = status["semantic_index"]
    print(f"semantic index: {sem['backend']}, {sem['pending_files']} files pending, model {sem['model']}")
    for p in status["problem_files"]:
        print(f"{p['status']}: {p['path']}: {p['reason']}")
    for key in ("config_error",):
        if key in status:
            print(f"{key}: {status[key]}")
    for note in status["notes"]:
        print(f"note: {note}")
    return 0


def cmd_dream(args: argparse.Namespace) -> int:
    from memory_server.dream import cli as dream_cli

    return int(dream_cli.dispatch(args, root_path(args)) or 0)


def cmd_init(args: argparse.Namespace) -> int:
    from memory_server.files.scaffold import init_root

    root = root_path(args)
    created = init_root(root)
    if created:
        print(f"created in {root}: {', '.join(created)}")
    else:
        print(f"{root} is already a memory root; nothing changed")
    return 0


def cmd_compress(args: argparse.Namespace) -> int:
    from memory_server.files.store import MemoryRoot
    from memory_server.sessions.compress import compress_all, compress_transcript

    root = MemoryRoot(root_path(args))
    written = []
    if args.all:
        bar = ProgressBar()
        try:
            written = compress_all(Path(args.all).expanduser(), root, progress=lambda d, t: bar("compressing", d, t))
        finally:
            bar.close()
    for transcript in args.transcripts:
        written.extend(compress_transcript(Path(transcript).expanduser(), root))
    if not args.all and not args.transcripts:
        raise MemoryServerError("give a transcript (.jsonl) to compress, or --all DIR to backfill a project")
    for path in written:
        print(root.relpath(path))
    if not written:
        print("nothing new to compress", file=sys.stderr)
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    """Claude Code hook entry point: read the hook's JSON on stdin; never fail the person's session."""
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("hook input is not a JSON object")
    except (ValueError, OSError) as exc:
        print(f"memory-server hook {args.event}: unreadable hook input ({exc}); ignored", file=sys.stderr)
        return 0
    try:
        root = root_path(args)
        if args.event == "session-start":
            from memory_server.dream.start_hook import session_start

            text = session_start(payload, root)
            if text:
                print(text)
            return 0
        from memory_server.files.store import MemoryRoot
        from memory_server.sessions.hooks import pre_compact, session_end

        handler = session_end if args.event == "session-end" else pre_compact
        handler(payload, MemoryRoot(root))
    except Exception as exc:  # a hook must never break the session; say what happened on stderr
        print(f"memory-server hook {args.event}: {exc}", file=sys.stderr)
    return 0


# -- parser ---------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log more")

    parser = argparse.ArgumentParser(
        prog="memory-server",
        description="Long-term memory for coding agents: Markdown topics and session summaries, "
        "searched over MCP with SQLite FTS5 and ChromaDB.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str, description: str | None = None):
        p = sub.add_parser(name, help=help, description=description or help, parents=[common])
        p.set_defaults(func=fn)
        return p

    add(
        "serve",
        cmd_serve,
        "run the MCP server on stdio",
        "Run the MCP server on stdio. Indexes in the background at start, then watches topics/, sessions/ "
        "and MEMORY.md. Register it with: claude mcp add memory -- memory-server serve --root DIR",
    )

    p = add(
        "index",
        cmd_index,
        "bring the indices up to date",
        "Bring the keyword (FTS5) and semantic (Chroma) indices up to date with the files; only what "
        "changed is read again. --rebuild starts from nothing (cached embeddings are reused).",
    )
    p.add_argument("--rebuild", action="store_true", help="rebuild the indices from the files")
    p.add_argument("--keyword-only", action="store_true", help="update only the keyword index (no model)")
    p.add_argument("--verify", action="store_true",
                   help="also read files whose size and time look unchanged, and re-index those that changed")
    p.add_argument("--wait", type=float, default=600.0, help="seconds to wait for another writer (default 600)")

    p = add("search", cmd_search, "search the memory", "Run the same search the MCP tools run.")
    p.add_argument("query", help="what to look for")
    p.add_argument("--exact", action="store_true", help="literal search (search_exact) instead of search_memory")
    p.add_argument("--k", type=int, default=None, help="number of hits")
    p.add_argument("--layer", action="append", choices=["topic", "session", "transcript"], help="limit to a layer")
    p.add_argument("--after", help="only hits dated on or after YYYY-MM-DD")
    p.add_argument("--before", help="only hits dated on or before YYYY-MM-DD")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")

    p = add("status", cmd_status, "show counts, index freshness and problems", "What memory_status returns.")
    p.add_argument("--json", action="store_true", help="print as JSON")

    p = add(
        "compress",
        cmd_compress,
        "write compressed sessions for Claude Code transcripts",
        "Write sessions/compressed/YYYY/<date>-<id>-<slug>.md for each transcript (JSONL). Never overwrites: "
        "an unchanged transcript is skipped, a transcript that grew gets a continuation file. --all DIR "
        "backfills every transcript of a project folder (e.g. ~/.claude/projects/<project>).",
    )
    p.add_argument("transcripts", nargs="*", help="transcript files (.jsonl)")
    p.add_argument("--all", metavar="DIR", help="compress every transcript under DIR")

    p = add(
        "hook",
        cmd_hook,
        "Claude Code hook entry points (read the hook JSON on stdin)",
        "Claude Code hooks. session-start: print a short line when a /dream is due (else nothing). "
        "session-end and pre-compact: compress the session's transcript in a detached background process "
        "and return at once. A hook never fails the session: problems go to stderr, exit status 0.",
    )
    p.add_argument("event", choices=["session-start", "session-end", "pre-compact"])

    p = add(
        "dream",
        cmd_dream,
        "the /dream consolidation pass and its review",
        "Consolidate recent sessions into a reviewable diff against topics/ (never applied by itself). "
        "status: is a dream due and why; run: one pass over the unprocessed sessions; show [ID]: the "
        "proposal and its report; apply ID [--hunks N,M]: apply it (all or nothing); reject ID [--hunks N,M]: "
        "reject it (remembered, not proposed again).",
    )
    from memory_server.dream import cli as dream_cli

    dream_cli.configure(p, parents=[common])

    add(
        "init",
        cmd_init,
        "make a memory root",
        "Make a memory root (MEMORY.md, CLAUDE.md, topics/, sessions/compressed/, .gitignore) without "
        "touching any file that exists.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        stream=sys.stderr,
        format="memory-server: %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except MemoryServerError as exc:
        print(f"memory-server: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
