"""When a dream is due, and the dream state that decides it.

A dream is due when at least `dream.min_hours` hours have passed since the last one (or there has never
been one) and at least `dream.min_sessions` compressed sessions have closed since: files under
`sessions/compressed/` that no dream has processed yet.

State lives in `.memory/dream-state.json` (written atomically, only while the dream lock
`.memory/dream.lock` is held):

    {"version": 1, "last_dream": 1767225600.0,
     "processed": {"sessions/compressed/2026/....md": {"dream": "20260101-000000", "at": 1767225600.0}},
     "rejected": {"<fingerprint>": {"proposal": ..., "hunk": 2, "at": ..., "summary": ..., "signature": ...}},
     "applied": {"<fingerprint>": {...}},
     "held": {"<fingerprint>": {"item": {...as submitted...}, "sessions": [...], "why": ..., "proposal": ...}}}

`held`: verified items a proposal could not take (over `dream.max_changes` changes, or overlapping another
item's lines). The next `dream gather` lists them first; `dream status` counts them.

`run_read`: the sessions `dream run` (no agent) read. Proposing alone leaves them unprocessed, for the agent's
/dream; once a person has reviewed a `dream run` proposal (every change applied or rejected, or `dream
dismiss`), its sessions join `processed` and the review counts as the last dream (review.count_reviewed; the
proposal records `reviewed_at`). `how_to_clear` says which of these ends a due dream.

Deleting `.memory/` loses little: when the state file is missing it is rebuilt from the proposals under
`dreams/*/proposal.json` (which sessions each processed, when, and which hunks were applied or rejected).

This module is on the session-start hook's path: it imports nothing heavy and never indexes.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

from memory_server.dream.records import DreamState, empty_state
from memory_server.files.root import DREAM_PENDING, MemoryRoot, layer_of
from memory_server.files.writing import atomic_write
from memory_server.settings import DreamSettings, Settings, load_settings

log = logging.getLogger(__name__)

STATE_FILE = "dream-state.json"
LOCK_FILE = "dream.lock"
PROPOSAL_META = "proposal.json"


def format_time(ts: float | None) -> str:
    if ts is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


class DreamGate:
    """The due-gate and dream state of one memory root. `clock` gives the time (seconds since the epoch)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | MemoryRoot,
        settings: Settings | DreamSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root if isinstance(root, MemoryRoot) else MemoryRoot(root)
        if settings is None:
            settings = load_settings(self.root.path)
        self.settings: DreamSettings = settings.dream if isinstance(settings, Settings) else settings
        self.clock = clock

    # -- paths --------------------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.root.path / ".memory" / STATE_FILE

    @property
    def lock_path(self) -> Path:
        return self.root.ensure_state_dir() / LOCK_FILE

    @property
    def flag_path(self) -> Path:
        return self.root.path / DREAM_PENDING

    # -- state --------------------------------------------------------------------------------------

    def load_state(self) -> DreamState:
        """The dream state; rebuilt from `dreams/*/proposal.json` when the state file is missing."""
        try:
            raw = json.loads(self.state_path.read_text(encoding="utf-8"))
            if isinstance(raw, dict):
                state = empty_state()
                return cast(DreamState, {**state, **{k: v for k, v in raw.items() if k in state}})
            log.warning("%s is not a JSON object; rebuilding the dream state from dreams/", self.state_path)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.warning("%s is unreadable (%s); rebuilding the dream state from dreams/", self.state_path, exc)
        return self._state_from_proposals()

    def _state_from_proposals(self) -> DreamState:
        state = empty_state()
        dreams = self.root.dreams_dir
        if not dreams.is_dir():
            return state
        for folder in sorted(dreams.iterdir()):
            try:
                meta = json.loads((folder / PROPOSAL_META).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            created = float(meta.get("created") or 0)
            _sessions_read(state, meta, created)
            for hunk in meta.get("hunks", []):
                status = hunk.get("status")
                bucket = (
                    state["rejected"] if status == "rejected" else state["applied"] if status == "applied" else None
                )
                if bucket is not None:
                    for fp in hunk.get("fingerprints", []):
                        item = (meta.get("items") or {}).get(fp) or {}
                        bucket[fp] = {
                            "proposal": meta.get("id"),
                            "hunk": hunk.get("n"),
                            "at": created,
                            "statement": item.get("statement", hunk.get("summary", "")),
                            "target": item.get("target", hunk.get("path", "")),
                        }
        return state

    def save_state(self, state: DreamState) -> None:
        """Write the state atomically. Callers hold the dream lock."""
        self.root.ensure_state_dir()
        atomic_write(self.state_path, json.dumps(state, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

    # -- sessions -----------------------------------------------------------------------------------

    def session_files(self) -> list[str]:
        """Every compressed session file (root-relative), sorted."""
        top = self.root.sessions_dir
        if not top.is_dir() or top.is_symlink():
            return []
        found = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                rel = self.root.relpath(Path(dirpath) / name)
                if layer_of(rel) == "session":
                    found.append(rel)
        return sorted(found)

    def unprocessed_sessions(self, state: DreamState | None = None) -> list[str]:
        processed = (state or self.load_state())["processed"]
        return [rel for rel in self.session_files() if rel not in processed]

    def mark_processed(self, paths: Iterable[str], dream_id: str | None = None, when: float | None = None) -> None:
        state = self.load_state()
        at = self.clock() if when is None else when
        for rel in paths:
            state["processed"][rel] = {"dream": dream_id, "at": at}
        self.save_state(state)

    def record_dream(self, when: float | None = None) -> None:
        state = self.load_state()
        state["last_dream"] = self.clock() if when is None else float(when)
        self.save_state(state)

    def runs_to_review(self, state: DreamState | None = None) -> list[str]:
        """The `dream run` proposals over sessions no dream has processed, oldest first. A person's review of
        one (each change applied or rejected, or the proposal dismissed) counts its sessions as read."""
        state = state or self.load_state()
        ids = {rec.get("dream") for rel, rec in state["run_read"].items() if rel not in state["processed"]}
        return sorted(i for i in ids if i and (self.root.dreams_dir / i / PROPOSAL_META).is_file())

    def how_to_clear(self, state: DreamState | None = None) -> str:
        """What ends a due dream, in words a person (or the agent) can act on."""
        runs = self.runs_to_review(state)
        if runs:
            return (
                "It clears when the agent's /dream has read these sessions, or when a person has reviewed the "
                f"`dream run` proposal {', '.join(runs)}: applied or rejected each of its changes, or dismissed it "
                f"(`memory-server dream dismiss {runs[-1]}`)."
            )
        return (
            "It clears when the agent's /dream has read these sessions; without an agent, run `memory-server "
            "dream run`, then apply its changes or dismiss it (`memory-server dream dismiss`)."
        )

    # -- the gate -----------------------------------------------------------------------------------

    def due(self) -> tuple[bool, str]:
        """(due, why): both thresholds, in words a person (or the agent) can act on."""
        state = self.load_state()
        waiting = len(self.unprocessed_sessions(state))
        last = state.get("last_dream")
        need_s, need_h = self.settings.min_sessions, self.settings.min_hours
        if last is None:
            hours_ok, since = True, "no dream has run yet"
        else:
            hours = max(0.0, (self.clock() - float(last)) / 3600.0)
            hours_ok = hours >= need_h
            since = f"the last dream was {hours:.1f} hours ago ({format_time(float(last))})"
        sessions_ok = waiting >= need_s
        counted = f"{waiting} session{'s' if waiting != 1 else ''} closed since"
        if hours_ok and sessions_ok:
            return True, f"dream due: {counted} and {since}"
        missing = []
        if not sessions_ok:
            missing.append(f"{counted}, needs {need_s}")
        if not hours_ok:
            missing.append(f"{since}, needs {need_h:g} hours")
        return False, "dream not due: " + "; ".join(missing)

    # -- the flag -----------------------------------------------------------------------------------

    def set_pending(self, reason: str) -> None:
        try:
            if not self.flag_path.exists() or self.flag_path.read_text(encoding="utf-8").strip() != reason:
                atomic_write(self.flag_path, reason + "\n")
        except OSError as exc:
            log.warning("could not write %s: %s", self.flag_path, exc)

    def clear_pending(self) -> None:
        try:
            self.flag_path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove %s: %s", self.flag_path, exc)


def _sessions_read(state: DreamState, meta: dict[str, object], created: float) -> None:
    """The sessions a proposal read, as its proposal.json records them: the agent's pass processed them; a
    `dream run` pass left them for the agent until a person reviewed its proposal (`reviewed_at`)."""
    reviewed = meta.get("reviewed_at")
    run = meta.get("origin") == "run"
    when = float(reviewed) if run and isinstance(reviewed, int | float) else None
    if not run or when is not None:
        last = when if when is not None else created
        state["last_dream"] = max(state["last_dream"] or 0.0, last) or None
    read = state["run_read"] if run and when is None else state["processed"]
    dream_id, sessions = meta.get("id"), meta.get("sessions")
    for rel in sessions if isinstance(sessions, list) else []:
        read[str(rel)] = {
            "dream": dream_id if isinstance(dream_id, str) else None,
            "at": when if when is not None else created,
        }


__all__ = ["DreamGate", "STATE_FILE", "LOCK_FILE", "PROPOSAL_META", "format_time"]
