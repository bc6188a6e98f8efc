"""Guards on the stdio channel between the client and the MCP SDK.

- `exit_on_hangup`: the SDK finishes requests in flight before it returns, and a request can wait (for a
  lock another process holds, say). A client that closed stdin is gone, so a watchdog polls a duplicate of
  the stdin pipe for the hang-up, stops background work at once, and ends the process if it is still alive
  EXIT_GRACE_SECONDS later. The server and everything it started are gone within two seconds.
- `repair_stdin`: the SDK's strict JSON parser drops a line it cannot parse without answering it, so the
  client waits forever. Lines with a lone surrogate escape (valid JSON, not valid Unicode) or an integer
  too long to parse are made answerable on the way in.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 1.0


def exit_on_hangup(on_hangup: Callable[[], None]) -> None:
    """When the client hangs up stdin, call `on_hangup` (stop background work), then end the process if it
    is still alive EXIT_GRACE_SECONDS later."""
    try:
        fd = os.dup(0)  # the SDK points fd 0 at /dev/null while it serves; keep our own view of the pipe
        mode = os.fstat(fd).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        os.close(fd)  # a file or terminal on stdin: there is no hang-up to see
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0))
        while True:
            events = poller.poll()
            if any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0))
                   for _, ev in events):
                break
        on_hangup()
        time.sleep(EXIT_GRACE_SECONDS)
        log.warning("the client closed stdin %.1fs ago and a request is still running; exiting now",
                    EXIT_GRACE_SECONDS)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(0)

    threading.Thread(target=watch, name="memory-hangup", daemon=True).start()


# A JSON escape for half of a UTF-16 surrogate pair, and an integer too long for the SDK's JSON parser.
_NEEDS_REPAIR = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[0-9]{4000}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def repair_line(line: bytes) -> bytes:
    """A protocol line the SDK's strict JSON parser would drop without an answer, made answerable.

    Lone surrogate escapes ("\\ud800", valid JSON that is not valid Unicode) become U+FFFD, as a search does
    with them anyway; integers too long to parse become strings, which the tool then refuses with a clear
    argument error. Any other line passes through untouched (cheaply: one regex scan)."""
    if not _NEEDS_REPAIR.search(line):
        return line
    try:
        message = json.loads(line, parse_int=lambda s: int(s) if len(s) < 4000 else s)
    except ValueError:
        return line
    return json.dumps(_replace_surrogates(message), ensure_ascii=False).encode("utf-8") + b"\n"


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def repair_stdin() -> None:
    """Put repair_line between the client and the SDK: fd 0 becomes a pipe a thread fills from the real
    stdin, line by line; when the client closes stdin the pipe closes too, and the SDK sees the end."""
    try:
        client = os.dup(0)
        read_end, write_end = os.pipe()
    except OSError:
        return
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(client, "rb") as src, os.fdopen(write_end, "wb") as dst:
            try:
                for line in src:
                    dst.write(repair_line(line))
                    dst.flush()
            except (BrokenPipeError, OSError):
                pass

    threading.Thread(target=pump, name="memory-stdin", daemon=True).start()
