"""`memory-server dream status | run | show | apply | reject`: the command-line side of /dream.

A new sub-command is one more `@dream.command(...)` function here (or `dream.add_command(cmd)` from its
own module), with `@common_options` so it takes --root like the others.
"""

from __future__ import annotations

import click

from memory_server.commands.common import common_options, echo_json, root_path

ID_HELP = "proposal id (a folder name under dreams/)"


def _hunks(_ctx: click.Context, _param: click.Parameter, text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        numbers = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise click.BadParameter(f"takes numbers separated by commas, like 1,3; got {text!r}") from None
    if not numbers or any(n < 1 for n in numbers):
        raise click.BadParameter("takes hunk numbers from 1, separated by commas")
    return numbers


json_option = click.option("--json", "as_json", is_flag=True, help="print as JSON")
hunks_option = click.option("--hunks", metavar="N,M", callback=_hunks,
                            help="only these hunks (default: every pending one)")


@click.group(
    "dream",
    help="Consolidate recent sessions into a reviewable diff against topics/ (never applied by itself). "
    "status: is a dream due and why; run: one pass over the unprocessed sessions; show [ID]: the proposal "
    "and its report; apply ID [--hunks N,M]: apply it (all or nothing); reject ID [--hunks N,M]: reject it "
    "(remembered, not proposed again).",
    short_help="the /dream consolidation pass and its review",
)
@common_options
def dream() -> None:
    pass


@dream.command(help="Whether a dream is due, and why; sessions waiting; proposals with hunks left to review.")
@json_option
@common_options
def status(as_json: bool) -> None:
    from memory_server.dream.review import dream_status

    info = dream_status(root_path())
    if as_json:
        echo_json(info)
        return
    click.echo(info["reason"])
    click.echo(f"sessions waiting: {info['unprocessed_sessions']}; last dream: {info['last_dream_utc']}")
    for p in info["proposals_to_review"]:
        hunks = ", ".join(map(str, p["pending_hunks"]))
        click.echo(f"to review: {p['id']} (hunks {hunks}): memory-server dream show {p['id']}")


@dream.command(help="Read the sessions no dream has processed, and write dreams/<id>/proposal.diff and REPORT.md. "
               "Never changes topics/, sessions/ or MEMORY.md. One at a time: a second run waits briefly, then "
               "stops.")
@click.option("--redo", metavar="ID", help="read the sessions of proposal ID again (after its targets changed)")
@click.option("--keyword-only", is_flag=True, help="match topics by keywords only (no embedding model)")
@json_option
@common_options
def run(redo: str | None, keyword_only: bool, as_json: bool) -> None:
    from memory_server.dream.run import run_dream

    result = run_dream(root_path(), redo=redo, semantic=not keyword_only)
    if as_json:
        echo_json({"id": result.id, "folder": result.folder, "sessions": result.sessions,
                   "hunks": result.hunks, "files": result.files, "message": result.message})
    else:
        click.echo(result.message)


@dream.command(help="Show a proposal (default: the newest with hunks to review): its hunks, whether it still "
               "applies, and its diff.")
@click.argument("proposal_id", metavar="[ID]", required=False)
@json_option
@common_options
def show(proposal_id: str | None, as_json: bool) -> None:
    from memory_server.dream.review import show_proposal

    info = show_proposal(root_path(), proposal_id)
    if as_json:
        echo_json(info)
        return
    click.echo(f"proposal {info['id']} ({info['status']}, made {info['created_utc']})")
    click.echo(f"report: {info['report']}")
    if info["diff"]:
        click.echo(f"diff: {info['diff']}")
    for h in info["hunks"]:
        click.echo(f"  hunk {h['n']} [{h['status']}] {h['path']}: {h['summary']}")
    click.echo(f"check: {info['check']}")
    if info["diff_text"]:
        click.echo()
        click.echo(info["diff_text"], nl=False)


def _review(action: str, proposal_id: str, hunks: list[int] | None, as_json: bool) -> None:
    from memory_server.dream.review import apply_proposal, reject_proposal

    apply = action == "apply"
    result = (apply_proposal if apply else reject_proposal)(root_path(), proposal_id, hunks)
    if as_json:
        echo_json(result)
        return
    if result["added"]:
        added = ", ".join(map(str, result["added"]))
        click.echo(f"also {'applying' if apply else 'rejecting'} hunk(s) {added}: they belong to the same change")
    done = ", ".join(map(str, result["hunks"]))
    if apply:
        click.echo(f"applied hunk(s) {done} of {result['id']} to {', '.join(result['files'])}")
    else:
        click.echo(f"rejected hunk(s) {done} of {result['id']}; they will not be proposed again")


@dream.command(help="Apply the hunks of a proposal to topics/ and MEMORY.md, all or nothing. Refuses when a target "
               "changed since the proposal was made. Hunks that belong together are applied together.")
@click.argument("proposal_id", metavar="ID")
@hunks_option
@json_option
@common_options
def apply(proposal_id: str, hunks: list[int] | None, as_json: bool) -> None:
    _review("apply", proposal_id, hunks, as_json)


@dream.command(help="Reject the hunks of a proposal; their changes are remembered and never proposed again. Hunks "
               "that belong together are rejected together.")
@click.argument("proposal_id", metavar="ID")
@hunks_option
@json_option
@common_options
def reject(proposal_id: str, hunks: list[int] | None, as_json: bool) -> None:
    _review("reject", proposal_id, hunks, as_json)
