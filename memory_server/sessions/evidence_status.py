"""What `memory_status` says of the evidence Claude Code keeps outside the root: its transcripts (which are
kept, which it deletes soon, which are gone) and its auto memory (entries past the limit it loads, orphan files).
Typed records (the status publishes them as they are); every list is bounded; every name from a file is quoted
as data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from memory_server.errors import FileSkipped
from memory_server.files.root import MemoryRoot
from memory_server.parse.text import as_data
from memory_server.sessions import auto_memory
from memory_server.sessions.auto_memory_report import SHOWN as AUTO_SHOWN
from memory_server.sessions.auto_memory_report import AutoMemoryReport
from memory_server.sessions.auto_memory_report import check as check_auto_memory
from memory_server.sessions.cleanup import CleanupReport, cleanup_report
from memory_server.settings import Settings

SHOWN = 20
WRITTEN_BY = "the model (Claude Code's auto memory); read-only here, never written"


class AtRiskSession(BaseModel):
    session: str
    transcript: str
    deleted_in_days: float  # 0 or less: due at Claude Code's next start
    state: Literal["not kept", "kept in part"]


class KeptTranscripts(BaseModel):
    keep: bool
    cleanup_period_days: int  # Claude Code's cleanupPeriodDays (its user settings; 30 by default)
    cleanup_setting: str
    transcripts: int  # named by the compressed sessions
    kept: int
    at_risk_count: int  # not kept yet, and Claude Code deletes them within transcripts.cleanup_warn_days
    at_risk: list[AtRiskSession]  # the first few, soonest first
    gone_count: int  # deleted before they were kept: only their summaries remain
    gone: list[str]
    over_budget: list[str]  # kept copies past transcripts.keep_budget_bytes (their tool output was cut)
    how: str | None = None


class PastLimitEntry(BaseModel):
    line: int
    text: str


class LeftOutFile(BaseModel):
    path: str
    reason: str


class AutoMemoryStatus(BaseModel):
    folder: str
    how: str | None = None  # how the folder was found (a setting, Claude Code's settings, the default)
    written_by: str = WRITTEN_BY
    files: int = 0
    index_lines: int = 0
    index_chars: int = 0
    past_limit_count: int = 0  # MEMORY.md entries past what Claude Code loads (200 lines / 25,000 characters)
    past_limit: list[PastLimitEntry] = []
    orphan_count: int = 0  # files MEMORY.md does not point to
    orphans: list[str] = []
    outside_links: list[str] = []  # links that leave the folder (never followed)
    left_out: list[LeftOutFile] = []
    problem: str | None = None


def kept_status(root: MemoryRoot, settings: Settings) -> tuple[KeptTranscripts, list[str]]:
    """The kept-transcripts part of the status, and its warnings (for the status's notes)."""
    r = cleanup_report(root, settings)
    out = KeptTranscripts(
        keep=settings.transcripts.keep,
        cleanup_period_days=r.cleanup_period_days,
        cleanup_setting=r.settings_source,
        transcripts=r.transcripts,
        kept=r.kept,
        at_risk_count=len(r.at_risk),
        at_risk=[
            AtRiskSession(
                session=a.session,
                transcript=as_data(a.transcript),
                deleted_in_days=round(a.deleted_in_days, 1),
                state=a.state,
            )
            for a in r.at_risk[:SHOWN]
        ],
        gone_count=len(r.gone),
        gone=[as_data(g) for g in r.gone[:SHOWN]],
        over_budget=[as_data(p) for p in r.over_budget[:SHOWN]],
        how="run `memory-server keep` to keep them now" if r.at_risk else None,
    )
    return out, kept_notes(r, settings)


def kept_notes(r: CleanupReport, settings: Settings) -> list[str]:
    notes = list(r.notes)
    if r.at_risk:
        soonest = max(0.0, r.at_risk[0].deleted_in_days)
        notes.append(
            f"{len(r.at_risk)} sessions' transcripts are not kept yet and Claude Code deletes them within "
            f"{r.warn_days:g} days (cleanupPeriodDays {r.cleanup_period_days}; the first in {soonest:.1f} days): "
            "run `memory-server keep`"
        )
    if r.gone:
        notes.append(
            f"{len(r.gone)} sessions' transcripts were deleted by Claude Code before they were kept: only their "
            "summaries remain"
        )
    if r.over_budget:
        notes.append(
            f"{len(r.over_budget)} kept transcripts are over transcripts.keep_budget_bytes "
            f"({settings.transcripts.keep_budget_bytes} bytes); their tool output was cut"
        )
    return notes


def auto_memory_status(root: MemoryRoot, settings: Settings) -> tuple[AutoMemoryStatus | None, list[str]]:
    """The auto-memory part of the status (None when the project has none), and its warnings."""
    folder = auto_memory.locate(root, settings)
    if folder is None:
        return None, []
    try:
        report = check_auto_memory(folder)
    except (OSError, FileSkipped) as exc:
        return AutoMemoryStatus(folder=as_data(str(folder.path)), problem=as_data(str(exc))), []
    return auto_memory_record(report), report.notes()


def auto_memory_record(report: AutoMemoryReport) -> AutoMemoryStatus:
    """The report, bounded (the first few of each list) and quoted as data."""
    return AutoMemoryStatus(
        folder=as_data(report.folder),
        how=as_data(report.how),
        files=report.files,
        index_lines=report.index_lines,
        index_chars=report.index_chars,
        past_limit_count=len(report.past_limit),
        past_limit=[PastLimitEntry(line=n, text=as_data(t)) for n, t in report.past_limit[:AUTO_SHOWN]],
        orphan_count=len(report.orphans),
        orphans=[as_data(o) for o in report.orphans[:AUTO_SHOWN]],
        outside_links=[as_data(o) for o in report.outside_links[:AUTO_SHOWN]],
        left_out=[LeftOutFile(path=as_data(p), reason=r) for p, r in report.left_out[:AUTO_SHOWN]],
        problem=report.problem,
    )
