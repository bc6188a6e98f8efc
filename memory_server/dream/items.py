"""Proposal items: what the agent writes after reading the evidence pack (the agent never writes a diff).

An items file is JSON, either a list of items or `{"items": [...]}`. Each item:

    {
      "kind": "fact" | "decision" | "lesson" | "correction" | "gap",
      "statement": "one line, worded as the topic should say it",
      "stance": "adopted" | "rejected" | "hypothetical" | "reverted",
      "target": {"topic": "topics/development.md", "section": "Linting"},   # section optional
      "replaces": {"lines": ["topics/development.md:42"], "old": "entire/sessions", "new": "entire/checkpoints/v1"},
      "evidence": [{"ref": "transcript:<id>:LINE", "quote": "verbatim words at that line", "role": "support"}]
    }

- kind: a fact (how things are), a decision (what was chosen, by the person or agreed by them), a lesson
  (a mistake made in two or more sessions, with its fix: evidence needs one `"role": "error"` quote and one
  `"role": "fix"` quote from the same session), a correction of a topic (needs `replaces`), or a gap
  (something asked that no topic answers: reported, never written into a topic).
- stance: what the evidence says of the statement. Only adopted and rejected items become hunks (a
  rejected item's statement says what was decided against); hypothetical and reverted ones are listed.
- target: the topic file and, optionally, the section (a heading's text) the line goes to. A topic that
  does not exist yet is created (give "title" and "description"). Lessons go to topics/lessons.md.
- replaces: topic lines (`topics/x.md:LINE`) on which the `old` term becomes the `new` one.
- evidence: references of the forms the pack prints (`transcript:<id>:LINE` for any line of a transcript
  this dream reads, `sessions/...md:LINE`, `auto-memory:<file>:LINE` for Claude Code's auto memory, which
  supports a fact at most, `topics/x.md:LINE`) and quotes copied verbatim from the text at
  that reference (a part of it is enough). What is checked is that the quote is at the reference, not that
  the pack showed it: a line the pack left out for its budget is as good evidence.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_server.errors import DreamError

KINDS = ("fact", "decision", "lesson", "correction", "gap")
STANCES = ("adopted", "rejected", "hypothetical", "reverted")
ROLES = ("support", "error", "fix")
LESSONS = "topics/lessons.md"

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "memory-server dream proposal items",
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
    "$defs": {
        "item": {
            "type": "object",
            "required": ["kind", "statement", "stance", "evidence"],
            "properties": {
                "id": {"type": "string"},
                "kind": {"enum": list(KINDS)},
                "statement": {"type": "string", "minLength": 3, "maxLength": 400},
                "stance": {"enum": list(STANCES)},
                "target": {
                    "type": "object",
                    "required": ["topic"],
                    "properties": {
                        "topic": {"type": "string", "pattern": r"^topics/.+\.md$"},
                        "section": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                    },
                },
                "replaces": {
                    "type": "object",
                    "required": ["lines", "old", "new"],
                    "properties": {
                        "lines": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "old": {"type": "string", "minLength": 1},
                        "new": {"type": "string", "minLength": 1},
                    },
                },
                "evidence": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["ref", "quote"],
                        "properties": {
                            "ref": {"type": "string"},
                            "quote": {"type": "string", "minLength": 2},
                            "role": {"enum": list(ROLES)},
                        },
                    },
                },
            },
        }
    },
}


@dataclass(frozen=True)
class Quote:
    ref: str
    quote: str
    role: str = "support"

    @property
    def source(self) -> str:
        """The reference without its line: `transcript:<id>` or a file path."""
        return self.ref.rsplit(":", 1)[0]

    @property
    def line(self) -> int:
        return int(self.ref.rsplit(":", 1)[1])


@dataclass
class ProposalItem:
    n: int  # 1-based position in the file
    id: str
    kind: str
    statement: str
    stance: str
    topic: str
    section: str = ""
    title: str = ""
    description: str = ""
    replace_lines: list[str] = field(default_factory=list)
    old: str = ""
    new: str = ""
    evidence: list[Quote] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)  # the item as written (kept when it waits for a later pass)

    @property
    def name(self) -> str:
        return f"item {self.n}" + (f" ({self.id})" if self.id else "")

    def as_json(self) -> dict[str, Any]:
        """The item as an items file holds it (what the agent wrote, else rebuilt from the fields)."""
        if self.raw:
            return self.raw
        target = {
            k: v
            for k, v in (
                ("topic", self.topic),
                ("section", self.section),
                ("title", self.title),
                ("description", self.description),
            )
            if v
        }
        out: dict[str, Any] = {"kind": self.kind, "statement": self.statement, "stance": self.stance}
        if target:
            out["target"] = target
        if self.replace_lines:
            out["replaces"] = {"lines": self.replace_lines, "old": self.old, "new": self.new}
        out["evidence"] = [{"ref": q.ref, "quote": q.quote, "role": q.role} for q in self.evidence]
        return out

    @property
    def fingerprint(self) -> str:
        words = " ".join(self.statement.casefold().split())
        return hashlib.sha256(f"{self.kind}\x00{self.topic}\x00{words}".encode()).hexdigest()[:16]


REF = re.compile(
    r"^(?:transcript:[^:\s]+|auto-memory:[^:\s]+\.md|(?:sessions|topics)/[^:\s]+\.md|MEMORY\.md):[1-9]\d*$"
)


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}: `{key}` must be a string")
    return value.strip()


def parse_item(n: int, raw: Any) -> ProposalItem:
    """One item, checked for shape; ValueError says what is wrong with it."""
    where = f"item {n}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be a JSON object")
    kind, stance, statement = (_text(raw, k, where) for k in ("kind", "stance", "statement"))
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if stance not in STANCES:
        raise ValueError(f"{where}: stance must be one of {', '.join(STANCES)}, not {stance!r}")
    if "\n" in statement:
        raise ValueError(f"{where}: statement must be one line; it has {statement.count(chr(10)) + 1} lines")
    if len(statement) < 3 or len(statement) > 400:
        raise ValueError(f"{where}: statement must be one line of 3 to 400 characters; it has {len(statement)}")
    target = raw.get("target") or ({"topic": LESSONS} if kind == "lesson" else None)
    if kind != "gap" and not isinstance(target, dict):
        raise ValueError(f'{where}: target must be an object like {{"topic": "topics/x.md", "section": "..."}}')
    target = target or {}
    topic = _text(target, "topic", where)
    if kind != "gap" and not re.fullmatch(r"topics/(?:[\w.-]+/)*[\w.-]+\.md", topic):
        raise ValueError(f"{where}: target.topic must be a path like topics/<name>.md, not {topic!r}")
    item = ProposalItem(
        n,
        _text(raw, "id", where),
        kind,
        statement,
        stance,
        topic,
        section=_text(target, "section", where),
        title=_text(target, "title", where),
        description=_text(target, "description", where),
        raw=dict(raw),
    )
    replaces = raw.get("replaces")
    if replaces:
        if not isinstance(replaces, dict) or not isinstance(replaces.get("lines"), list) or not replaces["lines"]:
            raise ValueError(f'{where}: replaces must be {{"lines": ["topics/x.md:LINE"], "old": ..., "new": ...}}')
        item.replace_lines = [str(x).strip() for x in replaces["lines"]]
        item.old, item.new = _text(replaces, "old", where), _text(replaces, "new", where)
        own = all(REF.match(x) and x.startswith(topic + ":") for x in item.replace_lines)
        if not item.old or not item.new or not own:
            raise ValueError(f"{where}: replaces needs `old`, `new`, and lines of the target topic as {topic}:LINE")
    elif kind == "correction":
        raise ValueError(f"{where}: a correction needs `replaces` (the topic lines, the old and the new term)")
    evidence = raw.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise ValueError(f'{where}: evidence must be a non-empty list of {{"ref": ..., "quote": ...}}')
    for e in evidence:
        if not isinstance(e, dict):
            raise ValueError(f"{where}: each evidence entry must be an object with ref and quote")
        ref, quote, role = _text(e, "ref", where), _text(e, "quote", where), _text(e, "role", where) or "support"
        if not REF.match(ref):
            raise ValueError(
                f"{where}: {ref!r} is not a reference like transcript:<id>:LINE, sessions/...md:LINE or "
                "auto-memory:<file>.md:LINE"
            )
        if len(quote) < 2 or role not in ROLES:
            raise ValueError(f"{where}: evidence at {ref} needs a quote and a role among {', '.join(ROLES)}")
        item.evidence.append(Quote(ref, quote, role))
    return item


def load_items(path: str | Path) -> tuple[list[ProposalItem], list[str]]:
    """(items of good shape, refusals of the others) from an items file; DreamError when it is not JSON."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DreamError(
            f"cannot read the items file {path} ({exc}); write it as JSON, see `dream propose --schema`"
        ) from exc
    raw = data.get("items") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise DreamError(f'{path} must hold a list of items, or {{"items": [...]}}')
    items, refusals = [], []
    for n, entry in enumerate(raw, 1):
        try:
            items.append(parse_item(n, entry))
        except ValueError as exc:
            refusals.append(str(exc))
    return items, refusals
