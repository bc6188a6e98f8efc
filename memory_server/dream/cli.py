"""`memory-server dream status | run | show | apply | reject`: the command-line side of /dream.

Wire into the main parser with `configure(parser)` and `dispatch(args, root)`, or run standalone:
`python -m memory_server.dream.cli --root DIR run`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_server.errors import MemoryServerError


def _hunks(text: str) -> list[int]:
    try:
        numbers = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--hunks takes numbers separated by commas, like 1,3; got {text!r}") from None
    if not numbers or any(n < 1 for n in numbers):
        raise argparse.ArgumentTypeError("--hunks takes hunk numbers from 1, separated by commas")
    return numbers


def configure(parser: argparse.ArgumentParser, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Add the dream sub-commands to `parser` (the `dream` command's own parser). `parents` are given to each
    sub-command (pass the one holding --root, so `memory-server dream run --root DIR` works)."""
    sub = parser.add_subparsers(dest="dream_command", metavar="ACTION", required=True)

    def add(name: str, help: str, description: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description, parents=list(parents))
        return p

    p = add("status", "is a dream due, and why",
            "Whether a dream is due, and why; sessions waiting; proposals with hunks left to review.")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p = add("run", "one consolidation pass: write a proposal",
            "Read the sessions no dream has processed, and write dreams/<id>/proposal.diff and REPORT.md. Never "
            "changes topics/, sessions/ or MEMORY.md. One at a time: a second run waits briefly, then stops.")
    p.add_argument("--redo", metavar="ID", help="read the sessions of proposal ID again (after its targets changed)")
    p.add_argument("--keyword-only", action="store_true", help="match topics by keywords only (no embedding model)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p = add("show", "show a proposal",
            "Show a proposal (default: the newest with hunks to review): its hunks, whether it still applies, "
            "and its diff.")
    p.add_argument("id", nargs="?", help="proposal id (a folder name under dreams/)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p = add("apply", "apply a proposal to topics/ and MEMORY.md",
            "Apply the hunks of a proposal to topics/ and MEMORY.md, all or nothing. Refuses when a target "
            "changed since the proposal was made. Hunks that belong together are applied together.")
    p.add_argument("id", help="proposal id (a folder name under dreams/)")
    p.add_argument("--hunks", type=_hunks, metavar="N,M", help="only these hunks (default: every pending one)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p = add("reject", "reject hunks of a proposal (never proposed again)",
            "Reject the hunks of a proposal; their changes are remembered and never proposed again. Hunks "
            "that belong together are rejected together.")
    p.add_argument("id", help="proposal id (a folder name under dreams/)")
    p.add_argument("--hunks", type=_hunks, metavar="N,M", help="only these hunks (default: every pending one)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def dispatch(args: argparse.Namespace, root: str | os.PathLike[str]) -> int:
    """Run the dream sub-command in `args` on `root`; MemoryServerError propagates (the caller prints it)."""
    from memory_server.dream.review import apply_proposal, dream_status, reject_proposal, show_proposal
    from memory_server.dream.run import run_dream

    action = args.dream_command
    if action == "status":
        status = dream_status(root)
        if args.json:
            _print_json(status)
            return 0
        print(status["reason"])
        print(f"sessions waiting: {status['unprocessed_sessions']}; last dream: {status['last_dream_utc']}")
        for p in status["proposals_to_review"]:
            print(f"to review: {p['id']} (hunks {', '.join(map(str, p['pending_hunks']))}): memory-server dream show {p['id']}")
        return 0
    if action == "run":
        result = run_dream(root, redo=args.redo, semantic=not args.keyword_only)
        if args.json:
            _print_json({"id": result.id, "folder": result.folder, "sessions": result.sessions,
                         "hunks": result.hunks, "files": result.files, "message": result.message})
        else:
            print(result.message)
        return 0
    if action == "show":
        info = show_proposal(root, args.id)
        if args.json:
            _print_json(info)
            return 0
        print(f"proposal {info['id']} ({info['status']}, made {info['created_utc']})")
        print(f"report: {info['report']}")
        if info["diff"]:
            print(f"diff: {info['diff']}")
        for h in info["hunks"]:
            print(f"  hunk {h['n']} [{h['status']}] {h['path']}: {h['summary']}")
        print(f"check: {info['check']}")
        if info["diff_text"]:
            print()
            sys.stdout.write(info["diff_text"])
        return 0
    apply = action == "apply"
    result = (apply_proposal if apply else reject_proposal)(root, args.id, args.hunks)
    if args.json:
        _print_json(result)
        return 0
    if result["added"]:
        print(f"also {'applying' if apply else 'rejecting'} hunk(s) {', '.join(map(str, result['added']))}: "
              "they belong to the same change")
    done = ", ".join(map(str, result["hunks"]))
    if apply:
        print(f"applied hunk(s) {done} of {result['id']} to {', '.join(result['files'])}")
    else:
        print(f"rejected hunk(s) {done} of {result['id']}; they will not be proposed again")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory-server dream", description="The /dream consolidation pass and its review.")
    parser.add_argument("--root", help="memory root (default: $MEMORY_ROOT, else the current folder)")
    configure(parser)
    args = parser.parse_args(argv)
    root = Path(args.root or os.environ.get("MEMORY_ROOT") or os.getcwd()).expanduser()
    try:
        return dispatch(args, root)
    except MemoryServerError as exc:
        print(f"memory-server: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
