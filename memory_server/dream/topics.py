"""The topics a dream may propose changes to, and how a session statement finds its topic.

Topic files are read once per dream (bytes, sha256, lines with their endings kept) so the proposal is made
against exactly the text whose hash it records. Matching goes through the indices: the keyword index
(FTS5, layer "topic") finds topics that contain a term literally; meaning-based search (semantic fused with
keywords when the Memory has an embedder, keyword-only otherwise) finds the section a statement belongs
to, accepted when it shares enough content words (or, with an embedder, is close enough in meaning).

Searches here go to the search functions directly, not through `Memory.search_*`, so a dream's own
look-ups never land in the recall log.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_server.dream.recall import content_words
from memory_server.errors import MemoryServerError, QueryError
from memory_server.files.reading import sha256_bytes
from memory_server.files.root import MEMORY_INDEX, TOPICS_DIR, MemoryRoot
from memory_server.parse.frontmatter import split_front_matter
from memory_server.parse.markdown import iso_date
from memory_server.search.hybrid import search_exact, search_hybrid, validate
from memory_server.settings import DreamSettings

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
LESSONS = f"{TOPICS_DIR}/lessons.md"
# Words that say "this is a decision" but not what it is about: they must not decide where it goes.
FILLER = frozenset(
    "decided decide decision decisions always never switched switch switching from now going forward use uses "
    "using used instead rather than will should must we us our let".split()
)


def split_keep(text: str) -> list[str]:
    """Lines with their endings kept; only \\n ends a line (as for git), so "".join() gives the text back."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def topic_words(text: str) -> frozenset[str]:
    return frozenset(w for w in content_words(text) if w not in FILLER)


@dataclass
class TopicFile:
    path: str
    raw: bytes
    text: str
    lines: list[str]
    title: str
    date: str | None  # front-matter `updated` (or `date`), else the file's modification date
    tags: list[str]
    body_start: int  # index of the first line after the front matter

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.raw)

    @property
    def eol(self) -> str:
        return "\r\n" if sum(ln.endswith("\r\n") for ln in self.lines) * 2 > len(self.lines) else "\n"


def load_topic(path: str, raw: bytes, mtime: float) -> TopicFile | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None  # never propose edits to a file we cannot read back byte for byte
    if text.startswith("\ufeff") or "\x00" in text:
        return None
    lines = split_keep(text)
    meta, body_start, _ = split_front_matter([ln.rstrip("\r\n") for ln in lines])
    updated = iso_date(meta.get("updated")) or iso_date(meta.get("date"))
    modified = dt.datetime.fromtimestamp(mtime, dt.UTC).date().isoformat() if mtime else None
    date = updated or modified  # `updated` when the front matter has it: a git checkout resets mtimes
    tags = meta.get("tags") or []
    title = str(meta.get("title") or "").strip()
    if not title:
        for i in range(body_start, len(lines)):
            m = HEADING.match(lines[i].rstrip("\r\n"))
            if m and len(m.group(1)) == 1:
                title = m.group(2).strip()
                break
    title = title or path.rsplit("/", 1)[-1][:-3].replace("-", " ")
    return TopicFile(path, raw, text, lines, title, date, [str(t) for t in tags] if isinstance(tags, list) else [str(tags)], body_start)


def load_topics(root: MemoryRoot) -> tuple[dict[str, TopicFile], TopicFile | None]:
    """Every readable topic file (not through a symlink), and MEMORY.md apart."""
    topics: dict[str, TopicFile] = {}
    memory_md = None
    for rel, layer in root.memory_files():
        path = root.path / rel
        if layer != "topic" or path.is_symlink():
            continue
        topic = load_topic(rel, path.read_bytes(), path.stat().st_mtime)
        if topic is None:
            continue
        if rel == MEMORY_INDEX:
            memory_md = topic
        else:
            topics[rel] = topic
    return topics, memory_md


def semantic_usable(memory: Any) -> bool:
    """Whether a Memory can match by meaning: it has an embedder and an open vector index."""
    vectors = getattr(memory, "vectors", None)
    return getattr(memory, "embedder", None) is not None and vectors is not None and bool(getattr(vectors, "is_open", False))


@dataclass
class Section:
    path: str
    heading: str  # last heading of the hit's heading path ("" for the preamble)
    start_line: int
    end_line: int
    match: float  # content-word overlap, or cosine similarity when that is higher


@dataclass
class TopicFinder:
    """Find topics for a statement through the Memory's indices (see the module docstring)."""

    memory: Any  # memory_server.api.Memory
    topics: dict[str, TopicFile]
    settings: DreamSettings
    semantic: bool = False
    notes: list[str] = field(default_factory=list)

    def files_with_term(self, term: str) -> list[str]:
        """Topic files (topics/*.md, not lessons) whose text holds `term` literally, by the keyword index."""
        search = self.memory.settings.search
        try:
            q = validate(term, search.max_k, ["topic"], None, None, search)
        except QueryError:
            return []
        hits = search_exact(self.memory.fts, q, search)
        found = {h.path for h in hits if h.match in ("phrase", "substring")}
        return sorted(p for p in found if p in self.topics and p != LESSONS)

    def best_section(self, statement: str) -> Section | None:
        """The topic section a statement belongs to, or None when no topic is close enough."""
        wanted = topic_words(statement)
        if not wanted:
            return None
        try:
            hits = self._search(statement)
        except QueryError:
            return None  # nothing searchable in the statement
        except MemoryServerError as exc:
            if not self.semantic:
                return None
            self.notes.append(f"semantic search failed ({exc}); matched topics by keywords only")
            self.semantic = False
            try:
                hits = self._search(statement)
            except MemoryServerError:
                return None
        best: Section | None = None
        texts = []
        for hit in hits:
            topic = self.topics.get(hit.path)
            if topic is None or hit.path == LESSONS:
                continue
            body = "".join(topic.lines[hit.start_line - 1 : hit.end_line])
            texts.append((hit, body))
        cosines = self._cosines(statement, [f"{h.title} {h.heading}\n{b}" for h, b in texts])
        for (hit, body), cos in zip(texts, cosines):
            have = topic_words(f"{body} {hit.title} {hit.heading}")
            overlap = len(wanted & have) / len(wanted)
            ok = overlap >= self.settings.topic_match_min or cos >= self.settings.topic_semantic_min
            if ok and (best is None or max(overlap, cos) > best.match):
                heading = hit.heading.split(" > ")[-1] if hit.heading else ""
                best = Section(hit.path, heading, hit.start_line, hit.end_line, round(max(overlap, cos), 4))
        return best

    def _search(self, statement: str) -> list:
        search, ranking = self.memory.settings.search, self.memory.settings.ranking
        q = validate(statement, 8, ["topic"], None, None, search)
        vectors = self.memory.vectors if self.semantic else None
        embedder = self.memory.embedder if self.semantic else None
        return search_hybrid(self.memory.fts, vectors, embedder, q, search, ranking)[0]

    def _cosines(self, statement: str, texts: list[str]) -> list[float]:
        if not self.semantic or not texts or self.memory.embedder is None:
            return [0.0] * len(texts)
        try:
            vecs = np.asarray(self.memory.embedder.embed([statement, *texts]), dtype=np.float32)
        except MemoryServerError as exc:
            self.notes.append(f"the embedding model failed ({exc}); matched topics by keywords only")
            self.semantic = False
            return [0.0] * len(texts)
        return [round(float(vecs[0] @ v), 4) for v in vecs[1:]]
