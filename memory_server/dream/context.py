"""`memory-server dream record REF`: the turns around a reference, as the program reads them.

    render_around(root, "transcript:<id>:54", around=6) -> text

What the agent and a second reader see of a session's record: each turn with its reference, date, who spoke
(the person, the agent, a tool's output, a file, Claude Code), its kind, and its text escaped and quoted, the
question a bare answer answers included. Any session of the root can be shown, not only those a dream reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory_server.dream.auto_memory import auto_memory_records
from memory_server.dream.gate import DreamGate
from memory_server.dream.record import SessionRecord, Turn, load_record, named_transcript, transcript_of
from memory_server.errors import NotFoundError
from memory_server.files.root import MemoryRoot, as_root
from memory_server.parse.text import as_data
from memory_server.sessions.parser import transcript_id
from memory_server.settings import Settings, load_settings

TURN_CHARS = 1200  # a turn around the reference
REFERENCED_TURN_CHARS = 20_000  # the referenced turn itself: whole, so its words can be quoted


def find_session(root: MemoryRoot, settings: Settings, source: str) -> SessionRecord:
    """The record of the session a reference names (`transcript:<stem>` or a session file's path), or of a file
    of Claude Code's auto memory (`auto-memory:<file>`)."""
    if source.startswith("auto-memory:"):
        found = next((r for r in auto_memory_records(root, settings) if r.ref_base == source), None)
        if found is None:
            raise NotFoundError(f"{source!r} is not a file of Claude Code's auto memory for this project")
        return found
    for rel in DreamGate(root, settings).session_files():
        if rel == source:
            return load_record(root, rel, settings)
        transcript = transcript_of(root, rel, settings)
        if transcript is not None and f"transcript:{transcript_id(transcript)}" == source:
            return load_record(root, rel, settings)
    gone = _session_naming(root, settings, source)
    if gone is not None:
        raise NotFoundError(
            f"the transcript {source!r} cannot be read any more (moved, deleted by Claude Code's clean-up, or outside "
            f"the transcript folders); its session is read from {as_data(gone)}: cite it as {as_data(gone)}:LINE"
        )
    raise NotFoundError(
        f"no session of {root.path} is {source!r}; give a reference the evidence pack or REPORT.md prints "
        "(transcript:<id>:LINE or sessions/...md:LINE)"
    )


def _session_naming(root: MemoryRoot, settings: Settings, source: str) -> str | None:
    """The session file whose front matter names the transcript `transcript:<stem>` (now unreadable)."""
    stem = source.removeprefix("transcript:")
    if stem == source:
        return None
    for rel in DreamGate(root, settings).session_files():
        named = named_transcript(root, rel)
        if named is not None and Path(named).stem == stem:
            return rel
    return None


def _turn(t: Turn, mark: bool) -> list[str]:
    head = f"{'>>' if mark else '  '} `{t.ref}` {t.date or 'undated'} · {t.who} ({t.kind}" + (
        f", {as_data(t.tool)[:80]}" if t.tool else ""
    )
    out = [head + "):"]
    if t.asked:
        out.append(f"     answering: {as_data(t.asked[-400:])}")
    limit = REFERENCED_TURN_CHARS if mark else TURN_CHARS
    text = t.text if len(t.text) <= limit else t.text[: limit - 1] + f"… ({len(t.text) - limit + 1} more characters)"
    out += [f"     > {line}" for line in as_data(text, multiline=True).splitlines() if line.strip()]
    return out


def render_around(
    root: str | os.PathLike[str] | MemoryRoot, ref: str, around: int = 6, *, settings: Settings | None = None
) -> str:
    """The turns of the session `ref` names, from `around` turns before its line to `around` after."""
    mroot = as_root(root)
    settings = settings or load_settings(mroot.path)
    source, _, line_text = ref.rpartition(":")
    if not line_text.isdigit() or not source:
        raise NotFoundError(f"{ref!r} is not a reference like transcript:<id>:LINE or sessions/...md:LINE")
    session = find_session(mroot, settings, source)
    line = int(line_text)
    turns = session.turns
    at = next((i for i, t in enumerate(turns) if t.line >= line), len(turns))
    shown = turns[max(0, at - around) : at + around + 1]
    read_from = (
        f"the kept copy {session.kept} (Claude Code's transcript is gone)" if session.kept else f"its {session.source}"
    )
    title = f"{as_data(session.path)} (read from {as_data(read_from)}), turns around line {line}:"
    body = [x for t in shown for x in _turn(t, t.line == line)]
    return "\n".join([title, *body]) + "\n"
