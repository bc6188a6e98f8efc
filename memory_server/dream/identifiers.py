"""Identifiers in prose (names of functions, types, files, branches, settings), and whether they exist.

`identifiers(text)` finds what looks like code: a backticked span without spaces, a CamelCase or
snake_case word, a dotted name (`settings.Load`), a path (`cmd/entire/cli`), an ALL_CAPS name.
`GitTree(root)` answers whether a name occurs in the project's git work tree (tracked files: their paths
and their text, the memory's own topics, sessions and proposals left out), for a memory root that lies
inside one; outside a git tree it cannot tell (None).
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

BACKTICKED = re.compile(r"`([^`\s][^`]*?)`")
CODE_WORD = re.compile(
    r"(?<![\w/.-])(?:"
    r"[A-Za-z_][\w-]*(?:[./][\w-]+)+/?"  # dotted names and paths
    r"|[a-z]+(?:[A-Z][a-z0-9]+)+\w*"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\w*"  # CamelCase
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # ALL_CAPS
    r"|[A-Z]{2,}-\d+"  # tickets: ENT-241
    r")(?:\(\))?(?![\w])"
)
COMMON = frozenset({"e.g", "i.e", "etc", "vs"})
MEMORY_PARTS = ("topics", "sessions", "dreams", "MEMORY.md", ".memory")


def _plain(token: str) -> str:
    token = token.strip().rstrip(".,:;")
    return token[:-2] if token.endswith("()") else token


def identifiers(text: str) -> list[str]:
    """Code-like names in `text`, in order of first appearance, without duplicates."""
    found: dict[str, None] = {}
    for span in BACKTICKED.findall(text):
        if " " not in span.strip() and len(span.strip()) > 1:
            found.setdefault(_plain(span), None)
    for word in CODE_WORD.findall(BACKTICKED.sub(" ", text)):
        word = _plain(word)
        if word.casefold() not in COMMON and not re.fullmatch(r"[\d.]+", word) and "://" not in word:
            found.setdefault(word, None)
    return [w for w in found if len(w) > 2]


def claimed_identifiers(statement: str) -> list[str]:
    """The names a statement says exist: its backticked code-like spans (commands with spaces are not names)."""
    out: dict[str, None] = {}
    for span in BACKTICKED.findall(statement):
        span = span.strip()
        if " " in span or len(span) < 3 or "=" in span or span.startswith(("-", "$", "<")) or "://" in span:
            continue
        out.setdefault(_plain(span), None)
    return list(out)


class GitTree:
    """The git work tree a memory root lies in (if any), for checking that names exist."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.top = _toplevel(root)
        # The memory's own files do not show that a name exists in the project: a topic or a session
        # summary may name what was never built.
        self.memory: tuple[str, ...] = ()
        if self.top is not None:
            try:
                base = root.resolve().relative_to(self.top.resolve()).as_posix()
            except ValueError:
                base = ""
            prefix = "" if base in ("", ".") else base + "/"
            self.memory = tuple(prefix + p for p in MEMORY_PARTS)

    @property
    def available(self) -> bool:
        return self.top is not None

    def exists(self, name: str) -> bool | None:
        """Whether `name` is a tracked path or occurs in a tracked file; None outside a git tree."""
        if self.top is None:
            return None
        stripped = name.strip("/")
        if any(p == stripped or p.startswith(stripped + "/") or p.endswith("/" + stripped) for p in self._paths()):
            return True
        if self._grep(name):
            return True
        if "." in name and "/" not in name:  # settings.Load: the package and the name, each somewhere
            head, _, tail = name.rpartition(".")
            return self._grep(tail) and self._grep(head.rsplit(".", 1)[-1])
        return False

    @functools.lru_cache(maxsize=1)  # noqa: B019 - one GitTree lives for one verification
    def _paths(self) -> tuple[str, ...]:
        out = _git(self.top, "ls-files", "-z")
        paths = (p for p in out.split("\0") if p) if out is not None else iter(())
        return tuple(p for p in paths if not self._is_memory(p))

    def _is_memory(self, path: str) -> bool:
        return any(path == m or path.startswith(m + "/") for m in self.memory)

    def _grep(self, text: str) -> bool:
        excluded = [f":(exclude){m}" for m in self.memory]
        proc = subprocess.run(
            ["git", "-C", str(self.top), "grep", "-q", "-I", "-F", "-e", text, "--", ".", *excluded],
            capture_output=True,
            timeout=60,
            check=False,
        )
        return proc.returncode == 0


def _git(cwd: Path | None, *args: str) -> str | None:
    if cwd is None:
        return None
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _toplevel(root: Path) -> Path | None:
    out = _git(root, "rev-parse", "--show-toplevel")
    return Path(out.strip()) if out and out.strip() else None
