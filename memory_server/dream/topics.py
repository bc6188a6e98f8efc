"""The topics a dream may propose changes to, and which section of a topic a statement belongs in.

Topic files are read once per dream (bytes, sha256, lines with their endings kept) so the proposal is made
against exactly the text whose hash it records. An item the agent aimed at a topic without naming a
section is placed by `place`: a section that shares enough content words with it and, when the Memory has
an embedding model, is also close enough in meaning; else it goes to a `## Updates` section.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass

import numpy as np

from memory_server.dream.recall import content_words
from memory_server.errors import MemoryServerError
from memory_server.files.paths import HardLinks
from memory_server.files.reading import sha256_bytes
from memory_server.files.root import LESSONS_TOPIC, MEMORY_INDEX, MemoryRoot
from memory_server.index.embedder import Embedder
from memory_server.parse.frontmatter import split_front_matter
from memory_server.parse.markdown import FENCE, iso_date
from memory_server.settings import DreamSettings

log = logging.getLogger(__name__)

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
LESSONS = LESSONS_TOPIC
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
    tag_list = [str(t) for t in tags] if isinstance(tags, list) else [str(tags)]
    return TopicFile(path, raw, text, lines, title, date, tag_list, body_start)


def load_topics(root: MemoryRoot) -> tuple[dict[str, TopicFile], TopicFile | None]:
    """Every readable topic file (not through a symlink, nor a hard link with a name outside the root, as for
    indexing), and MEMORY.md apart."""
    topics: dict[str, TopicFile] = {}
    memory_md = None
    links = HardLinks(root.path)
    for rel, layer in root.memory_files():
        path = root.path / rel
        if layer != "topic" or path.is_symlink() or not links.all_inside(path.stat()):
            continue
        topic = load_topic(rel, path.read_bytes(), path.stat().st_mtime)
        if topic is None:
            continue
        if rel == MEMORY_INDEX:
            memory_md = topic
        else:
            topics[rel] = topic
    return topics, memory_md


def headings(topic: TopicFile) -> list[tuple[int, int, str]]:
    """(line index, level, text) of the body's headings, skipping fenced code."""
    out, fence = [], None
    for i in range(topic.body_start, len(topic.lines)):
        line = topic.lines[i].rstrip("\r\n")
        m = FENCE.match(line)
        if m:
            fence = None if fence and m.group(1)[0] == fence else fence or m.group(1)[0]
            continue
        h = HEADING.match(line) if fence is None else None
        if h:
            out.append((i, len(h.group(1)), h.group(2).strip()))
    return out


def heading_key(text: str) -> str:
    """A heading as compared when an item names it: no backticks or emphasis, case and spacing aside."""
    return " ".join(re.sub(r"[`*_]", "", text).casefold().split())


def sections(topic: TopicFile) -> list[tuple[str, str]]:
    """(heading, its own text up to the next heading) for each heading of the body."""
    heads = headings(topic)
    ends = [i for i, _level, _text in heads[1:]] + [len(topic.lines)]
    return [(text, "".join(topic.lines[i + 1 : end])) for (i, _level, text), end in zip(heads, ends, strict=True)]


def place(statement: str, topic: TopicFile, settings: DreamSettings, embedder: Embedder | None = None) -> str:
    """The heading of the section of `topic` a statement belongs to, or "" (none matches well enough).

    Conservative: a section qualifies only when it holds `topic_match_min` of the statement's content
    words and, when the Memory has an embedding model, is also `topic_semantic_min` close in meaning. Among
    those, the closest in meaning wins (with a model), else the one sharing the most words. An item no
    section qualifies for goes to a clearly named spot (`edits.section_for`), never the nearest guess.
    """
    found = sections(topic)
    wanted = topic_words(statement)
    if not found or not wanted:
        return ""
    cosines: list[float] | None = None
    if embedder is not None:
        try:
            vecs = np.asarray(embedder.embed([statement, *(f"{h}\n{t}" for h, t in found)]), dtype=np.float32)
            cosines = [float(vecs[0] @ v) for v in vecs[1:]]
        except MemoryServerError as exc:
            log.warning("dream: the embedding model failed (%s); placing items by keywords only", exc)
    best, best_score = "", 0.0
    for n, (head, text) in enumerate(found):
        overlap = len(wanted & topic_words(f"{head} {text}")) / len(wanted)
        if overlap < settings.topic_match_min or overlap == 0.0:
            continue
        if cosines is not None and cosines[n] < settings.topic_semantic_min:
            continue
        score = cosines[n] + 1.0 if cosines is not None else overlap
        if score > best_score:
            best, best_score = head, score
    return best
