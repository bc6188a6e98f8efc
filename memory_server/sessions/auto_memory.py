"""Claude Code's auto memory as a read-only layer (`auto_memory`): below topics, above sessions, written by the model.

Claude Code 2.x lets the model keep notes of its own for each project: `MEMORY.md` (an index, of which Claude
Code loads the first 200 lines / 25,000 characters into every session) and topic files beside it, in
`<Claude Code's folder>/projects/<project>/memory/` (`files/claude_home.py` says which folder). Nobody reviews
what lands there, so this program reads it as its own layer: searchable, marked as the model's (every title
says so), reported on by `status` (`auto_memory_report.py`), and offered to /dream as evidence for a fact at
most, never for a decision.

Where: `auto_memory.dir` (user config or MEMORY_AUTO_MEMORY_DIR), else `autoMemoryDirectory` from Claude
Code's user settings, else `projects/<folder name>/memory` for the repository's main working copy, its git
root or the memory root, the first that exists. `auto_memory.enabled: false` turns the layer off.

Confinement, the one exception to "nothing outside the root" besides transcripts: only `*.md` files under
that folder are read, each through `files/reading.read_memory_file` with the folder as its root (a symlink
that leads out of it, a hard link with a name elsewhere, a file that is not regular, too large or binary is
refused), folders are not followed through symlinks, and a path with `..` or an absolute one is refused.
Nothing is ever written there. Paths are virtual: `auto-memory:<path in the folder>`, lines as in the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from memory_server.errors import FileSkipped, NotFoundError, PathRefusedError
from memory_server.files.claude_home import expand_home, git_roots, project_folder, user_settings
from memory_server.files.paths import HardLinks, confine, is_inside
from memory_server.files.reading import FileText, read_memory_file
from memory_server.files.root import Layer, MemoryRoot
from memory_server.parse.markdown import Document, parse_document
from memory_server.sessions.redact import clean_keeping_lines
from memory_server.settings import Settings

PREFIX = "auto-memory:"
LAYER: Layer = "auto_memory"
INDEX = "MEMORY.md"
WRITTEN_BY = "Claude Code's auto memory (written by the model)"
MAX_FILES = 2000
MAX_DEPTH = 4
STATE_DIR = ".memory"  # never inside an auto memory folder; read_memory_file refuses links into it


@dataclass(frozen=True)
class AutoMemoryFolder:
    """Where this project's auto memory is, and how that was decided."""

    path: Path  # resolved
    how: str


def candidates(root: MemoryRoot, settings: Settings) -> list[tuple[Path, str]]:
    """Every folder the auto memory may be in, in the order tried, each with how it was named."""
    if settings.auto_memory.dir:
        return [(Path(settings.auto_memory.dir).expanduser(), "the auto_memory.dir setting")]
    claude = user_settings()
    if claude.auto_memory_directory:
        return [(expand_home(claude.auto_memory_directory), f"autoMemoryDirectory in {claude.source}")]
    bases = [*git_roots(root.path), root.path]
    out: list[tuple[Path, str]] = []
    for base in dict.fromkeys(bases):
        out.append((project_folder(base) / "memory", f"Claude Code's folder for {base}"))
    return out


def locate(root: MemoryRoot, settings: Settings) -> AutoMemoryFolder | None:
    """This project's auto memory folder, or None (turned off, none of the candidates exists, or the memory root
    is that folder itself: a root made in Claude Code's memory folder reads its files as topics already)."""
    if not settings.auto_memory.enabled:
        return None
    for path, how in candidates(root, settings):
        if path.is_dir():
            real = path.resolve()
            return None if is_inside(root.path, real) else AutoMemoryFolder(real, how)
    return None


def list_files(folder: AutoMemoryFolder) -> tuple[list[str], list[tuple[str, str]]]:
    """(the `*.md` files under the folder, as POSIX paths relative to it, sorted; what was left out and why).
    Symlinked folders are not followed; hidden names are skipped; at most MAX_FILES files, MAX_DEPTH deep."""
    found: list[str] = []
    left_out: list[tuple[str, str]] = []
    pending: list[tuple[Path, int]] = [(folder.path, 0)]
    while pending:
        current, depth = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            left_out.append((_rel(folder, current) + "/", f"cannot be listed ({exc.strerror})"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = _rel(folder, Path(entry.path))
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 < MAX_DEPTH:
                    pending.append((Path(entry.path), depth + 1))
            elif entry.is_symlink() and entry.is_dir():
                left_out.append((rel + "/", "a symlinked folder; not followed"))
            elif entry.name.endswith(".md"):
                found.append(rel)
    found.sort()
    if len(found) > MAX_FILES:
        left_out.append((f"{len(found) - MAX_FILES} files", f"past the first {MAX_FILES}; not read"))
        found = found[:MAX_FILES]
    return found, left_out


def _rel(folder: AutoMemoryFolder, path: Path) -> str:
    return path.relative_to(folder.path).as_posix() if path != folder.path else "."


def virtual(rel: str) -> str:
    return PREFIX + rel


def relative(virtual_path: str) -> str:
    """The path inside the folder that a virtual path names; PathRefusedError for anything else."""
    if not virtual_path.startswith(PREFIX):
        raise PathRefusedError(f"{virtual_path[:200]!r} is not an auto memory path (auto-memory:<file>.md)")
    rel = virtual_path[len(PREFIX) :]
    parts = rel.split("/")
    if not rel.endswith(".md") or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise PathRefusedError(f"{virtual_path[:200]!r} is not a file of Claude Code's auto memory; use a hit's path")
    return rel


def resolve(folder: AutoMemoryFolder, virtual_path: str) -> Path:
    """The real file a virtual path names, confined to the folder (no `..`, no symlink or hard link out)."""
    return confine(folder.path, relative(virtual_path))


def read(folder: AutoMemoryFolder, rel: str, max_bytes: int, links: HardLinks | None = None) -> FileText:
    """One auto memory file read for indexing (FileSkipped with the reason when it cannot be)."""
    try:
        return read_memory_file(folder.path, rel, max_bytes=max_bytes, state_dir=STATE_DIR, links=links)
    except FileSkipped as why:
        if "link" in str(why):  # the root's wording would say to copy the file into the memory root
            raise FileSkipped("a link to a file outside Claude Code's auto memory folder; never read") from None
        raise


def document(rel: str, text: str, max_chunk_chars: int, written: str | None = None) -> Document:
    """The file as a document of the auto_memory layer (secrets and `<private>` text out, every line where it
    was), every title saying the model wrote it; dated `written` (the day the file last changed) unless its
    front matter gives a date."""
    doc = parse_document(virtual(rel), LAYER, clean_keeping_lines(text), max_chunk_chars=max_chunk_chars)
    name = doc.meta.get("title") or doc.meta.get("name") or doc.title
    title = f"{WRITTEN_BY}: {str(name).strip()}"
    doc.title, doc.date = title, doc.date or written
    doc.chunks = [replace(c, title=title, date=c.date or written) for c in doc.chunks]
    return doc


def require(root: MemoryRoot, settings: Settings) -> AutoMemoryFolder:
    """The folder, or NotFoundError saying where it was looked for."""
    folder = locate(root, settings)
    if folder is None:
        tried = "; ".join(f"{p} ({how})" for p, how in candidates(root, settings))
        raise NotFoundError(
            f"this project has no Claude Code auto memory (looked in: {tried or 'nowhere: turned off'})"
        )
    return folder
