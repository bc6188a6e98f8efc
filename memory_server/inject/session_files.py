"""Compressed session files as the hooks read them: front matter, title and sections, each item with its line.

Only the newest files are read (a root may hold thousands), through the root's safe bounded read, with
`<private>` text and secrets taken out first (`quote.visible_text`); line numbers are the file's own.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from dataclasses import dataclass, field

from memory_server.errors import FileSkipped
from memory_server.files.root import SESSIONS_DIR, MemoryRoot
from memory_server.inject.quote import visible_text

log = logging.getLogger(__name__)

FIELD = re.compile(r"^(session_id|started|ended): (.{0,200})$")
NAME_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})-([0-9A-Za-z]+)")  # <date>-<session id's first part>-<slug>.md


@dataclass
class SessionFile:
    """One compressed session file: its path, session id, when it ended, its title and its sections, each a
    list of (file line, text) items (a list item or a paragraph)."""

    path: str
    session_id: str
    date: str  # the day it ended (else started), YYYY-MM-DD
    ended: str
    title: str = ""
    sections: dict[str, list[tuple[int, str]]] = field(default_factory=dict)


def session_paths(root: MemoryRoot) -> list[str]:
    """Every compressed session file (`sessions/compressed/<year>/<name>.md`), oldest first by name (names
    start with the session's date). Symlinks are left out; the safe read checks each file it opens again."""
    top = root.sessions_dir
    if not top.is_dir() or top.is_symlink():
        return []
    found: list[str] = []
    with os.scandir(top) as years:
        for year in years:
            if year.name.startswith(".") or not year.is_dir(follow_symlinks=False):
                continue
            with os.scandir(year.path) as names:
                found += [
                    f"{SESSIONS_DIR}/{year.name}/{f.name}"
                    for f in names
                    if f.name.endswith(".md") and not f.name.startswith(".") and f.is_file(follow_symlinks=False)
                ]
    return sorted(found)


def name_date(rel: str) -> str:
    match = NAME_DATE.match(rel.rsplit("/", 1)[-1])
    return match.group(1) if match else ""


def of_session(rel: str, session_id: str | None) -> bool:
    """Whether the file `rel` belongs to the session `session_id` (its name holds the id's first part)."""
    if not session_id:
        return False
    match = NAME_DATE.match(rel.rsplit("/", 1)[-1])
    return match is not None and session_id.startswith(match.group(2))


def read_session(root: MemoryRoot, rel: str) -> SessionFile | None:
    """The file's front matter and sections, redacted; None when it cannot be read (said in the log)."""
    try:
        text = visible_text(root.read_text(rel).text)
    except (FileSkipped, OSError) as exc:
        log.info("session file %s left out: %s", rel, exc)
        return None
    lines = text.splitlines()
    meta, body_start = front_matter_fields(lines)
    ended = meta.get("ended") or meta.get("started") or ""
    out = SessionFile(rel, meta.get("session_id", ""), ended[:10] or name_date(rel), ended)
    heading = ""
    for n, line in enumerate(lines[body_start:], body_start + 1):
        if line.startswith("# ") and not out.title:
            out.title = line[2:].strip()
        elif line.startswith("## "):
            heading = line[3:].strip()
            out.sections.setdefault(heading, [])
        elif heading and line.strip():
            out.sections[heading].append((n, line.strip()))
    return out


def front_matter_fields(lines: list[str]) -> tuple[dict[str, str], int]:
    """The plain `key: value` fields of a session file's front matter (the renderer writes the ones read here
    as plain scalars, so no YAML parser is needed on the hook's path), and the line its body starts after."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    fields: dict[str, str] = {}
    for n, line in enumerate(lines[1:200], 1):
        if line.strip() in ("---", "..."):
            return fields, n + 1
        match = FIELD.match(line)
        if match:
            fields[match.group(1)] = match.group(2).strip().strip("'\"")
    return {}, 0


def newest_sessions(root: MemoryRoot, count: int, *, skip_session: str | None = None) -> list[SessionFile]:
    """The `count` newest session files (newest first, by when they ended), without those of `skip_session`."""
    paths = [p for p in session_paths(root) if not of_session(p, skip_session)]
    read = [s for s in (read_session(root, rel) for rel in paths[-count:]) if s is not None]
    read.sort(key=lambda s: (s.ended or s.date, s.path), reverse=True)
    return read[:count]


def days_before(day: str, other: str) -> float:
    """Days from `day` back to `other` (both YYYY-MM-DD); a large number when either is unknown."""
    try:
        return float((dt.date.fromisoformat(day) - dt.date.fromisoformat(other)).days)
    except ValueError:
        return 1e9
