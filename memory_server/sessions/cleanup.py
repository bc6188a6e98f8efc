"""Which sessions' transcripts Claude Code is about to delete before they are kept (what `status` warns about).

Claude Code deletes a transcript `cleanupPeriodDays` days after it last changed (30 unless the user's Claude
Code settings say otherwise; `files/claude_home.py` reads them). A transcript a compressed session names is
at risk when its clean-up is `transcripts.cleanup_warn_days` (7) days away or less and it has no kept copy, or
one older than the transcript (it grew after it was kept). Only file times are read, never a transcript.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Literal

from memory_server.files.claude_home import user_settings
from memory_server.files.root import MemoryRoot
from memory_server.sessions.kept import all_kept
from memory_server.sessions.parser import transcript_id
from memory_server.sessions.transcript_layer import named_transcripts
from memory_server.settings import Settings

DAY = 86400.0


@dataclass(frozen=True)
class AtRisk:
    """A transcript Claude Code deletes soon that is not kept to its end."""

    session: str
    transcript: str
    deleted_in_days: float  # 0 or less: due at Claude Code's next start
    state: Literal["not kept", "kept in part"]


@dataclass
class CleanupReport:
    cleanup_period_days: int
    settings_source: str
    warn_days: float
    transcripts: int = 0  # named by the compressed sessions
    kept: int = 0  # with a kept copy
    at_risk: list[AtRisk] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)  # deleted and never kept: only the summary remains
    over_budget: list[str] = field(default_factory=list)  # kept copies past transcripts.keep_budget_bytes
    notes: list[str] = field(default_factory=list)


def cleanup_report(root: MemoryRoot, settings: Settings, now: float | None = None) -> CleanupReport:
    """The sessions whose transcripts are kept, at risk, or gone (see the module docstring)."""
    now = time.time() if now is None else now
    claude = user_settings()
    report = CleanupReport(claude.cleanup_period_days, claude.source, settings.transcripts.cleanup_warn_days)
    if claude.problem:
        report.notes.append(claude.problem)
    kept = all_kept(root)
    seen: set[str] = set()
    for named in named_transcripts(root):
        tid = transcript_id(named.transcript)
        if tid in seen:
            continue
        seen.add(tid)
        report.transcripts += 1
        copy = kept.get(tid)
        copy_time = _mtime(copy) if copy is not None else None
        report.kept += copy_time is not None
        original = _mtime(named.transcript)
        if original is None:
            if copy_time is None:
                report.gone.append(str(named.transcript))
            continue
        if copy_time is not None and copy_time >= original:
            continue
        left = claude.cleanup_period_days - (now - original) / DAY
        if left <= report.warn_days:
            state: Literal["not kept", "kept in part"] = "kept in part" if copy_time is not None else "not kept"
            report.at_risk.append(AtRisk(named.session, str(named.transcript), left, state))
    budget = settings.transcripts.keep_budget_bytes
    report.over_budget = [root.relpath(p) for p in kept.values() if (_size(p) or 0) > budget]
    report.at_risk.sort(key=lambda r: r.deleted_in_days)
    return report


def _mtime(path: os.PathLike[str] | str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _size(path: os.PathLike[str] | str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None
