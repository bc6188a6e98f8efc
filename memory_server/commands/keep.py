"""`memory-server keep`: keep every session's transcript that is not kept yet, before Claude Code deletes it."""

from __future__ import annotations

import click

from memory_server.commands.common import common_options, echo_json, open_memory
from memory_server.parse.text import as_data


@click.command(
    help="Keep a redacted, compressed copy (sessions/transcripts/YYYY/<id>.jsonl.gz) of every transcript a "
    "compressed session names that is not kept to its end yet. Claude Code deletes its transcripts after "
    "cleanupPeriodDays (30 by default); compression keeps each one as it goes, and `status` warns about those "
    "Claude Code deletes within a week that are not kept. Transcripts already gone are listed: only their "
    "summaries remain.",
    short_help="keep every transcript not kept yet",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="seconds to wait for a compression running meanwhile",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@common_options
def keep(lock_timeout: float, as_json: bool) -> int:
    with open_memory(keyword_only=True) as memory:
        report = memory.keep_transcripts(lock_timeout=lock_timeout)
    if as_json:
        echo_json(report.to_dict())
        return 2 if report.failed else 0
    for r in report.kept:
        note = f" ({as_data(r.note)})" if r.note else ""
        click.echo(f"kept {as_data(r.kept or '')}: {r.lines_added} new lines, {r.bytes} bytes{note}")
    for gone in report.gone:
        click.echo(f"gone: {as_data(gone)}: deleted before it was kept; only its summary remains", err=True)
    for r in report.failed:
        click.echo(f"not kept: {as_data(r.transcript)}: {as_data(r.note)}", err=True)
    click.echo(f"{len(report.kept)} kept now, {report.up_to_date} already kept, {len(report.gone)} gone")
    return 2 if report.failed else 0
