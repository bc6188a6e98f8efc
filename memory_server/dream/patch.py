"""Unified diffs for dream proposals: make them, read them back, apply chosen hunks to lines in memory.

A proposal is a git-style unified diff against the root (`a/topics/x.md`, `b/topics/x.md`; new files from
`/dev/null`), three lines of context, "\\ No newline at end of file" where a file lacks its final newline,
so `git apply --check` accepts it from the root. Applying never needs git: hunks are applied here, each
checked line by line against the text. Writing the result is `writeset.py`'s job.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from memory_server.errors import DreamError

CONTEXT = 3
NO_EOL = "\\ No newline at end of file\n"
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Edit:
    """Replace `remove` old lines from index `at` (0-based) by `lines` (each with its line ending)."""

    at: int
    remove: int
    lines: list[str]
    keys: tuple[str, ...]  # fingerprints of the candidates this edit carries


@dataclass
class Hunk:
    path: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: list[tuple[str, str]]  # (" " | "-" | "+", text with its line ending, if it has one)
    keys: list[str] = field(default_factory=list)
    n: int = 0  # 1-based number across the whole proposal
    edits: int = 0  # how many separate changes (edits with different keys) this hunk shows, when made here

    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@\n"

    def body(self) -> str:
        out = []
        for tag, text in self.lines:
            out.append(tag + text if text.endswith("\n") else f"{tag}{text}\n{NO_EOL}")
        return "".join(out)


@dataclass
class FilePatch:
    path: str
    new_file: bool
    hunks: list[Hunk] = field(default_factory=list)

    def text(self) -> str:
        head = f"diff --git a/{self.path} b/{self.path}\n"
        if self.new_file:
            head += f"new file mode 100644\n--- /dev/null\n+++ b/{self.path}\n"
        else:
            head += f"--- a/{self.path}\n+++ b/{self.path}\n"
        return head + "".join(h.header() + h.body() for h in self.hunks)


def apply_edits(old: list[str], edits: list[Edit]) -> tuple[list[str], list[Edit]]:
    """New lines after `edits` (in order of position; an edit overlapping an earlier one is dropped)."""
    out: list[str] = []
    pos = 0
    kept = []
    for edit in sorted(edits, key=lambda e: (e.at, e.remove)):
        if edit.at < pos or edit.at > len(old):
            continue
        out += old[pos : edit.at] + edit.lines
        pos = edit.at + edit.remove
        kept.append(edit)
    return out + old[pos:], kept


def make_patch(path: str, old: list[str] | None, new: list[str], edits: list[Edit]) -> FilePatch:
    """The patch turning `old` (None: the file does not exist) into `new`; each hunk carries its edits' keys.

    Three lines of context, or fewer (down to one) where that keeps separate edits in separate hunks, so
    each can be applied or rejected on its own.
    """
    best: FilePatch | None = None
    for context in (CONTEXT, 2, 1):
        patch = _patch(path, old, new, edits, context)
        merged = sum(h.edits > 1 for h in patch.hunks)
        if best is None or merged < sum(h.edits > 1 for h in best.hunks):
            best = patch
        if not merged:
            break
    return best  # type: ignore[return-value]


def _patch(path: str, old: list[str] | None, new: list[str], edits: list[Edit], context: int) -> FilePatch:
    patch = FilePatch(path, old is None)
    base = old or []
    matcher = difflib.SequenceMatcher(None, base, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[tuple[str, str]] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [(" ", ln) for ln in base[a1:a2]]
            else:
                lines += [("-", ln) for ln in base[a1:a2]] + [("+", ln) for ln in new[b1:b2]]
        old_len, new_len = i2 - i1, j2 - j1
        hunk = Hunk(path, i1 + 1 if old_len else i1, old_len, j1 + 1 if new_len else j1, new_len, lines)
        changed = [(a1, a2) for tag, a1, a2, _b1, _b2 in group if tag != "equal"]
        groups: set[tuple[str, ...]] = set()
        for edit in edits:
            end = edit.at + edit.remove
            if any(edit.at <= a2 and end >= a1 for a1, a2 in changed) or (i1 <= edit.at and end <= i2):
                hunk.keys += [k for k in edit.keys if k not in hunk.keys]
                groups.add(edit.keys)
        hunk.edits = len(groups)
        patch.hunks.append(hunk)
    return patch


def parse_diff(text: str) -> list[FilePatch]:
    """Read a proposal back. Hunk headers' line counts are trusted, as by git."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    i, n = 0, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            current = FilePatch("", False)
            patches.append(current)
        elif line.startswith("new file mode") and current is not None:
            current.new_file = True
        elif line.startswith("--- "):
            if current is None or current.hunks:
                current = FilePatch("", False)
                patches.append(current)
            current.new_file = current.new_file or line[4:].strip() == "/dev/null"
        elif line.startswith("+++ ") and current is not None:
            name = line[4:].rstrip("\r\n").split("\t")[0].strip()
            current.path = name[2:] if name.startswith("b/") else name
        elif line.startswith("@@"):
            m = HUNK_HEADER.match(line)
            if not m or current is None or not current.path:
                raise DreamError(f"proposal.diff line {i + 1} is not a valid hunk header: {line.strip()!r}")
            old_len, new_len = int(m[2] if m[2] is not None else 1), int(m[4] if m[4] is not None else 1)
            n += 1
            hunk = Hunk(current.path, int(m[1]), old_len, int(m[3]), new_len, [], n=n)
            i, need_old, need_new = i + 1, old_len, new_len
            while need_old > 0 or need_new > 0:
                if i >= len(lines):
                    raise DreamError(f"hunk {n} ({current.path}) ends early: its header counts more lines")
                body = lines[i]
                tag = body[:1] if body[:1] in (" ", "-", "+") else " "
                text = body[1:] if body[:1] in (" ", "-", "+") else "\n"  # a blank context line lost its space
                if tag == "\\" or body.startswith("\\"):
                    raise DreamError(f"hunk {n} ({current.path}) has a stray line {body.strip()!r}")
                need_old -= tag in " -"
                need_new -= tag in " +"
                if need_old < 0 or need_new < 0:
                    raise DreamError(f"hunk {n} ({current.path}): lines do not match the counts in its header")
                hunk.lines.append((tag, text))
                i += 1
                if i < len(lines) and lines[i].startswith("\\"):
                    hunk.lines[-1] = (tag, text[:-1] if text.endswith("\n") else text)
                    i += 1
            current.hunks.append(hunk)
            continue
        i += 1
    return [p for p in patches if p.path]


def apply_hunks(old: list[str], hunks: list[Hunk]) -> list[str]:
    """Apply hunks (all from one file, any subset, in file order) to the old lines; refuse any mismatch."""
    out: list[str] = []
    pos = 0
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        start = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        expected = [t for tag, t in hunk.lines if tag in " -"]
        if start < pos or old[start : start + len(expected)] != expected:
            raise DreamError(
                f"hunk {hunk.n} does not match {hunk.path} at line {hunk.old_start}: the file or the proposal "
                "was edited by hand; regenerate the proposal"
            )
        out += old[pos:start] + [t for tag, t in hunk.lines if tag in " +"]
        pos = start + len(expected)
    return out + old[pos:]
