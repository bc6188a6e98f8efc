"""BEAM (100K tier) retrieval: long user-assistant chats, questions with gold message ids.

Each chat becomes its own memory root: one session file per batch of the chat,
`sessions/compressed/<year>/<date>-beam-<chat>-b<batch>.md`, front matter (`session_id`, `started` = the
batch's date anchor, `title`), `# <chat title>, part <batch>`, then every message as its own one-line
paragraph: `**User:** text` or `**Assistant:** text` (the user's index marker `->-> 1,2` stripped; line
breaks inside a message folded into spaces, so a message is one chunk). The harness records the line of
each message id, so a hit's line range maps back to the messages it covers.

Scoring (message level, as LoCoMo's turn level): the hits, in order, flattened into the messages their
lines cover (deduplicated); recall@k = share of the question's gold messages among the first k. Questions
without gold ids (abstention) are left out. Used by bench/run.py; not a command of its own.

Data: beam_100K/<n>/{chat.json, topic.json, probing_questions.json} under the benchmark data folder.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_DIR = "beam_100K"
MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
SPEAKER = {"user": "User", "assistant": "Assistant"}


@dataclass
class Question:
    index: int
    kind: str
    text: str
    gold: tuple[int, ...]  # message ids


@dataclass
class Chat:
    number: int
    category: str
    files: dict[str, str]  # path in the root -> text
    lines: dict[str, dict[int, int]]  # path -> line number -> message id
    roles: dict[int, str]  # message id -> user | assistant
    questions: list[Question]

    @property
    def name(self) -> str:
        return f"beam-{self.number}"

    @property
    def messages(self) -> int:
        return len(self.roles)

    def units_of(self, path: str, start: int, end: int) -> list[int]:
        """The message ids a hit's line range covers, in line order."""
        lines = self.lines.get(path, {})
        return [lines[n] for n in range(start, end + 1) if n in lines]


def parse_anchor(text: str | None) -> dt.date | None:
    """BEAM's 'March-15-2024' as a date."""
    if not text:
        return None
    try:
        return dt.datetime.strptime(text.strip(), "%B-%d-%Y").date()
    except ValueError:
        return None


def gold_ids(raw: Any) -> list[int]:
    """`source_chat_ids` as a flat list of message ids: a list, or a dict of lists."""
    values: list[Any] = []
    if isinstance(raw, dict):
        for part in raw.values():
            values.extend(part if isinstance(part, list) else [part])
    elif isinstance(raw, list):
        values = raw
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and v not in out:
            out.append(v)
    return out


def message_line(role: str, content: str) -> str:
    text = MARKER.sub("", content) if role == "user" else content
    return f"**{SPEAKER.get(role, role.title())}:** {' '.join(text.split())}".rstrip()


def load_chat(folder: Path, number: int) -> Chat:
    batches = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    topic = json.loads((folder / "topic.json").read_text(encoding="utf-8"))
    title = " ".join(str(topic.get("title") or f"Chat {number}").split())
    files: dict[str, str] = {}
    lines_of: dict[str, dict[int, int]] = {}
    roles: dict[int, str] = {}
    when = dt.date(2024, 1, 1)
    for batch in batches:
        messages = [m for turn in batch["turns"] for m in turn]
        anchors = [parse_anchor(m.get("time_anchor")) for m in messages]
        when = next((a for a in anchors if a is not None), when)
        n = int(batch.get("batch_number") or len(files) + 1)
        lines = [
            "---",
            f"session_id: beam-{number}-b{n}",
            f"started: '{when.isoformat()}'",
            f"title: {json.dumps(f'{title}, part {n}')}",
            "---",
            "",
            f"# {title}, part {n}",
            "",
        ]
        where: dict[int, int] = {}
        for m in messages:
            lines.append(message_line(str(m["role"]), str(m.get("content") or "")))
            where[len(lines)] = int(m["id"])
            roles[int(m["id"])] = str(m["role"])
            lines.append("")
        rel = f"sessions/compressed/{when.year}/{when.isoformat()}-beam-{number}-b{n}.md"
        files[rel] = "\n".join(lines)
        lines_of[rel] = where
    probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
    questions: list[Question] = []
    for kind in sorted(probing):
        for item in probing[kind]:
            gold = [g for g in gold_ids(item.get("source_chat_ids")) if g in roles]
            if gold:
                questions.append(Question(len(questions), kind, str(item["question"]), tuple(gold)))
    return Chat(number, str(topic.get("category") or ""), files, lines_of, roles, questions)


def load_chats(data: Path, numbers: Sequence[int] | None = None) -> list[Chat]:
    base = data / DATA_DIR
    if not base.is_dir():
        raise SystemExit(f"BEAM data not found at {base}")
    found = sorted(int(p.name) for p in base.iterdir() if p.is_dir() and p.name.isdigit())
    chosen = [n for n in found if numbers is None or n in numbers]
    return [load_chat(base / str(n), n) for n in chosen]
