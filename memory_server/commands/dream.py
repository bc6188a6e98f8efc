"""`memory-server dream status | gather | propose | run | show | apply | reject | dismiss`: the command-line
side of /dream.

A new sub-command is one more `@dream.command(...)` function here (or `dream.add_command(cmd)` from its
own module), with `@common_options` so it takes --root like the others.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memory_server.commands.common import common_options, echo_json, root_path
from memory_server.errors import RootError
from memory_server.files.program import program_command, shown, with_program
from memory_server.files.root import is_memory_root, not_set_up_message

if TYPE_CHECKING:
    from memory_server.api import Memory
    from memory_server.dream.propose import ProposeResult
    from memory_server.dream.records import ProposalView


def dream_root() -> Path:
    """The memory root every dream command works on; a folder that was never set up is refused (a dream
    there would only say "nothing new", and must write nothing)."""
    path = root_path()
    if path.is_dir() and not is_memory_root(path.resolve()):
        raise RootError(not_set_up_message(path.resolve()))
    return path


def dream_memory(*, lenient: bool = False, keyword_only: bool = True) -> Memory:
    """The Memory whose `dream` the command calls. `lenient`: a broken memory.yaml leaves the defaults in force
    (reviewing a proposal needs none of its settings); `keyword_only=False` keeps the embedding model, which
    places items given without a section by meaning too."""
    from memory_server.api import Memory

    root = dream_root()
    if lenient:
        return Memory.open_lenient(root, keyword_only=keyword_only)
    return Memory(root, keyword_only=keyword_only)


def _numbers(_ctx: click.Context, _param: click.Parameter, text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        numbers = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise click.BadParameter(f"takes numbers separated by commas, like 1,3; got {text!r}") from None
    if not numbers or any(n < 1 for n in numbers):
        raise click.BadParameter("takes numbers from 1, separated by commas")
    return numbers


json_option = click.option("--json", "as_json", is_flag=True, help="print as JSON")
changes_option = click.option(
    "--changes",
    metavar="N,M",
    callback=_numbers,
    help="only these changes, as REPORT.md numbers them (default: every pending one)",
)
hunks_option = click.option("--hunks", metavar="N,M", callback=_numbers, help="only the changes of these hunks")


@click.group(
    "dream",
    help="Consolidate recent sessions into a reviewable diff against topics/ (never applied by itself). "
    "status: is a dream due and why; gather: the evidence pack of the sessions no dream has read; propose "
    "ITEMS.json: verify the agent's items against it and render the proposal; run: a pass without an agent "
    "(repeated errors, knowledge gaps, stale topics); show [ID]: the proposal and its report; apply [ID] "
    "[--changes N,M]: apply it (all or nothing); reject [ID] [--changes N,M]: reject it (remembered, not proposed "
    "again); dismiss [ID]: set a `dream run` proposal aside, its sessions read. ID defaults to the newest proposal "
    "with hunks to review.",
    short_help="the /dream consolidation pass and its review",
)
@common_options
def dream() -> None:
    pass


@dream.command(help="Whether a dream is due, and why; sessions waiting; proposals with hunks left to review.")
@json_option
@common_options
def status(as_json: bool) -> None:
    with dream_memory(lenient=True) as memory:
        info = memory.dream.status()
    if as_json:
        echo_json(info)
        return
    root = shown(memory.root.path)
    for p in info["proposals_to_review"]:  # first: a proposal waiting for the person is what matters most
        hunks = _hunk_list(p["pending_hunks"])
        click.echo(f"to review: {p['id']} ({hunks}): {program_command()} dream show {p['id']} --root {root}")
    click.echo(info["reason"])
    if info["due"]:
        click.echo(with_program(info["clears"]))
    click.echo(
        f"sessions waiting: {info['unprocessed_sessions']}; verified items waiting: {info['waiting_items']}; "
        f"last dream: {info['last_dream_utc']}"
    )


@dream.command(
    help="Write the evidence pack of the sessions no dream has read to dreams/evidence.md (the "
    "person's requests, corrections and answers, commits, failures with their fix, closing replies, and "
    "the topic lines they touch; each with its reference and date, redacted, bounded) and print where "
    "it is and its size. Changes no topic or session."
)
@click.option("--print", "to_stdout", is_flag=True, help="also print the pack itself")
@json_option
@common_options
def gather(to_stdout: bool, as_json: bool) -> None:
    with dream_memory() as memory:
        done = memory.dream.gather()
    if as_json:
        pack = done.pack
        echo_json(
            {
                "path": done.path,
                "sessions": [s.path for s in pack.sessions] if pack else [],
                "tokens": pack.tokens if pack else 0,
                "left_out": pack.left_out if pack else {},
                "waiting": pack.waiting if pack else 0,
                "message": done.message,
            }
        )
        return
    click.echo(done.message)
    if to_stdout and done.pack is not None:
        click.echo()
        click.echo(done.pack.text)


@dream.command(
    help="Verify proposal items (JSON, written after reading `dream gather`'s pack; the schema is in "
    "the /dream skill and `--schema` prints it; `-` reads them from stdin) against the sessions, and "
    "render dreams/<id>/"
    "proposal.diff and REPORT.md. Every quote must be at its reference; a refused item is named with "
    "the reason, and then nothing is written (fix the items and run it again). Never changes topics/."
)
@click.argument("items_file", metavar="ITEMS.json", required=False, type=click.Path(dir_okay=False))
@click.option("--drop-refused", is_flag=True, help="write the proposal from the items that pass, listing the others")
@click.option("--redo", metavar="ID", help="read the sessions of proposal ID again (it is superseded by this one)")
@click.option("--keyword-only", is_flag=True, help="place items without a section by keywords only (no model)")
@click.option("--schema", "show_schema", is_flag=True, help="print the JSON schema of an items file and stop")
@json_option
@common_options
def propose(
    items_file: str | None, drop_refused: bool, redo: str | None, keyword_only: bool, show_schema: bool, as_json: bool
) -> None:
    from memory_server.dream.items import SCHEMA

    if show_schema:
        echo_json(SCHEMA)
        return
    if not items_file:
        raise click.UsageError("give the items file: memory-server dream propose ITEMS.json")
    with dream_memory(keyword_only=keyword_only) as memory:
        path = memory.dream.keep_items(sys.stdin.read()) if items_file == "-" else items_file
        result = memory.dream.propose(path, drop_refused=drop_refused, redo=redo)
    _print_result(result, as_json)
    if result.refusals and result.id is None:
        raise click.exceptions.Exit(1)  # refused: the agent fixes its items and runs it again


def _print_result(result: ProposeResult, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "id": result.id,
                "folder": result.folder,
                "sessions": result.sessions,
                "hunks": result.hunks,
                "files": result.files,
                "refusals": result.refusals,
                "held_back": result.held_back,
                "changes": result.changes,
                "notes": result.notes,
                "warnings": result.warnings,
                "message": result.message,
            }
        )
        return
    click.echo(with_program(result.message))
    for note in result.notes:
        click.echo(f"  note: {note}")
    if result.warnings:
        from memory_server.parse.text import as_data

        for warning in result.warnings:
            click.echo(f"  warning: {as_data(warning, markdown=False)}")
    for refusal in result.refusals:
        click.echo(f"  refused: {refusal}")
    for statement in result.held_back:
        click.echo(f"  waiting for the next proposal: {statement}")


@dream.command(
    help="A pass without an agent over the sessions no dream has read: only what needs no judgement "
    "of meaning (errors repeated in two or more sessions with the fix of one of them, knowledge gaps, "
    "stale topics). Writes dreams/<id>/ and never rewrites a topic line. One at a time: a second run "
    "waits briefly, then stops."
)
@click.option("--redo", metavar="ID", help="read the sessions of proposal ID again (after its targets changed)")
@json_option
@common_options
def run(redo: str | None, as_json: bool) -> None:
    with dream_memory() as memory:
        result = memory.dream.run(redo=redo)
    _print_result(result, as_json)


@dream.command(
    help="Show a proposal (default: the newest with hunks to review): its hunks, whether it still "
    "applies, and its diff."
)
@click.argument("proposal_id", metavar="[ID]", required=False)
@json_option
@common_options
def show(proposal_id: str | None, as_json: bool) -> None:
    with dream_memory(lenient=True) as memory:
        info = memory.dream.show(proposal_id)
    if as_json:
        echo_json(info)
        return
    _print_show(info)


def _hunk_list(numbers: list[int]) -> str:
    """ "hunk 2", "hunks 1, 2" """
    return ("hunk " if len(numbers) == 1 else "hunks ") + ", ".join(map(str, numbers))


def _print_show(info: ProposalView) -> None:
    from memory_server.parse.text import as_data

    click.echo(f"proposal {info['id']} ({info['status']}, made {info['created_utc']})")
    click.echo(f"report: {info['report']}  (each change's record, later mentions and warnings)")
    click.echo(f"second reading: {info['second_reading']}")
    if info["diff"]:
        click.echo(f"diff: {info['diff']}")
    for c in info["changes"]:
        reading = c.get("reading")
        verdict = f"; second reading: {reading['verdict']}" if reading else ""
        statement = as_data(str(c["statement"]), markdown=False)[:200]  # a terminal: only controls matter
        click.echo(f"  change {c['n']} [{c['status']}{verdict}] ({_hunk_list(c['hunks'])}): {statement}")
    click.echo(f"check: {info['check']}")
    if info["diff_text"]:
        click.echo()
        click.echo(as_data(info["diff_text"], multiline=True, markdown=False), nl=False)


def _review(
    action: str, proposal_id: str | None, changes: list[int] | None, hunks: list[int] | None, as_json: bool
) -> None:
    apply = action == "apply"
    with dream_memory(lenient=True) as memory:
        review = memory.dream.apply if apply else memory.dream.reject
        result = review(proposal_id, changes=changes, hunks=hunks)
    if as_json:
        echo_json(result)
        return
    done = ", ".join(map(str, result["changes"]))
    if apply:
        click.echo(f"applied change(s) {done} of {result['id']} to {', '.join(result['files'])}")
    else:
        click.echo(
            f"rejected change(s) {done} of {result['id']}; neither they nor items close to them are proposed again"
        )
    if result["reviewed"]:
        click.echo(_reviewed_line(result["id"], len(result["reviewed"])))


def _reviewed_line(proposal_id: str, sessions: int) -> str:
    return (
        f"`dream run` proposal {proposal_id} is reviewed: its {sessions} session(s) count as read (the agent's /dream "
        "skips them, and the dream-due note clears unless newer sessions keep it due)"
    )


@dream.command(
    help="Apply the changes of a proposal (default: the newest with changes to review; every pending change, "
    "or those --changes names) to topics/ and MEMORY.md, all or nothing. Refuses when a target changed since "
    "the proposal was made, and keeps a person's save that lands while it applies. A change the second "
    "reading withheld is applied only when named."
)
@click.argument("proposal_id", metavar="[ID]", required=False)
@changes_option
@hunks_option
@json_option
@common_options
def apply(proposal_id: str | None, changes: list[int] | None, hunks: list[int] | None, as_json: bool) -> None:
    _review("apply", proposal_id, changes, hunks, as_json)


@dream.command(
    help="Reject the changes of a proposal (default: the newest with changes to review; every pending change, "
    "or those --changes names); they are remembered, and neither they nor items close to them are proposed "
    "again."
)
@click.argument("proposal_id", metavar="[ID]", required=False)
@changes_option
@hunks_option
@json_option
@common_options
def reject(proposal_id: str | None, changes: list[int] | None, hunks: list[int] | None, as_json: bool) -> None:
    _review("reject", proposal_id, changes, hunks, as_json)


@dream.command(
    help="Set a `dream run` proposal aside (default: the newest over sessions no dream has processed): its "
    "sessions count as read, as when every change of it is applied or rejected, so the agent's /dream skips "
    "them and the dream-due note clears. Changes it still proposes stay unapplied, and are not remembered as "
    "rejected. (A `dream run` that is only proposed leaves its sessions for the agent's /dream.)"
)
@click.argument("proposal_id", metavar="[ID]", required=False)
@json_option
@common_options
def dismiss(proposal_id: str | None, as_json: bool) -> None:
    with dream_memory(lenient=True) as memory:
        result = memory.dream.dismiss(proposal_id)
    if as_json:
        echo_json(result)
        return
    if result["already"]:
        click.echo(f"`dream run` proposal {result['id']} was already reviewed; nothing changed")
        return
    click.echo(_reviewed_line(result["id"], len(result["reviewed"])))
    if result["left"]:
        left = ", ".join(map(str, result["left"]))
        click.echo(f"change(s) {left} stay unapplied (not remembered as rejected: a later pass may propose them)")


@dream.command(
    help="Record a second reader's verdicts on a proposal's changes (VERDICTS.json, or - for stdin: "
    '{"verdicts": [{"change": 1, "verdict": "accept" or "reject", "reason": "..."}]}). A change the reader '
    "rejects is withheld, with the reason, in REPORT.md and `show`. Never changes topics/."
)
@click.argument("verdicts_file", metavar="VERDICTS.json")
@click.option("--id", "proposal_id", metavar="ID", help="the proposal (default: the newest with changes to review)")
@json_option
@common_options
def verdicts(verdicts_file: str, proposal_id: str | None, as_json: bool) -> None:
    import json

    text = sys.stdin.read() if verdicts_file == "-" else Path(verdicts_file).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise click.UsageError(f"{verdicts_file} is not JSON ({exc})") from None
    with dream_memory(lenient=True) as memory:
        result = memory.dream.verdicts(data, proposal_id)
    if as_json:
        echo_json(result)
        return
    click.echo(f"proposal {result['id']}: second reading {result['summary']}")


@dream.command(
    help="Print the turns around a reference (transcript:<id>:LINE, sessions/...md:LINE or "
    "auto-memory:<file>:LINE) as the program "
    "reads them: who spoke each one, its kind, date and text, quoted and escaped. For checking an item "
    "against the record."
)
@click.argument("ref", metavar="REF")
@click.option("--around", default=6, show_default=True, type=click.IntRange(0, 200), help="turns before and after")
@common_options
def record(ref: str, around: int) -> None:
    with dream_memory() as memory:
        text = memory.dream.record(ref, around)
    click.echo(text, nl=False)
