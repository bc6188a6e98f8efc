"""The `dream` prompt: the /dream skill's procedure for a client without a shell, through the dream tools.

The text is `dream.md` (the plugin's skill, plugin/skills/dream/SKILL.md, with each command replaced by the
tool that runs it); the root, the command a person runs to apply or reject, the changes a proposal takes and
the items' schema are filled in when it is rendered, so they never drift from the program.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from string import Template

TEMPLATE = Path(__file__).with_name("dream.md")


def person_command() -> str:
    """How a person runs this installation's command line from a terminal (never a `memory-server` found on
    PATH, which may be another program)."""
    return shlex.join([sys.executable, "-m", "memory_server"])


def dream_prompt(root: Path, max_changes: int) -> str:
    from memory_server.dream.items import SCHEMA

    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        root=str(root),
        root_arg=shlex.quote(str(root)),
        command=person_command(),
        max_changes=max_changes,
        items_schema=json.dumps(SCHEMA, separators=(",", ":")),
    )
