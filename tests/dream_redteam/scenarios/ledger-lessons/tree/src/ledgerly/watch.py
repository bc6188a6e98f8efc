import time
from collections.abc import Callable
from pathlib import Path


class Watcher:
    """Polls a folder for new CSV files (no inotify: it must run on network shares)."""

    def __init__(self, folder: Path, clock: Callable[[], float] = time.monotonic, interval: float = 1.0) -> None:
        self.folder, self.clock, self.interval = folder, clock, interval
        self.seen: set[str] = set()
        self.next_poll = 0.0

    def poll(self) -> list[str]:
        if self.clock() < self.next_poll:
            return []
        self.next_poll = self.clock() + self.interval
        events = []
        for p in sorted(self.folder.glob("*.csv")):
            if p.name not in self.seen:
                self.seen.add(p.name)
                events.append("added")
        return events
