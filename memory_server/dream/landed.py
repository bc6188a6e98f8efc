"""Whether a session's edits are in today's project tree: the text one of its edits or writes left in a file
is still there (kept), or the file or every such text is gone (never merged, reverted, or rewritten since).

    landed(record, tree)   # [("cmd/app/x.go", True), ("docs/NOTES.md", False)]

Read from the record's edit and write turns (each text written to each file) and the tracked files of
the git tree the memory root lies in. A file is looked for by the path the tool call named, relative to the
session's working folder; paths outside it (absolute) and edits that only delete are left out.
"""

from __future__ import annotations

import re

from memory_server.dream.names import GitTree
from memory_server.dream.record import AGENT, REMOVED_ONLY, SessionRecord

LANDED_FILES = 6  # files of one session looked at
MAX_FILE_BYTES = 2_000_000


def session_edits(record: SessionRecord) -> dict[str, list[list[str]]]:
    """File (as the tool call named it) -> for each of the session's edits or writes there, the distinctive
    lines it added (the context an edit repeats from the old text says nothing of whether it landed)."""
    out: dict[str, list[list[str]]] = {}
    for turn in record.turns:
        if turn.speaker != AGENT or turn.kind not in ("edit", "write") or turn.text == REMOVED_ONLY:
            continue
        if turn.path and not turn.path.startswith(("/", "~")):
            out.setdefault(turn.path, []).append(_distinctive(turn.text, turn.removed))
    return out


def _distinctive(text: str, removed: str) -> list[str]:
    """The longest few lines an edit added that say something (not braces, not a bare keyword, not a line of
    the text it replaced)."""
    before = {" ".join(line.split()) for line in removed.splitlines()}
    lines = {" ".join(line.split()) for line in text.splitlines()} - before
    return sorted((ln for ln in lines if len(ln) >= 16 and re.search(r"[A-Za-z]{3}", ln)), key=len, reverse=True)[:5]


def _file_texts(tree: GitTree, path: str) -> list[str]:
    """The text (spacing folded) of the tracked files a path names: itself, or those its end matches."""
    top = tree.top
    if top is None:
        return []
    files = tree.under(path)
    out = []
    for name in [path] if path in files else files[:5]:
        try:
            data = (top / name).read_bytes()[:MAX_FILE_BYTES]
        except OSError:
            continue
        out.append(" ".join(data.decode("utf-8", "replace").split()))
    return out


def landed(record: SessionRecord, tree: GitTree) -> list[tuple[str, bool]]:
    """(file, whether today's tree holds more than half of the lines one of the session's edits added there),
    for the first `LANDED_FILES` files the session edited; none outside a git tree. One edit kept is enough: a
    later edit of the same file (a merge's resolution) may be gone while the work stays."""
    if not tree.available:
        return []
    out: list[tuple[str, bool]] = []
    for path, added in list(session_edits(record).items())[:LANDED_FILES]:
        wanted = [lines for lines in added if lines]
        if not wanted:
            continue
        files = _file_texts(tree, path)
        kept = any(2 * sum(line in text for line in lines) > len(lines) for lines in wanted for text in files)
        out.append((path, kept))
    return out
