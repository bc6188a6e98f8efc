"""What `memory_status` says of the evidence Claude Code keeps outside the root: its transcripts (which are
kept, which it deletes soon, which are gone) and its auto memory (entries past the limit it loads, orphan files).
Every list is bounded; every name from a file is quoted as data.
"""

from __future__ import annotations

from memory_server.files.reading import FileSkipped
from memory_server.files.root import MemoryRoot
from memory_server.parse.text import as_data
from memory_server.sessions import auto_memory
from memory_server.sessions.auto_memory_report import check as check_auto_memory
from memory_server.sessions.cleanup import cleanup_report
from memory_server.settings import Settings

SHOWN = 20


def kept_status(root: MemoryRoot, settings: Settings) -> tuple[dict[str, object], list[str]]:
    """The kept-transcripts section of the status, and its warnings (for the status's notes)."""
    r = cleanup_report(root, settings)
    out: dict[str, object] = {
        "keep": settings.transcripts.keep,
        "cleanup_period_days": r.cleanup_period_days,
        "cleanup_setting": r.settings_source,
        "transcripts": r.transcripts,
        "kept": r.kept,
        "at_risk_count": len(r.at_risk),
        "at_risk": [{**a.to_dict(), "transcript": as_data(a.transcript)} for a in r.at_risk[:SHOWN]],
        "gone_count": len(r.gone),
        "gone": [as_data(g) for g in r.gone[:SHOWN]],
        "over_budget": [as_data(p) for p in r.over_budget[:SHOWN]],
    }
    notes = list(r.notes)
    if r.at_risk:
        soonest = max(0.0, r.at_risk[0].deleted_in_days)
        out["how"] = "run `memory-server keep` to keep them now"
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
    return out, notes


def auto_memory_status(root: MemoryRoot, settings: Settings) -> tuple[dict[str, object] | None, list[str]]:
    """The auto-memory section of the status (None when the project has none), and its warnings."""
    folder = auto_memory.locate(root, settings)
    if folder is None:
        return None, []
    try:
        report = check_auto_memory(folder)
    except (OSError, FileSkipped) as exc:
        return {"folder": as_data(str(folder.path)), "problem": as_data(str(exc))}, []
    out = report.to_dict()
    out["folder"], out["how"] = as_data(report.folder), as_data(report.how)
    out["written_by"] = "the model (Claude Code's auto memory); read-only here, never written"
    return out, report.notes()
