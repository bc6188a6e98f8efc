"""Turn verified proposal items into line edits of topic files (and new topics with their MEMORY.md pointers).

- fact / decision: a list item (the statement) at the end of the target section's own text (before its
  first sub-heading; after its prose, before the first line that introduces a list, such as "**Do NOT:**"
  or "**Key files:**", or the sub-headings: the line must not read as one of what it introduces). With no
  section given or matched: a `## Updates` section at the end of the topic (created once), or the end of a
  topic that has no sections below its title;
- correction: on each cited topic line, the old term becomes the new one (nothing else on the line moves);
- lesson: a `## <statement>` entry (a long one split at its first ": " into heading and paragraph) at the end
  of `topics/lessons.md`, with the mistake and the fix as quoted (code spans: data, not prose) from one
  session, and the sessions the error shows in.

A topic that does not exist yet is created (front matter, title) and gets its pointer line in MEMORY.md.
Nothing here writes a file: the result is edits, which `patch.py` turns into a diff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from memory_server.dream.corrections import replace_span
from memory_server.dream.items import LESSONS, ProposalItem
from memory_server.dream.lesson_text import lesson_heading
from memory_server.dream.lessons import LessonCase
from memory_server.dream.patch import Edit
from memory_server.dream.topics import TopicFile, heading_key, headings, split_keep
from memory_server.files.root import MEMORY_INDEX
from memory_server.files.scaffold import LESSONS_TEMPLATE
from memory_server.parse.markdown import FENCE, LIST_ITEM
from memory_server.parse.text import as_data


@dataclass
class FileChange:
    path: str
    old: list[str] | None  # None: a new file
    edits: list[Edit] = field(default_factory=list)
    new_text: list[str] = field(default_factory=list)  # the whole text of a new file, as lines


UPDATES = "Updates"  # the section an item goes to when no section is given and none matches it well enough


def _own_text(topic: TopicFile, heading: str) -> tuple[int, int] | None:
    """(heading line, end of its own text: the next heading of any level) of the section `heading`."""
    heads = headings(topic)
    chosen = [h for h in heads if heading_key(h[2]) == heading_key(heading)]
    if not chosen:
        return None
    start = chosen[0][0]
    return start, next((i for i, _lvl, _t in heads if i > start), len(topic.lines))


def _labelled_list(topic: TopicFile, start: int, k: int) -> int | None:
    """Where the paragraph that introduces the list the section's own text ends with starts, when something
    other than the heading introduces it ("**Key files:**"): a new line must not join that list."""
    j = k
    while j > start and topic.lines[j].strip() and (LIST_ITEM.match(topic.lines[j]) or topic.lines[j][:1] in " \t"):
        j -= 1  # back over the list (items and their continuation lines)
    if j == k or not bool(LIST_ITEM.match(topic.lines[j + 1])):
        return None  # the text does not end with a list
    while j > start and not topic.lines[j].strip():
        j -= 1
    if j <= start:
        return None  # the heading introduces the list
    while j - 1 > start and topic.lines[j - 1].strip():
        j -= 1  # to the start of the label's paragraph
    return j


def _is_label(lines: list[str], i: int, k: int) -> bool:
    """A line (of a section's own text, which ends at line k) that introduces a list ("**Do NOT:**", "Key
    files:") or the section's sub-headings ("..., with important exceptions:"): a line ending with a colon
    whose next text is a list item, or that is the last text before the sub-headings."""
    if not lines[i].strip().endswith((":", ":**")) or LIST_ITEM.match(lines[i]):
        return False
    j = next((n for n in range(i + 1, k + 1) if lines[n].strip()), None)
    return j is None or bool(LIST_ITEM.match(lines[j]))


def _first_label(topic: TopicFile, start: int, k: int) -> int | None:
    """The first line of the section's own text (after its heading, up to line k) that introduces a list or
    the sub-headings ("**Do NOT:**", "**Key files:**"), outside code blocks. A new line must come before it:
    placed after the label it would read as one of the things the label introduces. (A label above a code
    block is not one: a line placed before it would part an example from the text it illustrates.)"""
    in_fence = False
    for i in range(start + 1, k + 1):
        if FENCE.match(topic.lines[i]):
            in_fence = not in_fence
        elif not in_fence and _is_label(topic.lines, i, k):
            return i
    return None


def insertion_point(topic: TopicFile, heading: str) -> tuple[int, bool, bool]:
    """(index to insert at, whether the text before is a list, whether the line after is text).

    The end of the section's own text (before its first sub-heading), joining its list when the section's
    own text is that list; before the paragraph that introduces a labelled list of something else, so the
    line follows the section's prose. Without a (known) heading: the end of the topic.
    """
    span = _own_text(topic, heading) if heading else None
    start, end = span if span is not None else (topic.body_start, len(topic.lines))
    k = end - 1
    while k > start and not topic.lines[k].strip():
        k -= 1
    labels = (_labelled_list(topic, start, k), _first_label(topic, start, k)) if span is not None else ()
    label = min((i for i in labels if i is not None), default=None)
    if label is not None:
        return label, False, True
    j = k
    while j > start and topic.lines[j][:1] in (" ", "\t") and topic.lines[j].strip():
        j -= 1  # continuation lines of a list item
    in_list = bool(LIST_ITEM.match(topic.lines[j])) if 0 <= j < len(topic.lines) else False
    text_after = k + 1 < len(topic.lines) and bool(topic.lines[k + 1].strip())
    return k + 1, in_list, text_after


def section_for(topic: TopicFile, heading: str) -> str:
    """Where an item goes: its (given or matched) section; else, in a topic with sections below its title,
    the `## Updates` section (so an unplaced line never lands in whatever section happens to come last);
    else "" (the end of a topic that is one section)."""
    if heading:
        return heading
    heads = headings(topic)
    return UPDATES if len(heads) > 1 or (heads and heads[0][1] > 1) else ""


def _insert(topic: TopicFile, at: int, block: list[str], keys: tuple[str, ...]) -> Edit:
    """An insertion; when it lands after a last line without a newline, that line gets one."""
    if at == len(topic.lines) and at and not topic.lines[-1].endswith("\n"):
        return Edit(at - 1, 1, [topic.lines[-1] + topic.eol, *block], keys)
    return Edit(at, 0, block, keys)


def _item_block(topic: TopicFile, heading: str, items: list[str], keys: tuple[str, ...]) -> Edit:
    eol = topic.eol
    if heading == UPDATES and _own_text(topic, heading) is None:  # a new last section
        gap = [] if topic.lines and not topic.lines[-1].strip() else [eol]
        return _insert(topic, len(topic.lines), [*gap, f"## {UPDATES}{eol}", eol, *(i + eol for i in items)], keys)
    at, in_list, text_after = insertion_point(topic, heading)
    blank_before = in_list or (0 < at <= len(topic.lines) and not topic.lines[at - 1].strip())
    block = ([] if blank_before else [eol]) + [item + eol for item in items] + ([eol] if text_after else [])
    return _insert(topic, at, block, keys)


def lesson_lines(item: ProposalItem, cases: list[LessonCase], eol: str) -> list[str]:
    """A lessons.md entry: the lesson, then each session's mistake and fix as quoted (code spans: data)."""
    heading, more = lesson_heading(item.statement)
    out = [eol, f"## {as_data(heading)}{eol}", eol, *([f"{as_data(more)}{eol}", eol] if more else [])]
    for case in cases:
        out += [
            f"- Mistake: {code_span(case.error[:200])} (`{case.failure}`{_gone_note(case)}){eol}",
            f"  Fix: {code_span(case.fix_shown[:200])} (`{case.fix}`){eol}",
        ]
    seen = ", ".join(f"`{as_data(c.session)}`" for c in cases)
    return [*out, f"- Seen in: {seen}{eol}"]


def _gone_note(case: LessonCase) -> str:
    return "; not in today's tree: " + ", ".join(code_span(f) for f in case.gone) if case.gone else ""


def code_span(text: str) -> str:
    """Quoted session text as one Markdown code span: shown as data, never read as prose or instructions."""
    text = as_data(" ".join(text.split()))
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _new_topic(item: ProposalItem, date: str) -> list[str]:
    slug = item.topic.rsplit("/", 1)[-1][:-3]
    title = as_data(item.title or slug.replace("-", " ").capitalize())
    description = as_data(item.description or f"{title}: from sessions up to {date}")
    meta = {"title": title, "description": description, "updated": date, "tags": [slug]}
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1_000_000, default_flow_style=None)
    return split_keep(f"---\n{front}---\n# {title}\n")


def build_changes(
    items: list[ProposalItem],
    sections: dict[str, str],
    lesson_sessions: dict[str, list[LessonCase]],
    topics: dict[str, TopicFile],
    memory_md: TopicFile | None,
    date: str,
) -> dict[str, FileChange]:
    """Edits per file for `items` (each edit carries its item's fingerprint). `sections`: fingerprint -> the
    section an item without one was placed in; `lesson_sessions`: fingerprint -> a lesson's cases."""
    changes: dict[str, FileChange] = {}
    new_files: dict[str, list[ProposalItem]] = {}
    blocks: dict[tuple[str, str], list[ProposalItem]] = {}
    known = {**topics, **({MEMORY_INDEX: memory_md} if memory_md is not None else {})}

    def change(path: str) -> FileChange:
        if path not in changes:
            changes[path] = FileChange(path, known[path].lines)
        return changes[path]

    for item in items:
        keys: tuple[str, ...] = (item.fingerprint,)
        topic = topics.get(item.topic)
        if item.replace_lines and topic is not None:
            for ref in item.replace_lines:
                n = int(ref.rsplit(":", 1)[1]) - 1
                change(item.topic).edits.append(Edit(n, 1, [replace_span(topic.lines[n], item.old, item.new)], keys))
        elif topic is None:
            new_files.setdefault(item.topic, []).append(item)
        elif item.kind == "lesson":
            lines = lesson_lines(item, lesson_sessions.get(item.fingerprint, []), topic.eol)
            change(item.topic).edits.append(_insert(topic, len(topic.lines), lines, keys))
        else:
            heading = section_for(topic, item.section or sections.get(item.fingerprint, ""))
            blocks.setdefault((item.topic, heading), []).append(item)
    for (path, heading), group in blocks.items():
        lines = [f"- {as_data(i.statement)}" for i in group]
        change(path).edits.append(_item_block(topics[path], heading, lines, tuple(i.fingerprint for i in group)))

    pointers: list[str] = []
    pointer_keys: tuple[str, ...] = ()
    for path, group in sorted(new_files.items()):
        keys = tuple(i.fingerprint for i in group)
        if path == LESSONS:
            body = split_keep(LESSONS_TEMPLATE)
            body += [ln for i in group for ln in lesson_lines(i, lesson_sessions.get(i.fingerprint, []), "\n")]
            title, description = "Lessons", "Mistakes made more than once, and what fixed them"
        else:
            body = _new_topic(group[0], date) + ["\n"] + [f"- {as_data(i.statement)}\n" for i in group]
            title = group[0].title or path.rsplit("/", 1)[-1][:-3].replace("-", " ").capitalize()
            description = group[0].description or "from sessions"
        changes[path] = FileChange(path, None, [Edit(0, 0, body, keys)], body)
        if memory_md is None or not re.search(r"\(" + re.escape(path) + r"\)", memory_md.text):
            pointers.append(f"- [{as_data(title)}]({path}): {as_data(description)}")
            pointer_keys += keys
    if pointers and memory_md is None:
        lines = split_keep("# Memory\n\n## Topics\n\n") + [p + "\n" for p in pointers]
        changes[MEMORY_INDEX] = FileChange(MEMORY_INDEX, None, [Edit(0, 0, lines, pointer_keys)], lines)
    elif pointers and memory_md is not None:
        change(MEMORY_INDEX).edits.append(_item_block(memory_md, "Topics", pointers, pointer_keys))
    return changes
