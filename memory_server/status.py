"""What `memory_status` reports: counts, index freshness, problem files, background work, MEMORY.md checks and
whether a dream is due. Every list is bounded (counts, plus the first few), whatever the root holds.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from memory_server.dream.gate import DreamGate
from memory_server.errors import MemoryServerError, VectorStoreError
from memory_server.parse.memory_md import check_memory_index, memory_index_notes
from memory_server.parse.text import as_data
from memory_server.sessions.evidence_status import auto_memory_status, kept_status
from memory_server.sessions.pending import queued as queued_sessions
from memory_server.sessions.redact import budget_fired

if TYPE_CHECKING:
    from memory_server.api import Memory

STATUS_LIST_LIMIT = 20  # memory_status lists at most this many problem files, unlisted topics, notes
VIRTUAL_LAYERS = ("transcript", "auto_memory")  # files outside the root, under virtual paths


def pending_files(memory: Memory, on_disk: dict[str, str] | None = None) -> list[str]:
    """Memory files whose indexed copy is out of date (new, changed or deleted), by size and mtime.
    `on_disk`: the memory files (path -> layer) when the caller has listed them already."""
    known = memory.fts.files()
    pending = []
    on_disk = dict(memory.root.memory_files()) if on_disk is None else on_disk
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


def vector_count(memory: Memory) -> int | None:
    """Vectors in Chroma, when this process has it open (status never loads Chroma just to count)."""
    if memory.vectors is None or not memory.vectors.is_open:
        return None
    try:
        return memory.vectors.count()
    except VectorStoreError as exc:
        memory.vector_error = str(exc)
        return None


def build_status(memory: Memory) -> dict[str, Any]:
    """Counts, index freshness, problem files, what is running, and whether a dream is due; bounded."""
    files = memory.fts.files()
    counts = memory.fts.counts()
    vector_pending = [
        f.path
        for f in files.values()
        if f.status != "skipped" and f.layer != "transcript" and f.vectors_sha256 != f.sha256
    ]
    problems = [
        {"path": as_data(f.path), "status": f.status, "reason": as_data(f.message)}
        for f in sorted(files.values(), key=lambda f: f.path)
        if f.status != "ok"
    ]
    layers: dict[str, int] = {}
    for f in files.values():
        layers[f.layer] = layers.get(f.layer, 0) + 1
    on_disk = dict(memory.root.memory_files())  # one walk of the tree for the whole status
    pending = pending_files(memory, on_disk)
    problems.extend(
        {"path": as_data(path), "status": "skipped", "reason": as_data(why)} for path, why in memory.root.left_out
    )
    out: dict[str, Any] = {
        "root": str(memory.root.path),
        "files": counts["files"],
        "files_by_layer": layers,
        "chunks": counts["chunks"],
        "chunks_by_layer": {k[7:]: v for k, v in counts.items() if k.startswith("chunks_")},
        "keyword_index": {
            "fresh": not pending,
            "pending_files": [as_data(p) for p in pending[:STATUS_LIST_LIMIT]],
            "pending_count": len(pending),
        },
        "semantic_index": {
            "enabled": memory.vectors is not None,
            "backend": memory.vectors.description if memory.vectors is not None else None,
            "pending_files": len(vector_pending) if memory.vectors is not None else 0,
            "vectors": vector_count(memory),
            "model": getattr(memory.embedder, "name", None),
            "model_loaded": bool(getattr(memory.embedder, "is_loaded", False)),
            "token_vectors": memory.settings.embedding.token_vectors if memory.vectors is not None else "off",
            "late_interaction": memory.vectors is not None
            and memory.settings.embedding.token_vectors != "off"
            and memory.settings.ranking.late_weight > 0,
            "error": memory.vector_error,
        },
        "indexing": {**memory.indexer.progress, **({"stopped": memory.index_failure} if memory.index_failure else {})},
        "problem_files": problems,
        "notes": list(memory.indexer.notes) + pending_settings_notes(memory),
    }
    out["sessions_queue"] = queue_status(memory)
    out["kept_transcripts"], kept_notes = kept_status(memory.root, memory.settings)
    auto, auto_notes = auto_memory_status(memory.root, memory.settings)
    if auto is not None:
        out["auto_memory"] = auto
    out["notes"] += kept_notes + auto_notes
    fired = budget_fired()
    if fired:
        out["notes"].append(
            f"{fired} texts were too costly to check for secrets and were replaced whole in memory "
            "(`[REDACTED: text too costly ...]`); nothing of them was kept"
        )
    out["dream"] = dream_status(memory)
    topic_paths = sorted(p for p, layer in on_disk.items() if layer == "topic" and p.startswith("topics/"))
    index_report = check_memory_index(memory.root.path, topic_paths)
    out["memory_index"] = index_report
    out["notes"].extend(memory_index_notes(index_report))
    # Bounded whatever the root holds: counts, plus the first few of each list.
    out["problem_count"] = len(problems)
    out["problem_files"] = problems[:STATUS_LIST_LIMIT]
    for key in ("unlisted_topics", "broken_links"):
        items = index_report.get(key) or []
        index_report[key.split("_")[0] + "_count"] = len(items)
        index_report[key] = items[:STATUS_LIST_LIMIT]
    index_report["unlisted_topics"] = [as_data(p) for p in index_report["unlisted_topics"]]
    index_report["broken_links"] = [{**b, "target": as_data(b["target"])} for b in index_report["broken_links"]]
    out["notes"] = [as_data(n) for n in out["notes"]]
    if len(out["notes"]) > STATUS_LIST_LIMIT:
        more = len(out["notes"]) - STATUS_LIST_LIMIT
        out["notes"] = [*out["notes"][:STATUS_LIST_LIMIT], f"and {more} more notes"]
    if memory.config_error:
        out["config_error"] = memory.config_error
    return out


def dream_status(memory: Memory) -> dict[str, Any]:
    try:
        due, reason = DreamGate(memory.root.path, memory.settings).due()
    except MemoryServerError as exc:
        return {"due": False, "reason": str(exc)}
    how = "run /dream (without an agent: memory-server dream run)" if due else None
    return {"due": due, "reason": reason, "how": how}


def queue_status(memory: Memory) -> dict[str, Any]:
    """Sessions waiting to be compressed (a session end whose compression could not run yet) or failed, why,
    and how to finish them; bounded."""
    items = queued_sessions(memory.root)
    waiting = sum(1 for i in items if i.state == "waiting")
    out: dict[str, Any] = {"waiting": waiting, "failed": len(items) - waiting}
    if items:
        out["items"] = [
            {**i.to_dict(), "transcript": as_data(i.transcript), "reason": as_data(i.reason)}
            for i in items[:STATUS_LIST_LIMIT]
        ]
        out["how"] = "run `memory-server compress --pending` (the next session hook or the server does it too)"
    return out


def pending_settings_notes(memory: Memory) -> list[str]:
    if not memory.settings_pending:
        return []
    sections = ", ".join(memory.settings_pending)
    return [
        f"memory.yaml changed the {sections} settings: they apply when the server starts again (in Claude Code: "
        "/mcp, then reconnect the memory server)"
    ]
