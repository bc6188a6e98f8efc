"""Per-prompt recall (off by default): at most two memory hits for the person's prompt, only above a score bar.

Claude Code runs the UserPromptSubmit hook with the prompt before the model sees it. When `hooks.prompt_recall`
is on, the prompt is searched the way `search_memory` ranks (search/hybrid.py) over the keyword index alone:
the hook process loads no model and asks no server (bench/prompt_recall.py measured both; the keyword side
answers in the hook's time budget and, above the bar, about as precisely). At most `hooks.prompt_hits` hits
scoring `hooks.prompt_bar` or more are added, each read again from its file, redacted and quoted as data.
Slash commands and prompts of fewer than `MIN_WORDS` content words ("yes", "commit") add nothing: most
prompts need no memory. `bench/prompt_recall.py` chooses the bar; run it again whenever ranking changes.

When the setting is off (the default) the hook costs its interpreter's start: it reads settings only when a
settings file names `prompt_recall` at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memory_server.files.root import SETTINGS_FILE, MemoryRoot, user_config_path
from memory_server.inject.answer import HookInput, lenient_settings, memory_root

if TYPE_CHECKING:
    from memory_server.settings import Settings

MIN_WORDS = 3  # content words a prompt needs before it is searched
MAX_PROMPT_CHARS = 2000  # a longer prompt is searched by its start (a pasted log says little about memory)
SETTING = "prompt_recall"


@dataclass(frozen=True)
class RecallHit:
    """A hit for a prompt: its place, score and the text quoted (read again from the file, redacted)."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str


def named_in_settings(root: Path) -> bool:
    """Whether a settings file (the root's memory.yaml or the user config) mentions the setting at all: the
    only way it can be on, checked without loading the settings."""
    for path in (root / SETTINGS_FILE, user_config_path()):
        try:
            if path is not None and SETTING in path.read_text(encoding="utf-8", errors="replace")[:200_000]:
                return True
        except OSError:
            continue
    return False


def searchable(prompt: str) -> str:
    """The prompt as searched ("" when it is a slash command or too short to say what memory it needs)."""
    from memory_server.parse.text import STOP_WORDS
    from memory_server.search.exact import terms
    from memory_server.sessions.redact import clean

    text = clean(prompt.strip()[:MAX_PROMPT_CHARS])
    if not text or text.startswith("/"):
        return ""
    words = [w for w in terms(text) if len(w) > 1 and w.casefold() not in STOP_WORDS]
    return text if len(words) >= MIN_WORDS else ""


def recall(root: MemoryRoot, settings: Settings, prompt: str, *, limit: int | None = None) -> list[RecallHit]:
    """The best hits for `prompt` from the keyword index, best first, with their scores (no bar applied)."""
    from memory_server.index.fts import FtsIndex
    from memory_server.inject.index_reader import KeywordIndex
    from memory_server.search.hybrid import search_hybrid
    from memory_server.search.query import validate

    text = searchable(prompt)
    if not text:
        return []
    probe = KeywordIndex.open(root.path)  # only an index that exists, of this schema: nothing is made
    if probe is None:
        return []
    probe.close()
    query = validate(text, limit or settings.hooks.prompt_hits, None, None, None, settings.search)
    fts = FtsIndex(root.path / ".memory" / "index.sqlite3")
    try:
        hits, _mode = search_hybrid(fts, None, None, query, settings.search, settings.ranking)
    finally:
        fts.close()
    return [RecallHit(h.path, h.start_line, h.end_line, h.score, h.text) for h in hits]


def prompt_context(hook: HookInput, root: Path) -> str:
    """What the UserPromptSubmit hook adds: the hits above the bar, or "" (off, nothing above it, no root)."""
    memory = memory_root(root)
    if memory is None or not hook.prompt or not named_in_settings(root):
        return ""
    settings = lenient_settings(root)
    if not settings.hooks.prompt_recall:
        return ""
    hits = [h for h in recall(memory, settings, hook.prompt) if h.score >= settings.hooks.prompt_bar]
    return render(memory, hits[: settings.hooks.prompt_hits], settings.hooks.prompt_chars)


def render(root: MemoryRoot, hits: list[RecallHit], budget: int) -> str:
    from memory_server.inject.quote import Quote, block, fit, lines_of

    quotes = [Quote(h.path, h.start_line, lines_of(root, h.path, h.start_line, h.end_line)) for h in hits]
    quotes = [q for q in quotes if q.text]
    if not quotes:
        return ""
    intro = "Memory that may bear on this prompt (search_memory finds more)."
    room = budget - len(block("recall", intro, []))
    each = max(60, room // len(quotes) - 60)
    lines = fit([q.render(each) for q in quotes], room)
    return block("recall", intro, lines) if lines else ""
