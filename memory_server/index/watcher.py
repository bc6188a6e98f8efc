"""Watch topics/, sessions/ and MEMORY.md, and hand debounced batches of changed paths to a callback.

Only those places are watched (a memory root may be a whole repository, with a .venv of thousands of
folders). A create, edit, delete or rename (including an editor's save-by-rename: write a temp file, then
rename it over the original) each yields the memory path that changed; a folder moved or deleted yields
None, meaning "look at everything".
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memory_server.files.root import MEMORY_INDEX, SESSIONS_DIR, TOPICS_DIR, MemoryRoot, layer_of

log = logging.getLogger(__name__)

OnChange = Callable[[set[str] | None], None]


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if event.is_directory:
            if event.event_type in ("moved", "deleted", "created"):
                self.watcher.note(None)
                self.watcher.ensure_watches()
            return
        for raw in paths:
            if not raw:
                continue
            path = os.fsdecode(raw)
            try:
                rel = os.path.relpath(path, self.watcher.root.path).replace(os.sep, "/")
            except ValueError:
                continue
            if layer_of(rel) is not None:
                self.watcher.note(rel)
            elif rel in (TOPICS_DIR, "sessions", SESSIONS_DIR):
                self.watcher.ensure_watches()


class Watcher:
    """Debounces file events: calls `on_change(paths)` once events have been quiet for `debounce` seconds
    (and at most `max_delay` seconds after the first one)."""

    def __init__(self, root: MemoryRoot, on_change: OnChange, debounce: float = 0.3, max_delay: float = 1.0) -> None:
        self.root = root
        self.on_change = on_change
        self.debounce = debounce
        self.max_delay = max_delay
        self._observer = Observer()
        self._handler = _Handler(self)
        self._watched: set[str] = set()
        self._pending: set[str] | None = set()
        self._first = 0.0
        self._last = 0.0
        self._dirty = False
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-watch-debounce", daemon=True)

    def start(self) -> None:
        self.ensure_watches()
        self._observer.daemon = True
        self._observer.start()
        self._thread.start()

    def stop(self, timeout: float = 1.5) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        try:
            self._observer.stop()
            self._observer.join(timeout)
        except RuntimeError:
            pass
        if self._thread.is_alive():
            self._thread.join(timeout)

    def ensure_watches(self) -> None:
        """Watch the root itself (not recursively: MEMORY.md, and topics/ or sessions/ appearing) and the
        memory folders (recursively) that exist now."""
        wanted = [(str(self.root.path), False)]
        for sub in (self.root.topics_dir, self.root.path / "sessions"):
            if sub.is_dir():
                wanted.append((str(sub), True))
        for path, recursive in wanted:
            if path in self._watched:
                continue
            try:
                self._observer.schedule(self._handler, path, recursive=recursive)
                self._watched.add(path)
            except (OSError, RuntimeError) as exc:
                log.warning("cannot watch %s: %s", path, exc)

    def note(self, rel: str | None) -> None:
        with self._cond:
            now = time.monotonic()
            if not self._dirty:
                self._first = now
                self._dirty = True
            self._last = now
            if rel is None or self._pending is None:
                self._pending = None
            else:
                self._pending.add(rel)
            self._cond.notify_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                while not self._dirty and not self._stop.is_set():
                    self._cond.wait(0.5)
                if self._stop.is_set():
                    return
                now = time.monotonic()
                due = min(self._last + self.debounce, self._first + self.max_delay)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                batch, self._pending, self._dirty = self._pending, set(), False
            try:
                self.on_change(batch)
            except Exception:
                log.exception("re-indexing after a file change failed; will retry on the next change")


__all__ = ["Watcher", "MEMORY_INDEX"]
