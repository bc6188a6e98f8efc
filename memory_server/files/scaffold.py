"""`memory-server init`: make a memory root, and wire it into a project that already has files.

Missing files and folders are created; an existing file is never replaced. In a project that already had a
`CLAUDE.md`, init adds the `@MEMORY.md` import (so Claude Code loads the memory's table of contents) and the
precedence rule, and to an existing `.gitignore` the lines that keep derived state and the /dream flag out of
git: each only when missing, so running init again changes nothing. With `edit=False` nothing existing is
changed and the caller prints what to add instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memory_server.files.root import CLAUDE_MD, DREAM_PENDING, MEMORY_INDEX, SESSIONS_DIR, STATE_DIR, TOPICS_DIR
from memory_server.files.writing import atomic_write

MEMORY_TEMPLATE = """\
# Memory

Pointers, not content: one line per topic. Keep this file under 200 lines; details live in the topics.
Search everything with the `search_memory` and `search_exact` tools of the memory server.

## Topics

- [Lessons](topics/lessons.md): mistakes made more than once, and their fixes
"""

IMPORT_LINE = "@MEMORY.md"

PRECEDENCE = """\
# Memory precedence

This project keeps long-term memory in Markdown, searchable through the `memory` MCP server
(`search_memory` for questions, in the words the notes would use; `search_exact` for literal strings;
`read_memory` for the text behind a hit).

When sources disagree, trust them in this order:

1. `topics/*.md`: curated current truth. Wins.
2. Claude Code's auto memory (`auto-memory:` hits): notes the model wrote for itself, unreviewed. Below topics.
3. `sessions/compressed/`: what happened in past sessions. Recall and routing; not authoritative on facts.
4. Raw JSONL transcripts (kept in `sessions/transcripts/` once Claude Code deletes them): arbitration when a
   summary and a topic disagree.
5. The indices under `.memory/` (Chroma, FTS5): derived; regenerate them from the files.

When the person asks you to remember something, write it into the topic it belongs to (`topics/*.md`; a new
topic also gets its line in `MEMORY.md`) and tell them which file you changed, so that they can review it.
Never edit topic files from a session summary directly: run `/dream` when the session-start hook says it
is due, and let a person review the proposed diff.
"""

CLAUDE_TEMPLATE = f"{IMPORT_LINE}\n\n{PRECEDENCE}"

LESSONS_TEMPLATE = """\
---
title: Lessons
description: Mistakes made more than once, and what fixed them
tags: [lessons]
---
# Lessons

One entry per repeated mistake: what went wrong, the fix, and the sessions that show it.
"""

# Derived state, and the flag the session-start hook leaves for a due dream: neither belongs in git.
IGNORED = (f"{STATE_DIR}/", DREAM_PENDING)
GITIGNORE = "".join(f"{line}\n" for line in IGNORED)
GITIGNORE_NOTE = "# memory-server: derived indices, and the flag for a due /dream"


def init_root(path: Path) -> list[str]:
    """Create the folders and starter files of a memory root; return what was created (never overwrites)."""
    root = Path(path).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    for folder in (TOPICS_DIR, SESSIONS_DIR):
        d = root / folder
        if not d.exists():
            d.mkdir(parents=True)
            created.append(folder + "/")
    files = {
        MEMORY_INDEX: MEMORY_TEMPLATE,
        CLAUDE_MD: CLAUDE_TEMPLATE,
        f"{TOPICS_DIR}/lessons.md": LESSONS_TEMPLATE,
        ".gitignore": GITIGNORE,
        f"{STATE_DIR}/.gitignore": "*\n",  # the state folder ignores itself, whatever the root's .gitignore says
    }
    for rel, text in files.items():
        try:
            atomic_write(root / rel, text, exclusive=True)
            created.append(rel)
        except FileExistsError:
            pass
    return created


@dataclass(frozen=True)
class Wiring:
    """Text a file of the root lacks: where it goes, what it is for, and whether init added it."""

    path: str
    text: str
    why: str
    added: bool


def _has_line(text: str, pattern: str) -> bool:
    return re.search(pattern, text, flags=re.M) is not None


def _claude_md_lacks(text: str) -> tuple[str, str]:
    parts, why = [], []
    if not _has_line(text, rf"^\s*{re.escape(IMPORT_LINE)}\s*$"):
        parts.append(IMPORT_LINE + "\n")
        why.append("the `@MEMORY.md` import (Claude Code then loads the memory's table of contents)")
    if not _has_line(text, r"^#+\s*Memory precedence\s*$"):
        parts.append(PRECEDENCE)
        why.append("the memory precedence rule")
    return "\n".join(parts), " and ".join(why)


def _gitignore_lacks(text: str) -> tuple[str, str]:
    missing = [line for line in IGNORED if not _has_line(text, rf"^\s*/?{re.escape(line.rstrip('/'))}/?\s*$")]
    if not missing:
        return "", ""
    return GITIGNORE_NOTE + "\n" + "".join(f"{line}\n" for line in missing), ", ".join(missing)


def _append(path: Path, text: str, addition: str) -> None:
    joined = text if not text or text.endswith("\n") else text + "\n"
    atomic_write(path, joined + ("\n" if joined.strip() else "") + addition)


def wire_root(path: Path, *, edit: bool = True) -> list[Wiring]:
    """Add to the root's existing CLAUDE.md and .gitignore what they lack; return each addition (made or not)."""
    root = Path(path).expanduser()
    out: list[Wiring] = []
    for rel, lacks in ((CLAUDE_MD, _claude_md_lacks), (".gitignore", _gitignore_lacks)):
        file = root / rel
        if not file.is_file():
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # not ours to judge; init never rewrites a file it cannot read
        addition, why = lacks(text)
        if not addition:
            continue
        # A link pointing out of the root (a shared CLAUDE.md) is shown, never edited.
        inside = file.resolve().is_relative_to(root.resolve())
        if edit and inside:
            _append(file.resolve(), text, addition)
        out.append(Wiring(rel, addition, why, edit and inside))
    return out
