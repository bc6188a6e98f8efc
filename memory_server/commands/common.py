"""What every `memory-server` command shares: --root and -v, progress bars, JSON output, and the exit.

The memory root comes from --root (before or after the command name), else the MEMORY_ROOT environment
variable, else CLAUDE_PROJECT_DIR (Claude Code sets it for the servers, hooks and commands it starts: the
project), else the current folder, or the nearest memory root above it (by its MEMORY.md or memory.yaml, said
on stderr; `init` takes the current folder). The root is resolved here, in Python, never by a shell's syntax.
Errors end the command with one line on stderr saying what to do (a command it names is written as the
program the person ran: files/program.py), and exit status 2: every
MemoryServerError, an OSError (a full disk, a read-only file system, a permission), a SQLite error and a
usage error alike; anything else too (a bug, a panic in a native library), with its traceback only under
-v. No command prints a traceback otherwise. A reader that closes the pipe early (`| head`) ends it quietly.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memory_server.errors import MemoryServerError
from memory_server.files.program import with_program
from memory_server.files.root import enclosing_root, is_memory_root

if TYPE_CHECKING:
    from memory_server.api import Memory

ROOT_HELP = "memory root (default: $MEMORY_ROOT, else Claude Code's project directory, else the current folder)"
ERROR_STATUS = 2
INTERRUPTED_STATUS = 130
LOG_FORMAT = "memory-server: %(levelname)s %(name)s: %(message)s"
VERBOSE_LOG_FORMAT = "%(asctime)s memory-server %(process)d %(levelname)s %(name)s: %(message)s"
_META_ROOT = "memory_server.root"
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"  # set by Claude Code for what it starts: the project directory

log = logging.getLogger("memory_server.cli")

F = TypeVar("F", bound=Callable[..., Any])


# -- options every command takes ----------------------------------------------------------------------


def _remember_root(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value:  # given after the command name, it wins over one given before
        ctx.find_root().meta[_META_ROOT] = value


def _set_verbose(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        root_logger = logging.getLogger()
        root_logger.setLevel(logging.INFO)
        for handler in root_logger.handlers:
            handler.setFormatter(logging.Formatter(VERBOSE_LOG_FORMAT))


def common_options(f: F) -> F:
    """--root and -v/--verbose, accepted by the group and by every command."""
    f = click.option(
        "-v", "--verbose", is_flag=True, expose_value=False, callback=_set_verbose, help="log more (to stderr)"
    )(f)
    f = click.option("--root", metavar="DIR", expose_value=False, callback=_remember_root, help=ROOT_HELP)(f)
    return f


def given_root(ctx: click.Context | None = None) -> str | None:
    """--root, else $MEMORY_ROOT, else $CLAUDE_PROJECT_DIR: the root someone chose, or None."""
    ctx = ctx or click.get_current_context()
    chosen = ctx.find_root().meta.get(_META_ROOT) or os.environ.get("MEMORY_ROOT") or os.environ.get(PROJECT_DIR_ENV)
    return str(chosen) if chosen else None


def root_path(ctx: click.Context | None = None, *, upward: bool = True) -> Path:
    """--root, else $MEMORY_ROOT, else $CLAUDE_PROJECT_DIR, else the current folder, or (`upward`) when it is not
    a memory root, the nearest memory root above it (said on stderr)."""
    given = given_root(ctx)
    if given:
        return Path(given).expanduser()
    here = Path(os.getcwd())
    if not upward or is_memory_root(here):
        return here
    found = enclosing_root(here)
    if found is None:
        return here
    click.echo(f"using the memory root {found} (this folder is inside it)", err=True)
    return found


def explicit_root(ctx: click.Context | None = None) -> Path | None:
    """The --root given on the command line, if any (not the environment's)."""
    ctx = ctx or click.get_current_context()
    given = ctx.find_root().meta.get(_META_ROOT)
    return Path(given).expanduser() if given else None


def open_memory(*, keyword_only: bool = False) -> Memory:
    """The Memory at the command's root (close it with `with`)."""
    from memory_server.api import Memory

    return Memory(root_path(), keyword_only=keyword_only)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


# -- progress -------------------------------------------------------------------------------------------


class StageProgress:
    """One status line on stderr, rewritten in place: what the command is doing and how far it got
    ("reading files 120/340", "embedding 512/2,000", "writing 512/2,000"), with the seconds since it
    started; at most ten updates a second, and only on a terminal.

    Called as progress(stage, done, total), the signature Memory.index reports with; a total of 0 shows
    the stage alone ("opening the index").
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.stage: str | None = None
        self.shown = ""
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if stage == self.stage and now - self.last < 0.1 and done < total:
            return
        self.stage, self.last = stage, now
        count = f" {done:,}/{total:,}" if total > 0 else ""
        text = f"{stage}{count}  ({now - self.started:.0f} s)"
        sys.stderr.write("\r" + text + " " * max(0, len(self.shown) - len(text)))
        sys.stderr.flush()
        self.shown = text

    def close(self) -> None:
        """End the status line (the next output starts on a line of its own)."""
        if self.enabled and self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.shown, self.stage = "", None


# -- the exit -------------------------------------------------------------------------------------------

_OS_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space, then run the command again",
    errno.EDQUOT: "the disk quota is used up: free some space, then run the command again",
    errno.EROFS: "the file system is read-only: run the command where the memory root can be written",
    errno.EACCES: "check the owner and permissions of that path",
    errno.EPERM: "check the owner and permissions of that path",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "check the path",
    errno.EISDIR: "give a file, not a folder",
}


def describe_os_error(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    advice = _OS_ADVICE.get(exc.errno or 0, "check the path and the disk, then run the command again")
    return f"{reason}{where}; {advice}"


def describe_sqlite_error(exc: Exception) -> str:
    text = str(exc)
    if "full" in text:
        return f"the index database could not be written ({text}); the disk is full: free some space, then run again"
    if "readonly" in text or "read-only" in text:
        return (
            f"the index database could not be written ({text}); the memory root's .memory/ folder is "
            "read-only: run the command where it can be written"
        )
    return f"the index database failed ({text}); run `memory-server index --rebuild` to remake it from the files"


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's last flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _unexpected(prog_name: str, exc: BaseException) -> int:
    """A failure nobody planned for: one line saying what and what to do; the traceback only with -v."""
    log.debug("unexpected failure", exc_info=exc)
    click.echo(
        f"{prog_name}: unexpected {type(exc).__name__}: {str(exc)[:300]}. This is a bug: run the command again "
        "with -v for the details, and report them",
        err=True,
    )
    return ERROR_STATUS


def run(group: click.Group, argv: Sequence[str] | None, prog_name: str) -> int:
    """Run the command line and turn every way it can end into an exit status (see the module docstring)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format=LOG_FORMAT)
    try:
        try:
            result = group.main(
                args=list(argv) if argv is not None else None, prog_name=prog_name, standalone_mode=False
            )
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except (SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a panic in a library's native core (pyo3's PanicException) included
            return exit_status(exc, prog_name)
    except BrokenPipeError:
        _quiet_stdout()  # whoever read our output stopped reading (`| head`): nothing is wrong
        return 1
    return result if isinstance(result, int) else 0


def exit_status(exc: BaseException, prog_name: str) -> int:
    """The exit status for a command that ended with `exc`, after saying on stderr (in one line) what to do."""
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, click.ClickException):
        exc.show()
        return ERROR_STATUS if exc.exit_code == 2 else exc.exit_code
    if isinstance(exc, click.Abort | KeyboardInterrupt):
        return INTERRUPTED_STATUS
    said = _known_failure(exc)
    if said is None:
        return _unexpected(prog_name, exc)
    click.echo(f"{prog_name}: {with_program(said)}", err=True)
    return ERROR_STATUS


def _known_failure(exc: BaseException) -> str | None:
    """What to say about a failure the program knows (ours, the file system's, SQLite's), else None."""
    import sqlite3

    if isinstance(exc, MemoryServerError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    if isinstance(exc, sqlite3.Error):
        return describe_sqlite_error(exc)
    return None
