"""The thumbnail cache: an in-process LRU."""

import logging
import time
from collections import OrderedDict

# How many thumbnails the cache holds.
LRU_SIZE = 1024

log = logging.getLogger(__name__)


class ThumbCache:
    def __init__(self, size: int = LRU_SIZE) -> None:
        self.size = size
        self.items: OrderedDict[str, bytes] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.last_report = time.monotonic()

    def get(self, key: str) -> bytes | None:
        if key in self.items:
            self.items.move_to_end(key)
            self.hits += 1
            return self.items[key]
        self.misses += 1
        return None

    def put(self, key: str, data: bytes) -> None:
        self.items[key] = data
        self.items.move_to_end(key)
        while len(self.items) > self.size:
            self.items.popitem(last=False)
        self._report()

    def _report(self) -> None:
        # The hit rate goes to the log once a minute.
        now = time.monotonic()
        if now - self.last_report >= 60:
            total = self.hits + self.misses
            log.info("cache hit rate %.2f", self.hits / total if total else 0.0)
            self.last_report = now
