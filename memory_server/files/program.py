"""How a hint names this program: the command the person can type to run it again.

Messages say "run `memory-server index`". That is right when `memory-server` on PATH is this program; often it
is not: the clone's `.venv/bin/memory-server` or the plugin's launcher
(`~/.local/share/memory-server/claude-plugin/plugin/bin/memory-server`) was run by its path, PATH has no
`memory-server` (a new `~/.local/bin` counts only from the next login), or another package's `memory-server`
comes first. So where a message leaves the program (the command line's errors, the tools' errors, the hooks'
stderr), `with_program` writes each "`memory-server ..." as the path of the running program whenever PATH
would not run that same file.

The running program is the plugin's launcher when it started us (it sets PROGRAM_ENV to its own path), else
the `memory-server` script this process was started as (`sys.argv[0]`), else, under `python -m memory_server`,
the script of this installation when there is one.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

NAME = "memory-server"
PROGRAM_ENV = "MEMORY_SERVER_PROGRAM"  # set by the plugin's launcher (plugin/bin/memory-server) to its own path
_COMMAND = re.compile(r"`memory-server(?= )")  # a command in a hint: "`memory-server index ...`"


def _is_script(path: Path) -> bool:
    return path.name in (NAME, f"{NAME}.exe") and path.is_file()


def running_program() -> Path | None:
    """The file the person ran to start this process, when it is a `memory-server` program; else None."""
    launcher = os.environ.get(PROGRAM_ENV)
    if launcher and Path(launcher).is_file():
        return Path(launcher).absolute()
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and _is_script(started):
        return started.absolute()
    if started is not None and started.name == "__main__.py" and started.parent.name == "memory_server":
        beside = Path(sysconfig.get_path("scripts")) / (f"{NAME}.exe" if os.name == "nt" else NAME)
        return beside.absolute() if beside.is_file() else None
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def shown(path: Path) -> str:
    """A path as a person types it in a shell: under the home folder as `~/...`, quoted where needed."""
    home = Path.home()
    if home == Path(home.anchor) or not path.is_relative_to(home):
        return shlex.quote(str(path))
    return "~/" + shlex.quote(path.relative_to(home).as_posix())


def program_command() -> str:
    """`memory-server` when that is what PATH runs, else the path of the running program (as typed in a shell)."""
    running = running_program()
    if running is None:
        return NAME
    on_path = shutil.which(NAME)
    if on_path is not None and _same_file(Path(on_path), running):
        return NAME
    return shown(running)


def with_program(message: str) -> str:
    """`message` with every "`memory-server ..." command written as the program the person ran."""
    if "`memory-server " not in message:
        return message
    command = program_command()
    return message if command == NAME else _COMMAND.sub(lambda _m: "`" + command, message)
