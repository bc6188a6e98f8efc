"""What `memory_status` reports: counts, index freshness, problem files, background work, MEMORY.md checks, kept
transcripts and Claude Code's auto memory (`sessions/evidence_status.py`), and whether a dream is due. Every
list is bounded (counts, plus the first few), whatever the root holds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memory_server.dream.gate import DreamGate
from memory_server.errors import MemoryServerError
from memory_server.files.program import with_program
from memory_server.files.root import MemoryFiles
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.index.fts import FileRecord
from memory_server.parse.memory_md import MemoryIndexReport, check_memory_index, memory_index_notes
from memory_server.parse.text import as_data
from memory_server.sessions.evidence_status import auto_memory_status, kept_status
from memory_server.sessions.pending import queued as queued_sessions
from memory_server.sessions.redact import budget_fired
from memory_server.tool_results import (
    DreamStatus,
    IndexingStatus,
    KeywordIndexStatus,
    ProblemFile,
    QueuedSession,
    SemanticIndexStatus,
    SessionsQueue,
    Status,
)

if TYPE_CHECKING:
    from memory_server.api import Memory

STATUS_LIST_LIMIT = 20  # memory_status lists at most this many problem files, unlisted topics, notes
VIRTUAL_LAYERS = ("transcript", "auto_memory")  # files outside the root, under virtual paths


def pending_files(memory: Memory, on_disk: Mapping[str, str] | None = None) -> list[str]:
    """Memory files whose indexed copy is out of date (new, changed or deleted), by size and mtime.
    `on_disk`: the memory files (path -> layer) when the caller has listed them already."""
    known = memory.fts.files()
    pending = []
    on_disk = memory.root.memory_files().layers if on_disk is None else on_disk
    for rel in on_disk:
        rec = known.get(rel)
        try:
            st = os.stat(memory.root.path / rel)
        except OSError:
            continue
        if rec is None or rec.size != st.st_size or rec.mtime_ns != st.st_mtime_ns:
            pending.append(rel)
    pending.extend(p for p, rec in known.items() if p not in on_disk and rec.layer not in VIRTUAL_LAYERS)
    return sorted(pending)


def build_status(memory: Memory) -> Status:
    """Counts, index freshness, problem files, what is running, and whether a dream is due; bounded."""
    files = memory.fts.files()
    counts = memory.fts.counts()
    on_disk = memory.root.memory_files()  # one walk of the tree for the whole status
    pending = pending_files(memory, on_disk.layers)
    problems = problem_files(files, on_disk)
    index_report = memory_index(memory, on_disk)
    kept, kept_notes = kept_status(memory.root, memory.settings)
    auto, auto_notes = auto_memory_status(memory.root, memory.settings)
    notes = [
        *memory.indexer.notes,
        *pending_settings_notes(memory),
        *kept_notes,
        *auto_notes,
        *budget_notes(),
        *memory_index_notes(index_report),
    ]
    cut_index_lists(index_report)
    return Status(
        root=str(memory.root.path),
        files=counts["files"],
        files_by_layer=files_by_layer(files),
        chunks=counts["chunks"],
        chunks_by_layer={k[7:]: v for k, v in counts.items() if k.startswith("chunks_")},
        keyword_index=KeywordIndexStatus(
            fresh=not pending,
            pending_files=[as_data(p) for p in pending[:STATUS_LIST_LIMIT]],
            pending_count=len(pending),
        ),
        semantic_index=semantic_status(memory, files, [p for p in pending if p not in files]),
        indexing=indexing_status(memory),
        problem_files=problems[:STATUS_LIST_LIMIT],
        problem_count=len(problems),
        notes=bounded_notes(notes),
        sessions_queue=queue_status(memory),
        kept_transcripts=kept,
        auto_memory=auto,
        dream=dream_status(memory),
        memory_index=index_report,
        config_error=memory.config_error,
    )


def files_by_layer(files: Mapping[str, FileRecord]) -> dict[str, int]:
    layers: dict[str, int] = {}
    for f in files.values():
        layers[f.layer] = layers.get(f.layer, 0) + 1
    return layers


def problem_files(files: Mapping[str, FileRecord], on_disk: MemoryFiles) -> list[ProblemFile]:
    """Files indexed with a problem, then files the walk left out, each quoted as data."""
    problems = [
        ProblemFile(path=as_data(f.path), status=f.status, reason=as_data(f.message))
        for f in sorted(files.values(), key=lambda f: f.path)
        if f.status != "ok"
    ]
    problems.extend(ProblemFile(path=as_data(p), status="skipped", reason=as_data(why)) for p, why in on_disk.left_out)
    return problems


def semantic_status(memory: Memory, files: Mapping[str, FileRecord], new_files: list[str]) -> SemanticIndexStatus:
    """`new_files`: files on disk the indices have not read yet; each will need its vectors too."""
    enabled = memory.vectors is not None
    tokens = memory.settings.embedding.token_vectors if enabled else "off"
    vector_pending = [
        f for f in files.values() if f.status != "skipped" and f.layer != "transcript" and f.vectors_sha256 != f.sha256
    ]
    return SemanticIndexStatus(
        enabled=enabled,
        backend=memory.vectors.description if memory.vectors is not None else None,
        pending_files=len(vector_pending) + len(new_files) if enabled else 0,
        vectors=memory.vector_count(),
        model=memory.embedder.name if memory.embedder is not None else None,
        model_loaded=isinstance(memory.embedder, MiniLMEmbedder) and memory.embedder.is_loaded,
        token_vectors=tokens,
        late_interaction=enabled and tokens != "off" and memory.settings.ranking.late_weight > 0,
        error=memory.vector_error,
    )


def indexing_status(memory: Memory) -> IndexingStatus:
    progress = memory.indexer.progress
    return IndexingStatus(stage=progress.stage, done=progress.done, total=progress.total, stopped=memory.index_failure)


def memory_index(memory: Memory, on_disk: MemoryFiles) -> MemoryIndexReport:
    """MEMORY.md checked against the topics on disk."""
    topic_paths = sorted(p for p, layer in on_disk if layer == "topic" and p.startswith("topics/"))
    return check_memory_index(memory.root.path, topic_paths)


def cut_index_lists(report: MemoryIndexReport) -> None:
    """Bounded whatever the root holds: the first few of each list, with its count; names quoted as data."""
    report["unlisted_count"] = len(report["unlisted_topics"])
    report["broken_count"] = len(report["broken_links"])
    report["unlisted_topics"] = [as_data(p) for p in report["unlisted_topics"][:STATUS_LIST_LIMIT]]
    report["broken_links"] = [
        {"line": b["line"], "target": as_data(b["target"])} for b in report["broken_links"][:STATUS_LIST_LIMIT]
    ]


def bounded_notes(notes: list[str]) -> list[str]:
    shown = [as_data(n) for n in notes]
    if len(shown) > STATUS_LIST_LIMIT:
        more = len(shown) - STATUS_LIST_LIMIT
        shown = [*shown[:STATUS_LIST_LIMIT], f"and {more} more notes"]
    return shown


def budget_notes() -> list[str]:
    fired = budget_fired()
    if not fired:
        return []
    return [
        f"{fired} texts were too costly to check for secrets and were replaced whole in memory "
        "(`[REDACTED: text too costly ...]`); nothing of them was kept"
    ]


def dream_status(memory: Memory) -> DreamStatus:
    try:
        gate = DreamGate(memory.root, memory.settings)
        due, reason = gate.due()
        how = with_program(f"run /dream. {gate.how_to_clear()}") if due else None
    except MemoryServerError as exc:
        return DreamStatus(due=False, reason=str(exc))
    return DreamStatus(due=due, reason=reason, how=how)


def queue_status(memory: Memory) -> SessionsQueue:
    """Sessions waiting to be compressed (a session end whose compression could not run yet) or failed, why,
    and how to finish them; bounded."""
    items = queued_sessions(memory.root)
    waiting = sum(1 for i in items if i.state == "waiting")
    queue = SessionsQueue(waiting=waiting, failed=len(items) - waiting)
    if items:
        queue.items = [
            QueuedSession(
                transcript=as_data(i.transcript),
                state=i.state,
                reason=as_data(i.reason),
                queued=i.queued,
                attempts=i.attempts,
            )
            for i in items[:STATUS_LIST_LIMIT]
        ]
        queue.how = with_program(
            "run `memory-server compress --pending` (the next session hook or the server does it too)"
        )
    return queue


def pending_settings_notes(memory: Memory) -> list[str]:
    if not memory.settings_pending:
        return []
    sections = ", ".join(memory.settings_pending)
    return [
        f"memory.yaml changed the {sections} settings: they apply when the server starts again (in Claude Code: "
        "/mcp, then reconnect the memory server)"
    ]
