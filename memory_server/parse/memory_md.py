"""MEMORY.md upkeep: is the table of contents short enough, complete, and free of dead links?

Claude Code loads a memory folder's `MEMORY.md` at the start of every session, but only its first 200 lines
or 25,000 bytes (the same limits its own memory consolidation keeps to); anything past that is silently
not seen. `MEMORY.md` is meant to be pointers, not content: one line per topic.

`check_memory_index(root, topic_paths)` reads `<root>/MEMORY.md` and reports:

- `lines`, `bytes`, and `too_long` (over 200 lines or over 25,000 bytes);
- `unlisted_topics`: topic files that `MEMORY.md` neither links to nor names;
- `broken_links`: local links in `MEMORY.md` whose file does not exist, each as {"line", "target"}.

A pure check: it reads `MEMORY.md` and asks whether link targets exist; it never writes. Links inside fenced
code blocks and inline code are not links. Web links (`https:`, `mailto:`...) and in-page anchors (`#...`)
are not checked. A topic counts as listed when a link resolves to it, or when its root-relative path
appears in the text (for example in backticks).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NotRequired  # pydantic validates these only on Python 3.12+ otherwise
from urllib.parse import unquote

from typing_extensions import TypedDict

from memory_server.files.root import MEMORY_INDEX, TOPICS_DIR, MemoryRoot

MAX_LINES = 200
MAX_BYTES = 25_000


class BrokenLink(TypedDict):
    line: int
    target: str


class IndexLimits(TypedDict):
    lines: int
    bytes: int


class MemoryIndexReport(TypedDict):
    """What `check_memory_index` found (memory_status shows it, with the lists cut to their first few)."""

    exists: bool
    lines: int
    bytes: int
    too_long: bool
    unlisted_topics: list[str]
    broken_links: list[BrokenLink]
    limits: IndexLimits
    unlisted_count: NotRequired[int]  # set when the list above is cut to its first few
    broken_count: NotRequired[int]


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target): the target, in <angle brackets> or bare with balanced parentheses.
_INLINE_LINK = re.compile(r"\]\(\s*(?:<([^<>\n]*)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))+))")
# [id]: target "title"
_REFERENCE_DEF = re.compile(r"^ {0,3}\[(?:[^\]\\]|\\.)+\]:\s*(?:<([^<>\n]*)>|(\S+))")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _line_count(text: str) -> int:
    """Lines as an editor shows them: a final newline does not start another line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _link_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, the line with inline code blanked) for every line outside fenced code blocks."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = None
            continue
        out.append((number, _CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)))
    return out


def _links(text: str) -> list[tuple[int, str]]:
    """(line, target) for each inline link, image and reference definition, in order."""
    found: list[tuple[int, str]] = []
    for number, line in _link_lines(text):
        ref = _REFERENCE_DEF.match(line)
        if ref:
            found.append((number, ref.group(1) if ref.group(1) is not None else ref.group(2)))
            continue
        for m in _INLINE_LINK.finditer(line):
            found.append((number, m.group(1) if m.group(1) is not None else m.group(2)))
    return found


def _local_path(target: str, base: Path) -> Path | None:
    """The file a link target names, or None when it is not a local file link (web link, anchor, empty)."""
    target = target.strip()
    if not target or target.startswith("#") or target.startswith("//") or _SCHEME.match(target):
        return None
    target = re.sub(r"\\(.)", r"\1", target)  # Markdown backslash escapes
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return None
    target = unquote(target)
    path = Path(os.path.expanduser(target))
    return path if path.is_absolute() else base / path


def _real(path: Path) -> str | None:
    try:
        return os.path.realpath(path)
    except OSError:
        return None


def _mentions(text: str, relpath: str) -> bool:
    """True when `relpath` appears in the text as a whole path (optionally as ./relpath)."""
    if relpath not in text:
        return False  # the common case, without compiling a pattern
    pattern = r"(?<![\w/.-])(?:\./)?" + re.escape(relpath) + r"(?![\w/-])"
    return re.search(pattern, text) is not None


def find_topic_paths(root_path: Path) -> list[str]:
    """The root-relative paths of the topic files (what the store indexes under topics/), sorted."""
    return sorted(
        rel
        for rel, layer in MemoryRoot(root_path).memory_files()
        if layer == "topic" and rel.startswith(TOPICS_DIR + "/")
    )


def check_memory_index(root_path: Path, topic_paths: list[str]) -> MemoryIndexReport:
    """Check `<root_path>/MEMORY.md` against Claude Code's load limits and the topics that exist.

    `topic_paths` are the topic files, relative to the root (as `topics/<slug>.md`) or absolute.
    Returns {"lines", "bytes", "too_long", "unlisted_topics", "broken_links", "exists", "limits"}:
    `broken_links` holds {"line": n, "target": "..."} for each local link to a missing file, and
    `unlisted_topics` the given paths (as given) that MEMORY.md neither links to nor names.
    A missing MEMORY.md has `exists` false and lists every topic as unlisted.
    """
    root = Path(root_path).expanduser()
    index = root / MEMORY_INDEX
    topics = [t for t in dict.fromkeys(topic_paths) if t and Path(t).as_posix() != MEMORY_INDEX]
    report: MemoryIndexReport = {
        "exists": False,
        "lines": 0,
        "bytes": 0,
        "too_long": False,
        "unlisted_topics": sorted(topics),
        "broken_links": [],
        "limits": {"lines": MAX_LINES, "bytes": MAX_BYTES},
    }
    try:
        raw = index.read_bytes()
    except OSError:
        return report
    text = raw.decode("utf-8", errors="replace")
    lines = _line_count(text)
    report["exists"], report["lines"], report["bytes"] = True, lines, len(raw)
    report["too_long"] = lines > MAX_LINES or len(raw) > MAX_BYTES

    linked: list[Path] = []
    broken: list[BrokenLink] = []
    for number, target in _links(text):
        path = _local_path(target, root)
        if path is None:
            continue
        linked.append(path)
        if not path.exists():
            broken.append({"line": number, "target": target})
    report["broken_links"] = broken

    unlisted = []
    # Each link resolved once (not once per topic): status stays fast on a root of thousands of topics.
    linked_norm = {os.path.normpath(p) for p in linked}
    linked_real = {r for r in map(_real, linked) if r is not None}
    for topic in topics:
        topic_file = Path(topic) if Path(topic).is_absolute() else root / topic
        if os.path.normpath(topic_file) in linked_norm or _real(topic_file) in linked_real:
            continue
        rel = Path(topic).as_posix()
        if Path(topic).is_absolute():
            try:
                rel = topic_file.relative_to(root).as_posix()
            except ValueError:
                pass
        if _mentions(text, rel):
            continue
        unlisted.append(topic)
    report["unlisted_topics"] = sorted(unlisted)
    return report


def memory_index_notes(report: MemoryIndexReport) -> list[str]:
    """One line per problem in a `check_memory_index` report, saying what to do (empty when all is well)."""
    notes: list[str] = []
    if not report.get("exists"):
        notes.append("MEMORY.md is missing: run `memory-server init` to create it (nothing existing is touched)")
        return notes
    if report.get("too_long"):
        limits = report.get("limits", {"lines": MAX_LINES, "bytes": MAX_BYTES})
        notes.append(
            f"MEMORY.md is {report['lines']} lines and {report['bytes']} bytes; Claude Code loads only the first "
            f"{limits['lines']} lines or {limits['bytes']} bytes: keep one line per topic and move detail into topics/"
        )
    unlisted = report.get("unlisted_topics") or []
    if unlisted:
        shown = ", ".join(unlisted[:10]) + (f" and {len(unlisted) - 10} more" if len(unlisted) > 10 else "")
        notes.append(f"MEMORY.md does not list {len(unlisted)} topic(s): {shown}; add a line for each")
    for link in report.get("broken_links") or []:
        notes.append(f"MEMORY.md line {link['line']} links to {link['target']}, which does not exist")
    return notes
