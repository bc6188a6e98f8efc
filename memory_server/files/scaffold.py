"""`memory-server init`: make a memory root without touching anything that exists."""

from __future__ import annotations

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

CLAUDE_TEMPLATE = """\
@MEMORY.md

# Memory precedence

This project keeps long-term memory in Markdown, searchable through the `memory` MCP server
(`search_memory` for questions in your own words, `search_exact` for literal strings, `read_memory` for
the text behind a hit).

When sources disagree, trust them in this order:

1. `topics/*.md`: curated current truth. Wins.
2. `sessions/compressed/`: what happened in past sessions. Recall and routing; not authoritative on facts.
3. Raw JSONL transcripts: arbitration when a summary and a topic disagree.
4. The indices under `.memory/` (Chroma, FTS5): derived; regenerate them from the files.

Never edit topic files from a session summary directly: run `/dream` when the session-start hook says it
is due, and let a person review the proposed diff.
"""

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
GITIGNORE = f"{STATE_DIR}/\n{DREAM_PENDING}\n"


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
