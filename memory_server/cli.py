"""The `memory-server` command line: one click command tree. `memory-server COMMAND --help` documents each.

    memory-server serve | index | search | status | compress | keep | init
    memory-server hook session-start | session-end | pre-compact     (commands/hook.py)
    memory-server dream status | run | show | apply | reject         (commands/dream.py)
    memory-server plugin install | uninstall                         (commands/claude.py)
    memory-server hooks install | uninstall                          (commands/claude.py)

The only ways in are the `memory-server` script and `python -m memory_server`. The memory root comes from
--root, else the MEMORY_ROOT environment variable, else CLAUDE_PROJECT_DIR, else the current folder (or the
nearest memory root above it, as git finds its repository; `init` always takes the current folder). Errors go
to stderr in one line with what to do about them, and exit with status 2 (commands/common.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from memory_server import __version__
from memory_server.commands.claude import hooks, plugin
from memory_server.commands.common import (
    StageProgress,
    common_options,
    echo_json,
    open_memory,
    root_path,
    run,
)
from memory_server.commands.dream import dream
from memory_server.commands.hook import hook
from memory_server.commands.keep import keep
from memory_server.files.program import with_program
from memory_server.files.root import LAYERS
from memory_server.parse.text import as_data

if TYPE_CHECKING:
    from memory_server.sessions.compression import CompressReport
    from memory_server.tool_results import Status

log = logging.getLogger("memory_server.cli")


@click.group(
    help="Long-term memory for coding agents: Markdown topics and session summaries, searched over MCP with "
    "SQLite FTS5 and ChromaDB.",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.version_option(__version__, "--version", prog_name="memory-server", message="%(prog)s %(version)s")
@common_options
def cli() -> None:
    pass


cli.add_command(hook)
cli.add_command(dream)
cli.add_command(plugin)
cli.add_command(hooks)
cli.add_command(keep)


@cli.command(
    help="Run the MCP server on stdio. Indexes in the background at start, then watches topics/, sessions/ and "
    "MEMORY.md. Register it with: claude mcp add memory -- memory-server serve --root DIR",
    short_help="run the MCP server on stdio",
)
@click.option(
    "--dream-tools/--no-dream-tools",
    default=True,
    show_default=True,
    help="list the dream tools and the dream prompt, for clients without a shell (the Claude Code plugin turns "
    "them off: its /dream skill runs the command line)",
)
@common_options
def serve(dream_tools: bool) -> None:
    from memory_server.server import serve_root

    serve_root(root_path(), dream_tools=dream_tools)


@cli.command(
    help="Bring the keyword (FTS5) and semantic (Chroma) indices up to date with the files; only what changed "
    "is read again. --rebuild starts from nothing (cached embeddings are reused; those of text no file holds "
    "any more are dropped).",
    short_help="bring the indices up to date",
)
@click.option("--rebuild", is_flag=True, help="rebuild the indices from the files")
@click.option("--keyword-only", is_flag=True, help="update only the keyword index (no model)")
@click.option(
    "--verify", is_flag=True, help="also read files whose size and time look unchanged, and re-index those that changed"
)
@click.option(
    "--wait", type=click.FloatRange(min=0), default=600.0, show_default=True, help="seconds to wait for another writer"
)
@common_options
def index(rebuild: bool, keyword_only: bool, verify: bool, wait: float) -> None:
    progress = StageProgress()
    progress("opening the index", 0, 0)  # at once: loading the libraries below takes a few seconds
    with open_memory(keyword_only=keyword_only) as memory:
        try:
            report = memory.index(rebuild=rebuild, progress=progress, timeout=wait, verify=verify)
        except KeyboardInterrupt:
            progress.close()
            again = with_program("Run `memory-server index` again to go on from there.")
            click.echo(f"interrupted: {memory.index_kept()}. {again}", err=True)
            raise click.Abort() from None
        finally:
            progress.close()
    click.echo(report.summary())
    for rel in report.skipped:
        click.echo(f"skipped: {as_data(rel)}", err=True)


@cli.command(help="Run the same search the MCP tools run.", short_help="search the memory")
@click.argument("query")
@click.option("--exact", is_flag=True, help="literal search (search_exact) instead of search_memory")
@click.option("-k", "--k", "k", type=int, default=None, help="number of hits")
@click.option("--layer", "layers", multiple=True, type=click.Choice(LAYERS), help="limit to a layer (repeatable)")
@click.option("--after", metavar="YYYY-MM-DD", help="only hits dated on or after this day")
@click.option("--before", metavar="YYYY-MM-DD", help="only hits dated on or before this day")
@click.option("--json", "as_json", is_flag=True, help="print the hits as JSON")
@common_options
def search(
    query: str,
    exact: bool,
    k: int | None,
    layers: tuple[str, ...],
    after: str | None,
    before: str | None,
    as_json: bool,
) -> None:
    chosen = list(layers) or None
    with open_memory(keyword_only=exact) as memory:
        if exact:
            hits, mode = memory.search_exact(query, k, chosen, after, before), "exact"
            note = memory.search_note("keyword", found=bool(hits), semantic=False)
        else:
            hits, mode = memory.search_memory(query, k, chosen, after, before)
            note = memory.search_note(mode, found=bool(hits))
    if as_json:
        echo_json({"hits": [h.to_dict() for h in hits], "mode": mode, **({"note": note} if note else {})})
        return
    if note:  # why the answer may be incomplete (never indexed, semantic index not built yet)
        click.echo(f"note: {as_data(with_program(note))}", err=True)
    if not hits:
        click.echo("no hits")
    for h in hits:  # file names and text are data: no terminal escape or line break from a file gets through
        where = f"{as_data(h.path)}:{h.start_line}-{h.end_line}"
        label = f" {h.match}" if h.match else ""
        heading = f" > {as_data(h.heading)}" if h.heading else ""
        click.echo(f"{where}  [{h.layer}{label}] {h.score:.4f}  {as_data(h.title)}{heading}")
        for line in h.text.splitlines():
            click.echo(f"    {as_data(line)}")


@cli.command(
    help="What memory_status returns: counts, index freshness and problems.",
    short_help="show counts, index freshness and problems",
)
@click.option("--json", "as_json", is_flag=True, help="print as JSON")
@common_options
def status(as_json: bool) -> None:
    with open_memory() as memory:
        info = memory.status()
    if as_json:
        echo_json(info.model_dump(mode="json", exclude_none=True))
        return
    click.echo(f"root: {as_data(info.root)}")
    layers = ", ".join(f"{layer} {n}" for layer, n in info.files_by_layer.items())
    click.echo(f"files: {info.files}{f' ({layers})' if layers else ''}  chunks: {info.chunks}")
    kw = info.keyword_index
    click.echo(f"keyword index: {'up to date' if kw.fresh else str(kw.pending_count) + ' files pending'}")
    sem = info.semantic_index
    late = f", late interaction on ({sem.token_vectors} token vectors)" if sem.late_interaction else ""
    click.echo(f"semantic index: {sem.backend}, {sem.pending_files} files pending, model {sem.model}{late}")
    for p in info.problem_files:  # already quoted as data by status
        click.echo(f"{p.status}: {p.path}: {p.reason}")
    queue = info.sessions_queue
    if queue is not None and queue.items:
        for item in queue.items:
            click.echo(f"session {item.state}: {item.transcript}: {item.reason}")
        click.echo(f"  {queue.how}")
    _echo_evidence(info)
    if info.config_error is not None:
        click.echo(f"config_error: {as_data(info.config_error)}")
    for note in info.notes:
        click.echo(f"note: {note}")


def _echo_evidence(info: Status) -> None:
    """The status lines of kept transcripts and Claude Code's auto memory (already quoted as data by status)."""
    kept = info.kept_transcripts
    if kept is not None:
        click.echo(
            f"kept transcripts: {kept.kept} of {kept.transcripts}; Claude Code deletes transcripts after "
            f"{kept.cleanup_period_days} days; {kept.at_risk_count} at risk, {kept.gone_count} gone"
        )
        for item in kept.at_risk:
            click.echo(f"at risk: {item.transcript} ({item.state}, deleted in {item.deleted_in_days} days)")
    auto = info.auto_memory
    if auto is not None:
        click.echo(
            f"Claude Code's auto memory: {auto.folder}: {auto.files} files, "
            f"{auto.past_limit_count} entries past the limit, {auto.orphan_count} orphans"
        )


@cli.command(
    help="Write sessions/compressed/YYYY/<date>-<id>-<slug>.md for each transcript (JSONL), and keep the "
    "transcript (redacted, compressed) in sessions/transcripts/. Never overwrites: an "
    "unchanged transcript is skipped, a transcript that grew gets a continuation file. --all DIR backfills every "
    "transcript of a project folder (e.g. ~/.claude/projects/<project>). --pending compresses the sessions that "
    "wait in the queue (a session end whose compression could not run yet; `status` lists them). One transcript "
    "that fails does not stop the others; one that waits too long for another compression is queued, not lost.",
    short_help="write compressed sessions for Claude Code transcripts",
)
@click.argument("transcripts", nargs=-1, metavar="[TRANSCRIPT.jsonl]...")
@click.option("--all", "all_dir", metavar="DIR", help="compress every transcript under DIR")
@click.option("--pending", is_flag=True, help="compress the sessions waiting in the queue")
@click.option("--automatic", is_flag=True, hidden=True, help="(the hooks' job) skip transcripts that keep failing")
@click.option("--transcript-root", metavar="DIR", help="refuse transcripts outside this folder")
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="seconds to wait for another compression (default 60)",
)
@common_options
def compress(
    transcripts: tuple[str, ...],
    all_dir: str | None,
    pending: bool,
    automatic: bool,
    transcript_root: str | None,
    lock_timeout: float | None,
) -> int:
    from memory_server.files.root import MemoryRoot
    from memory_server.sessions.compress import LOCK_TIMEOUT
    from memory_server.sessions.compression import compress_sessions

    if not all_dir and not transcripts and not pending:
        raise click.UsageError(
            "give a transcript (.jsonl) to compress, --all DIR to backfill a project, or --pending for the queue"
        )
    progress = StageProgress()
    # What Memory.compress calls, without opening the indices: this is the session hooks' background job, which
    # stays light (no model, no Chroma, no settings: a broken memory.yaml never keeps a session from compressing).
    root = MemoryRoot(root_path())
    try:
        report = compress_sessions(
            root,
            transcripts,
            all_in=all_dir,
            pending=pending,
            automatic=automatic,
            transcript_root=transcript_root,
            lock_timeout=LOCK_TIMEOUT if lock_timeout is None else lock_timeout,
            progress=lambda done, total: progress("compressing", done, total),
        )
    finally:
        progress.close()
    for path in report.written:
        click.echo(as_data(root.relpath(path)))
    _say_compress_problems(report)
    if not report.written and report.ok:
        click.echo("nothing new to compress", err=True)
    return 0 if report.ok else 2


def _say_compress_problems(report: CompressReport) -> None:
    for transcript, why in report.queued:
        click.echo(
            f"memory-server: queued {as_data(transcript)}: {why}. The next session hook, the server or "
            "`memory-server compress --pending` compresses it",
            err=True,
        )
    for message in report.errors:
        click.echo(f"memory-server: {as_data(message)}", err=True)
    for item in report.waiting:
        click.echo(f"waiting: {as_data(item.transcript)}: {as_data(item.reason)}", err=True)
    for item in report.failed:
        click.echo(f"failed: {as_data(item.transcript)}: {as_data(item.reason)}", err=True)


@cli.command(
    help="Make a memory root (MEMORY.md, CLAUDE.md, topics/, sessions/compressed/, .gitignore) without replacing "
    "any file that exists. In a project that already has a CLAUDE.md or .gitignore, add what they lack: the "
    "`@MEMORY.md` import and the precedence rule, the .memory/ and .dream-pending lines (and say so). Running it "
    "again changes nothing.",
    short_help="make a memory root",
)
@click.option("--no-edit", is_flag=True, help="change no existing file; print what to add to it instead")
@common_options
def init(no_edit: bool) -> None:
    from memory_server.api import Memory

    done = Memory.init(root_path(upward=False), edit=not no_edit)  # init makes the folder it is run in a root
    root, created, wired = done.root, done.created, done.wired
    if created:
        click.echo(f"created in {root}: {', '.join(created)}")
    for change in wired:
        if change.added:
            click.echo(f"changed {root / change.path}: added {change.why}")
            continue
        why = "--no-edit" if no_edit else "it links outside the memory root"
        click.echo(f"not changed ({why}): add {change.why} to {root / change.path}, these lines:")
        click.echo(change.text, nl=False)
    if not created and not wired:
        click.echo(f"{root} is already a memory root; nothing changed")


def main(argv: Sequence[str] | None = None) -> int:
    """The `memory-server` script and `python -m memory_server`: run one command, return its exit status."""
    return run(cli, argv, "memory-server")
