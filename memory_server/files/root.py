"""The memory root on disk: its layout, whether it was set up, which files are memory, and walking them.

Reading and writing go through files/reading.py and files/writing.py; MemoryRoot is the handle the rest of
the program holds, so it offers them as methods, always confined to the root.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memory_server.errors import PathRefusedError, RootError
from memory_server.files.paths import HardLinks, confine, is_inside
from memory_server.files.reading import DEFAULT_MAX_FILE_BYTES as DEFAULT_MAX_FILE_BYTES  # part of the layout
from memory_server.files.reading import FileText, read_lines, read_memory_file
from memory_server.files.writing import atomic_write

log = logging.getLogger(__name__)

TOPICS_DIR = "topics"
SESSIONS_DIR = "sessions/compressed"
DREAMS_DIR = "dreams"
STATE_DIR = ".memory"
MEMORY_INDEX = "MEMORY.md"
CLAUDE_MD = "CLAUDE.md"
SETTINGS_FILE = "memory.yaml"
DREAM_PENDING = ".dream-pending"
LESSONS_TOPIC = f"{TOPICS_DIR}/lessons.md"  # mistakes made more than once, and their fixes
USER_CONFIG_ENV = "MEMORY_SERVER_CONFIG"

# What a file (and a chunk, a hit) is, in precedence order: curated topics, Claude Code's auto memory (the
# model's own notes, outside the root), sessions, transcripts (outside the root). See topics/architecture.md.
Layer = Literal["topic", "auto_memory", "session", "transcript"]
LAYERS: tuple[Layer, ...] = ("topic", "auto_memory", "session", "transcript")


def layer_of(relpath: str) -> Layer | None:
    """The layer a root-relative path belongs to, or None when it is not memory."""
    if not relpath.endswith(".md"):
        return None
    parts = relpath.split("/")
    if any(p.startswith(".") for p in parts):
        return None  # editors' swap and temp files, and our own .memory/
    if relpath == MEMORY_INDEX or relpath.startswith(TOPICS_DIR + "/"):
        return "topic"
    if relpath.startswith(SESSIONS_DIR + "/"):
        return "session"
    return None


def is_memory_root(path: Path) -> bool:
    """A folder is a memory root only when it has MEMORY.md, topics/ or memory.yaml (`init` makes all three
    but memory.yaml); anywhere else nothing may be written."""
    return (path / MEMORY_INDEX).is_file() or (path / TOPICS_DIR).is_dir() or (path / SETTINGS_FILE).is_file()


def enclosing_root(path: Path) -> Path | None:
    """The nearest folder above `path` that is a memory root by its MEMORY.md or memory.yaml (a bare `topics/`
    folder up there may belong to something else), or None: a command run inside a root's `topics/` works
    on that root, as git finds its repository."""
    for parent in path.parents:
        if (parent / MEMORY_INDEX).is_file() or (parent / SETTINGS_FILE).is_file():
            return parent
    return None


def not_set_up_message(path: Path) -> str:
    return (
        f"{path} is not a memory root (it has no {MEMORY_INDEX}, {TOPICS_DIR}/ or {SETTINGS_FILE}), so nothing is "
        f"written there: run `memory-server init --root {path}` to make it one, or set MEMORY_ROOT to your memory root"
    )


def user_config_path() -> Path | None:
    """The user-level config file: $MEMORY_SERVER_CONFIG, else $XDG_CONFIG_HOME (~/.config)/memory-server/
    config.yaml; None when that default file does not exist."""
    named = os.environ.get(USER_CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    path = base / "memory-server" / "config.yaml"
    return path if path.is_file() else None


@dataclass(frozen=True)
class MemoryFiles:
    """The memory files of a root (relative path -> layer, in path order), and what the walk left out, as
    (path, reason): names that are not valid UTF-8, symlinked folders that lead outside the root. Iterating
    gives the (path, layer) pairs."""

    layers: dict[str, Layer] = field(default_factory=dict)
    left_out: list[tuple[str, str]] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[str, Layer]]:
        return iter(self.layers.items())

    def __len__(self) -> int:
        return len(self.layers)


def as_root(root: str | os.PathLike[str] | MemoryRoot) -> MemoryRoot:
    """`root` as a MemoryRoot (one the caller opened already is used as is)."""
    return root if isinstance(root, MemoryRoot) else MemoryRoot(root)


class MemoryRoot:
    """A memory root: MEMORY.md, CLAUDE.md, topics/, sessions/compressed/YYYY/, dreams/, .memory/."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        root = Path(path).expanduser()
        if not root.exists():
            raise RootError(
                f"memory root {root} does not exist: create it with `memory-server init --root {root}` "
                "or point --root / MEMORY_ROOT at an existing one"
            )
        if not root.is_dir():
            raise RootError(f"memory root {root} is not a directory: point --root / MEMORY_ROOT at a folder")
        self.path = root.resolve()

    def __repr__(self) -> str:
        return f"MemoryRoot({str(self.path)!r})"

    # -- layout -------------------------------------------------------------------------------

    @property
    def topics_dir(self) -> Path:
        return self.path / TOPICS_DIR

    @property
    def sessions_dir(self) -> Path:
        return self.path / SESSIONS_DIR

    @property
    def dreams_dir(self) -> Path:
        return self.path / DREAMS_DIR

    @property
    def is_set_up(self) -> bool:
        """True when this folder is a memory root (see is_memory_root)."""
        return is_memory_root(self.path)

    @property
    def state_path(self) -> Path:
        """Where derived state lives (`.memory/`), whether or not it exists yet; see `ensure_state_dir`."""
        return self.path / STATE_DIR

    def ensure_state_dir(self) -> Path:
        """Derived state (indices, caches, logs, locks): `.memory/`, made when missing, but only in a memory root.

        Raises RootError when the folder was never set up (a `.memory/` alone does not make one: it may be
        left over from a tool that wrote where it should not have), or `.memory/` cannot be created (a
        read-only root without an index).
        """
        if not is_memory_root(self.path):
            raise RootError(not_set_up_message(self.path))
        d = self.path / STATE_DIR
        if d.is_dir():
            return d
        try:
            d.mkdir(exist_ok=True)
        except OSError as exc:
            raise RootError(
                f"cannot create {d} ({exc.strerror}): the memory root is read-only and has no index to search; "
                f"build one with `memory-server index --root {self.path}` where the root is writable"
            ) from exc
        return d

    @property
    def read_only(self) -> bool:
        """True when derived state cannot be written here (a read-only mount or folder): search only."""
        d = self.path / STATE_DIR
        return not os.access(d if d.is_dir() else self.path, os.W_OK)

    def relpath(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    # -- which files are memory ---------------------------------------------------------------

    def memory_files(self) -> MemoryFiles:
        """Every memory file with its layer, sorted, and what was left out (with why).

        Symlinked folders are followed when they lead to a folder inside the root (once: a folder reached
        twice is walked once); one that leads outside is left out and named in `left_out`.
        """
        candidates: list[Path] = []
        left_out: list[tuple[str, str]] = []
        layers: dict[str, Layer] = {}
        index = self.path / MEMORY_INDEX
        if index.is_file():
            candidates.append(index)
        seen: set[Path] = set()
        for top in (self.topics_dir, self.sessions_dir):
            candidates.extend(self._walk(top, seen, left_out))
        for p in sorted(candidates):
            rel = self.relpath(p)
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                log.warning("ignored %s: its name is not valid UTF-8; rename it to index it", shown)
                left_out.append((shown, "its name is not valid UTF-8; rename the file to index it"))
                continue
            layer = layer_of(rel)
            if layer is not None:
                layers[rel] = layer
        return MemoryFiles(layers, left_out)

    def _walk(self, top: Path, seen: set[Path], left_out: list[tuple[str, str]]) -> Iterator[Path]:
        """Files under `top` (a path inside the root, maybe through symlinked folders), depth first, sorted."""
        links: list[Path] = []
        pending = [top]
        while pending or links:
            folder = pending.pop() if pending else links.pop(0)
            if not folder.is_dir():
                continue
            real = Path(os.path.realpath(folder))
            if not is_inside(real, self.path):
                left_out.append(
                    (
                        self.relpath(folder) + "/",
                        f"a symlinked folder that leads outside the memory root (to {real}); not indexed "
                        "(move the folder into the root, or link to a folder inside it)",
                    )
                )
                continue
            if real in seen or real.relative_to(self.path).parts[:1] == (STATE_DIR,):
                continue  # reached twice (a link to a folder walked already), or our own derived state
            seen.add(real)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
            except OSError as exc:
                log.warning("cannot list %s: %s", folder, exc.strerror)
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                path = folder / entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif entry.is_symlink() and path.is_dir():
                    links.append(path)  # walked after the real folders, so those keep their own names
                else:
                    yield path

    # -- reading and writing ------------------------------------------------------------------

    def resolve(self, relpath: str, *, base: Path | None = None) -> Path:
        """A path given by a client, as a regular file inside the root (or `base`); see files/paths.py."""
        return confine(self.path, relpath, base=base)

    def read_text(
        self, relpath: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES, links: HardLinks | None = None
    ) -> FileText:
        """Read a memory file for indexing; FileSkipped (with the reason) when it cannot be. `links`: one
        hard-link census for a whole pass (see files/paths.py HardLinks)."""
        return read_memory_file(self.path, relpath, max_bytes=max_bytes, state_dir=STATE_DIR, links=links)

    def read_lines(self, relpath: str) -> list[str]:
        """The lines of a file a client asked for (confined to the root), without line endings."""
        return read_lines(self.resolve(relpath), relpath)

    def write_new(self, relpath: str, text: str) -> Path:
        """Create a file that must not exist yet (append-only layers); atomic, never overwrites."""
        dest = self._inside(relpath)
        atomic_write(dest, text, exclusive=True)
        return dest

    def write(self, relpath: str, text: str) -> Path:
        """Create or replace a file atomically (proposals, settings, the files `init` makes)."""
        dest = self._inside(relpath)
        atomic_write(dest, text)
        return dest

    def _inside(self, relpath: str) -> Path:
        dest = (self.path / relpath).resolve()
        if self.path not in dest.parents:
            raise PathRefusedError(f"refusing to write {relpath!r}: it resolves outside the memory root")
        return dest
