"""What `status` says of Claude Code's auto memory: entries Claude Code never loads, and files nothing points to.

Claude Code loads MEMORY.md into every session only up to 200 lines or 25,000 characters (of its text with the
blank lines at its ends removed), and says nothing of the rest: entries past that limit are lost to every
later session. Files beside it are read only when MEMORY.md points to them (a Markdown link, or the file's
name), so a file it does not name is an orphan nobody reads. Both are reported, with the first few of each,
quoted as data; links that leave the folder are reported and never followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from memory_server.errors import FileSkipped
from memory_server.parse.text import as_data
from memory_server.sessions.auto_memory import INDEX, AutoMemoryFolder, list_files, read
from memory_server.sessions.redact import clean

MAX_LINES = 200  # what Claude Code loads of MEMORY.md (its constants: 200 lines, 25,000 characters)
MAX_CHARS = 25_000
SHOWN = 10
INDEX_MAX_BYTES = 1 << 20
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass
class AutoMemoryReport:
    folder: str
    how: str
    files: int = 0
    index_lines: int = 0
    index_chars: int = 0
    past_limit: list[tuple[int, str]] = field(default_factory=list)  # (line, text) Claude Code never loads
    orphans: list[str] = field(default_factory=list)  # files MEMORY.md does not point to
    outside_links: list[str] = field(default_factory=list)  # links that leave the folder (never followed)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    problem: str | None = None

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.past_limit:
            first = self.past_limit[0][0]
            out.append(
                f"Claude Code's auto memory: {len(self.past_limit)} entries of MEMORY.md are past the "
                f"{MAX_LINES}-line / {MAX_CHARS:,}-character limit Claude Code loads (from line {first}); no "
                "session sees them. Move what matters into topics (/dream can propose it) and shorten the index"
            )
        if self.orphans:
            out.append(
                f"Claude Code's auto memory: {len(self.orphans)} files nothing in MEMORY.md points to: "
                + ", ".join(as_data(o) for o in self.orphans[:5])
                + ("" if len(self.orphans) <= 5 else ", …")
            )
        return out


def loaded_until(lines: list[str]) -> int:
    """How many of MEMORY.md's lines (from the top) Claude Code loads: blank lines at the start do not
    count, then at most MAX_LINES lines and MAX_CHARS characters."""
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    used = 0
    for n in range(start, min(len(lines), start + MAX_LINES)):
        used += len(lines[n]) + (1 if n > start else 0)
        if used > MAX_CHARS:
            return n
    return min(len(lines), start + MAX_LINES)


def _pointed(text: str, files: list[str]) -> tuple[set[str], list[str]]:
    """The files MEMORY.md points to (a relative Markdown link, or the file's path or name written out), and
    the links that leave the folder."""
    targets: set[str] = set()
    outside: list[str] = []
    for m in LINK.finditer(text):
        target = unquote(m.group(1).split("#", 1)[0]).removeprefix("./")
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # a web link, or an anchor in the same file
        if target.startswith(("/", "~")) or ".." in target.split("/"):
            outside.append(target)
            continue
        targets.add(target)
    for rel in files:
        name = rel.rsplit("/", 1)[-1]
        if rel in targets or re.search(r"(?<![\w./-])" + re.escape(rel) + r"(?![\w-])", text):
            targets.add(rel)
        elif "/" in rel and re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w-])", text):
            targets.add(rel)
    return targets, outside


def check(folder: AutoMemoryFolder) -> AutoMemoryReport:
    """The report for one auto memory folder (see the module docstring)."""
    files, left_out = list_files(folder)
    report = AutoMemoryReport(str(folder.path), folder.how, len(files), left_out=left_out)
    others = [f for f in files if f != INDEX]
    if INDEX not in files:
        report.orphans = others
        return report
    try:
        text = read(folder, INDEX, INDEX_MAX_BYTES).text
    except FileSkipped as why:
        report.problem = f"MEMORY.md cannot be read: {why}"
        return report
    lines = text.splitlines()
    report.index_lines, report.index_chars = len(lines), len(text.strip())
    cut = loaded_until(lines)
    report.past_limit = [(n + 1, clean(lines[n]).strip()[:160]) for n in range(cut, len(lines)) if lines[n].strip()]
    pointed, report.outside_links = _pointed(text, others)
    report.orphans = [f for f in others if f not in pointed]
    return report
