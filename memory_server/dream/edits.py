"""Turn scored candidates into line edits of topic files (and new topics with their MEMORY.md pointers).

- drift: each topic line that names the old tool or practice gets the new one in its place (the report
  shows both statements with their dates; the person, or the agent improving the wording, adjusts it);
- decision: a list item at the end of the matching section's own text (before its first sub-heading),
  or in the `decisions` topic (a new file when missing);
- lesson: a `## <error>` entry at the end of `topics/lessons.md` with the mistake, the fix and the
  sessions (a new file when missing).

A new topic file also gets its pointer line in MEMORY.md (under "## Topics" when there is one).
Nothing here writes a file: the result is edits, which `dream_diff` turns into a proposal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_server.dream.candidates import Candidate, term_pattern, topic_text
from memory_server.dream.patch import Edit
from memory_server.dream.sessions import BACKTICKED, ERROR_WORDS
from memory_server.dream.topics import HEADING, LESSONS, TopicFile, split_keep
from memory_server.files.scaffold import LESSONS_TEMPLATE
from memory_server.files.store import MEMORY_INDEX
from memory_server.parse.markdown import FENCE, LIST_ITEM

LIST_PREFIX = re.compile(r"^\s*(?:(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?)?")


@dataclass
class FileChange:
    path: str
    old: list[str] | None  # None: a new file
    edits: list[Edit] = field(default_factory=list)
    new_text: list[str] = field(default_factory=list)  # the whole text of a new file, as lines
    sha256: str | None = None


def _headings(topic: TopicFile) -> list[tuple[int, int, str]]:
    """(line index, level, text) of the body's headings, skipping fenced code."""
    out, fence = [], None
    for i in range(topic.body_start, len(topic.lines)):
        line = topic.lines[i].rstrip("\r\n")
        m = FENCE.match(line)
        if m:
            fence = None if fence and m.group(1)[0] == fence else fence or m.group(1)[0]
            continue
        h = HEADING.match(line) if fence is None else None
        if h:
            out.append((i, len(h.group(1)), h.group(2).strip()))
    return out


def insertion_point(topic: TopicFile, heading: str) -> tuple[int, bool, bool]:
    """(index to insert at, whether the text before is a list, whether the line after is text)."""
    heads = _headings(topic)
    start, end = topic.body_start, len(topic.lines)
    chosen = [h for h in heads if heading and h[2].casefold() == heading.casefold()]
    if chosen:
        start = chosen[0][0]
        end = next((i for i, _lvl, _t in heads if i > start), len(topic.lines))
    k = end - 1
    while k > start and not topic.lines[k].strip():
        k -= 1
    j = k
    while j > start and topic.lines[j][:1] in (" ", "\t") and topic.lines[j].strip():
        j -= 1  # continuation lines of a list item
    in_list = bool(LIST_ITEM.match(topic.lines[j])) if 0 <= j < len(topic.lines) else False
    text_after = k + 1 < len(topic.lines) and bool(topic.lines[k + 1].strip())
    return k + 1, in_list, text_after


def _insert(topic: TopicFile, at: int, block: list[str], keys: tuple[str, ...]) -> Edit:
    """An insertion; when it lands after a last line without a newline, that line gets one."""
    if at == len(topic.lines) and at and not topic.lines[-1].endswith("\n"):
        return Edit(at - 1, 1, [topic.lines[-1] + topic.eol] + block, keys)
    return Edit(at, 0, block, keys)


def _item_block(topic: TopicFile, heading: str, items: list[str], keys: tuple[str, ...]) -> Edit:
    at, in_list, text_after = insertion_point(topic, heading)
    eol = topic.eol
    block = ([] if in_list else [eol]) + [item + eol for item in items] + ([eol] if text_after else [])
    return _insert(topic, at, block, keys)


def _session_label(cand: Candidate) -> str:
    first = min(cand.evidence, key=lambda e: (e.ts, e.path))
    return f"{first.date or 'undated'}; `{first.path}`"


def lesson_lines(cand: Candidate, eol: str) -> list[str]:
    error = cand.payload["error"]
    core = next((m for m in BACKTICKED.findall(error) if ERROR_WORDS.search(m)), None) or error.replace("`", "")
    title = core if len(core) <= 72 else core[:72].rsplit(" ", 1)[0] + "…"
    fix = cand.payload["fix"] or "not recorded in the sessions; see them below"
    seen = ", ".join(f"`{p}`" for p in cand.sessions)
    return [eol, f"## {title}{eol}", eol, f"- Mistake: {cand.payload['error']}{eol}", f"- Fix: {fix}{eol}", f"- Seen in: {seen}{eol}"]


def _new_topic(path: str, title: str, description: str, date: str, body: list[str]) -> list[str]:
    slug = path.rsplit("/", 1)[-1][:-3]
    head = f"---\ntitle: {title}\ndescription: {description}\nupdated: {date}\ntags: [{slug}]\n---\n# {title}\n"
    return split_keep(head) + body


def build_changes(
    proposed: list[Candidate], topics: dict[str, TopicFile], memory_md: TopicFile | None, date: str, decisions_slug: str
) -> dict[str, FileChange]:
    """Edits per file for the proposed candidates (each edit carries its candidate's fingerprint)."""
    changes: dict[str, FileChange] = {}
    new_files: dict[str, list[Candidate]] = {}
    items: dict[tuple[str, str], list[Candidate]] = {}  # decisions by (topic, section)
    known = dict(topics)
    if memory_md is not None:
        known[MEMORY_INDEX] = memory_md

    def change(path: str) -> FileChange:
        if path not in changes:
            topic = known[path]
            changes[path] = FileChange(path, topic.lines, sha256=topic.sha256)
        return changes[path]

    for cand in proposed:
        keys = (cand.fingerprint,)
        topic = topics.get(cand.target)
        if topic is None:
            new_files.setdefault(cand.target, []).append(cand)
        elif cand.kind == "drift" and cand.payload.get("rewrite"):
            ev = cand.topic_lines[0]
            old_line = topic.lines[ev.start_line - 1]
            marker = LIST_PREFIX.match(old_line).group(0)  # type: ignore[union-attr]
            text = f"{marker}{topic_text(cand.payload['statement'])} (decided {_session_label(cand)}){topic.eol}"
            change(cand.target).edits.append(Edit(ev.start_line - 1, 1, [text], keys))
        elif cand.kind == "drift":
            pattern, new = term_pattern(cand.payload["old"]), cand.payload["new"]
            for ev in cand.topic_lines:
                old_line = topic.lines[ev.start_line - 1]
                line = pattern.sub(lambda m: new.upper() if m.group(0).isupper() and len(m.group(0)) > 1 else new, old_line)
                change(cand.target).edits.append(Edit(ev.start_line - 1, 1, [line], keys))
        elif cand.kind == "decision":
            items.setdefault((cand.target, cand.payload["heading"]), []).append(cand)
        elif cand.kind == "lesson":
            change(cand.target).edits.append(_insert(topic, len(topic.lines), lesson_lines(cand, topic.eol), keys))
    for (path, heading), cands in items.items():
        lines = [f"- {topic_text(c.payload['statement'])} (decided {_session_label(c)})" for c in cands]
        change(path).edits.append(_item_block(topics[path], heading, lines, tuple(c.fingerprint for c in cands)))

    pointers: list[str] = []
    pointer_keys: tuple[str, ...] = ()
    for path, cands in sorted(new_files.items()):
        keys = tuple(c.fingerprint for c in cands)
        if path == LESSONS:
            lines = split_keep(LESSONS_TEMPLATE) + [line for c in cands for line in lesson_lines(c, "\n")]
            title, description = "Lessons", "Mistakes made more than once, and what fixed them"
        else:
            title = decisions_slug.replace("-", " ").capitalize()
            description = "Decisions and rules from sessions that no other topic covers yet"
            body = ["\n"] + [f"- {topic_text(c.payload['statement'])} (decided {_session_label(c)})\n" for c in cands]
            lines = _new_topic(path, title, description, date, body)
        changes[path] = FileChange(path, None, [Edit(0, 0, lines, keys)], lines)
        if memory_md is None or not re.search(r"\(" + re.escape(path) + r"\)", memory_md.text):
            pointers.append(f"- [{title}]({path}): {description}")
            pointer_keys += keys
    if pointers and memory_md is None:
        lines = split_keep("# Memory\n\n## Topics\n\n") + [p + "\n" for p in pointers]
        changes[MEMORY_INDEX] = FileChange(MEMORY_INDEX, None, [Edit(0, 0, lines, pointer_keys)], lines)
    elif pointers and memory_md is not None:
        change(MEMORY_INDEX).edits.append(_item_block(memory_md, "Topics", pointers, pointer_keys))
    return changes
