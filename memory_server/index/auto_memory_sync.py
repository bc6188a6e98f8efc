"""Indexing Claude Code's auto memory (`sessions/auto_memory.py`): its files as the `auto_memory` layer.

Mixed into the Indexer. A full sync lists the folder's `*.md` files under virtual paths (`auto-memory:<file>`);
each is read again only when its size or time changed, through the folder's confinement, with secrets and
`<private>` text out and every line where it was; its chunks are embedded like a topic's. A file that went
away (or a folder that did) leaves the index at the next full sync. Nothing is written into the folder.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from memory_server.errors import FileSkipped
from memory_server.files.paths import HardLinks
from memory_server.files.root import Layer, MemoryRoot
from memory_server.index.fts import FileRecord, FtsIndex
from memory_server.parse.text import as_data
from memory_server.sessions import auto_memory
from memory_server.settings import Settings

log = logging.getLogger(__name__)


class AutoMemorySync:
    """Mixed into Indexer: the auto memory layer's part of a sync."""

    root: MemoryRoot
    settings: Settings
    fts: FtsIndex
    _auto_folder: auto_memory.AutoMemoryFolder | None = None
    _auto_links: HardLinks | None = None

    def _auto_memory_wanted(self) -> dict[str, Layer]:
        """virtual path -> layer, for every file of this project's auto memory (none when there is none)."""
        self._auto_folder = folder = auto_memory.locate(self.root, self.settings)
        if folder is None:
            return {}
        self._auto_links = HardLinks(folder.path)
        files, _left_out = auto_memory.list_files(folder)
        return {auto_memory.virtual(rel): auto_memory.LAYER for rel in files}

    def _sync_auto_memory(self, virtual: str, old: FileRecord | None, added: list[str], updated: list[str]) -> bool:
        """Index one auto memory file if it changed; False when it was unchanged (or could not be looked at)."""
        folder = self._auto_folder
        if folder is None:
            return False
        rel = auto_memory.relative(virtual)
        try:
            st = os.stat(folder.path / rel)
        except OSError:
            return False  # gone since it was listed: the next full sync removes it
        if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
            return False
        max_bytes = self.settings.index.max_file_bytes
        try:
            content = auto_memory.read(folder, rel, max_bytes, self._auto_links)
        except FileSkipped as why:
            record = FileRecord.skipped(virtual, auto_memory.LAYER, st.st_size, st.st_mtime_ns, str(why))
            self.fts.replace_file(record, [])
            log.warning("skipped %s: %s", as_data(virtual), why)
            (added if old is None else updated).append(virtual)
            return True
        if old is not None and old.sha256 == content.sha256 and old.status != "skipped":
            self.fts.touch_file(virtual, content.size, content.mtime_ns)
            return False
        written = dt.datetime.fromtimestamp(content.mtime_ns / 1e9, dt.UTC).date().isoformat()
        doc = auto_memory.document(rel, content.text, self.settings.index.max_chunk_chars, written)
        record = FileRecord.parsed(virtual, auto_memory.LAYER, content, doc, str(folder.path / rel))
        self.fts.replace_file(record, doc.chunks)
        (added if old is None else updated).append(virtual)
        return True
