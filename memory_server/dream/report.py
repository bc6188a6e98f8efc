"""REPORT.md of a dream proposal: what a reviewer needs to apply or reject each change, and nothing hidden.

One section per change: its hunks and the lines they add, the kind, stance and target, then the record as
the program read it: each quoted turn's whole sentence with who said it (the person, the agent, a tool's
output, a file, Claude Code) and when, what a bare "yes" answers, each session's failure and fix for a
lesson, every later mention of the subject, the program's warnings, and the second reading's verdict. Then
what waits for the next pass, what was not promoted, refusals, knowledge gaps, topics that may be stale,
notes and the sessions read. Text from sessions and file names is escaped (`as_data`) and quoted; a last
pass redacts secrets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_server.dream.claims import shown_term
from memory_server.dream.gate import format_time
from memory_server.dream.items import ProposalItem
from memory_server.dream.locate import Located
from memory_server.dream.patch import Hunk
from memory_server.dream.records import ChangeRecord
from memory_server.dream.reversals import MAX_MENTIONS, Later
from memory_server.dream.verify import Verified
from memory_server.files.program import program_command
from memory_server.files.program import shown as shown_path
from memory_server.parse.text import as_data
from memory_server.sessions.redact import redact_for_report

STANCE_WORDS = {
    "adopted": "adopted",
    "rejected": "decided against",
    "hypothetical": "only supposed",
    "reverted": "taken back later",
}
NOT_READ = "not done yet"
READING_LINE = "- Second reading (change {n}): {verdict}"


@dataclass
class ReportInput:
    dream_id: str
    created: float
    origin: str  # "agent" (dream propose) or "run" (dream run, no agent)
    sessions: list[str]
    hunks: list[Hunk]
    changes: list[ChangeRecord]  # proposal.json's change records, in order
    proposed: list[Verified]  # the same changes, as verified
    held_back: list[tuple[Verified, str]]  # (item, why it waits)
    listed: list[Verified]
    refusals: list[str]
    extra: dict[str, Any]  # "gaps": [...], "stale": [...], "notes": [...]
    max_changes: int = 5
    waiting_total: int = 0  # verified items waiting in the dream state after this pass (these and older ones)
    root: Path | None = None  # the memory root, named in the commands the report gives


def shown(text: str, limit: int = 240) -> str:
    """Text from a session or a file on one line: spacing collapsed, escaped, cut at `limit`."""
    text = as_data(re.sub(r"[ \t\n]+", " ", text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _fence(lines: list[str], lang: str = "markdown") -> list[str]:
    ticks = "`" * max(3, max((len(r) for ln in lines for r in re.findall(r"`+", ln)), default=0) + 1)
    return [f"{ticks}{lang}", *lines, ticks]


def _header(r: ReportInput) -> list[str]:
    made = (
        "the agent's items, each checked against the record"
        if r.origin == "agent"
        else "`dream run` without an agent: repeated errors with their fix, knowledge gaps and stale topics only"
    )
    out = [
        f"# Dream {r.dream_id}",
        "",
        f"Made {format_time(r.created)} from {_plural(len(r.sessions), 'session')} ({made}). Nothing in topics/ "
        "or MEMORY.md has changed: a person applies or rejects each change.",
        "",
    ]
    if not r.hunks:
        return [*out, "No changes to topics are proposed.", ""]
    files = sorted({h.path for h in r.hunks})
    dream = f"{program_command()} dream"  # commands a person can paste into any terminal
    root = f" --root {shown_path(r.root)}" if r.root is not None else ""
    out += [
        f"- Proposal: `dreams/{r.dream_id}/proposal.diff` ({_plural(len(r.changes), 'change')} in "
        f"{_plural(len(r.hunks), 'hunk')} in {_plural(len(files), 'file')}: {', '.join(files)})",
        f"- Review: `{dream} show {r.dream_id}{root}`",
        f"- Apply: `{dream} apply {r.dream_id}{root}` (every change still pending), or `--changes 1,3`",
        f"- Reject: `{dream} reject {r.dream_id}{root} --changes 2` (a rejected change, or one close to it, "
        "is never proposed again)",
        "",
    ]
    if r.origin == "agent":
        out += [
            "**Second reading: not done yet.** Nobody but the program has checked these changes against the "
            "record. The /dream skill has a fresh reader check each one (`memory-server dream verdicts`); until "
            "then, read each change's record below yourself.",
            "",
            f"Items are taken in the order given, at most {r.max_changes} changes (`dream.max_changes`); each change "
            "is in hunks of its own.",
            "",
        ]
    return out


def _quote_lines(x: Located) -> list[str]:
    t = x.turn
    head = f"  - `{t.ref}` {t.date or 'undated'}, **{x.who}**" + (
        f" ({t.kind}" + (f", {shown(t.tool, 80)}" if t.tool else "") + ")"
    )
    if x.session.kept:  # Claude Code deleted the transcript: the line was read from the root's copy
        head += f" (read from the kept copy `{shown(x.session.kept, 120)}`)"
    out = [head + ":"]
    if t.asked:
        out.append(f"    - what it answers (`{t.asked_ref}`): > {shown(t.asked, 400)}")
    out.append(f"    > {shown(x.sentence, 600)}")
    if len(x.sentence) > len(x.quote.quote) + 20:
        out.append(f'    - quoted part: "{shown(x.quote.quote, 200)}"')
    return out


def _earlier_lines(later: Later | None) -> list[str]:
    if later is None or not later.earlier:
        return []
    out = ["- Earlier, the person on the subject (before the first quote; does the change go against it?):"]
    return out + [f"  - `{m.ref}` {m.date or 'undated'}: > {shown(m.sentence, 300)}" for m in later.earlier]


def _later_lines(later: Later | None) -> list[str]:
    if later is None:
        return []
    terms = ", ".join(f"`{shown(shown_term(t), 40)}`" for t in later.terms[:6])
    if not later.mentions:
        return [f"- Later mentions of the subject ({terms}): none in the sessions read since."]
    chosen, more = later.shown()
    out = [f"- Later mentions of the subject ({terms}), takes-backs first, then the person's: changed later?"]
    out += [
        f"  - `{m.ref}` {m.date or 'undated'}, {m.who}"
        + (" (takes it back?)" if m.reverses else "")
        + f": > {shown(m.sentence, 300)}"
        for m in chosen
    ]
    if more:
        out.append(
            f"  - … and {more} more, not listed (past the first {MAX_MENTIONS}, or in other sessions without naming"
            " the subject well: common words only)"
        )
    return out


def _where_in_topic(item: ProposalItem) -> str:
    """A correction is where the lines it replaces are (often in several sections); a new line, its section."""
    if item.replace_lines:
        return " (the lines it replaces, below)"
    return f" § {shown(item.section, 80)}" if item.section else ""


def _change_section(r: ReportInput, record: ChangeRecord, v: Verified) -> list[str]:
    item = v.item
    hunks = [h for h in r.hunks if h.n in record["hunks"]]
    out = [f"## Change {record['n']}: {shown(item.statement, 200)}", ""]
    where = ", ".join(f"#{h.n} (`{h.path}`)" for h in hunks)
    out += [
        f"- In proposal.diff: hunk{'s' if len(hunks) > 1 else ''} {where}",
        f"- Kind: {item.kind}; stance: {STANCE_WORDS[item.stance]}; target: `{shown(item.topic, 120)}`"
        + _where_in_topic(item),
    ]
    # in a fenced block `<` is literal: escaped, `entire/<hash>` would read as a change that adds a backslash
    shown_hunks = [f"{tag}{as_data(t.rstrip(chr(13) + chr(10)), markdown=False)}" for h in hunks for tag, t in h.lines]
    if shown_hunks:
        out += ["- The change, with the topic's lines around it:", "", *_fence(shown_hunks, "diff"), ""]
    if item.replace_lines:
        lines = ", ".join(f"`{ref}`" for ref in item.replace_lines)
        out.append(f"- Replaces `{shown(item.old, 80)}` by `{shown(item.new, 80)}` on {lines} (only that span)")
    out += [f"- {shown(note, 800)}" for note in v.notes]
    out.append("- The record (each quote's whole sentence, who said it, when):")
    for x in v.located:
        out += _quote_lines(x)
    for case in v.lessons:
        out.append(
            f"- Lesson in `{shown(case.session, 120)}`: failed at `{case.failure}` > {shown(case.error, 200)}; "
            f"fixed at `{case.fix}` > {shown(case.fix_text, 200)}"
        )
    out += _earlier_lines(v.later)
    out += _later_lines(v.later)
    out += [f"- Warning: {shown(w, 400)}" for w in v.warnings]
    out += [READING_LINE.format(n=record["n"], verdict=NOT_READ), f"- Fingerprint: `{item.fingerprint}`", ""]
    return out


def _refs(item: ProposalItem) -> str:
    """An item's first four distinct evidence references."""
    refs = list(dict.fromkeys(q.ref for q in item.evidence))[:4]
    return ", ".join(f"`{shown(ref, 120)}`" for ref in refs)


def _listed(r: ReportInput) -> list[str]:
    out: list[str] = []
    if r.held_back or r.waiting_total:
        one = r.waiting_total == 1
        waits = (
            f"{_plural(r.waiting_total, 'verified item')} {'waits' if one else 'wait'} in the dream state with "
            f"{'its' if one else 'their'} evidence; the next `memory-server dream gather` lists "
            f"{'it' if one else 'them'} first and `dream status` counts {'it' if one else 'them'}."
        )
        out += ["## Verified, waiting for the next proposal", "", waits + " Held back by this pass:", ""]
        out += [
            f"- {v.item.kind}: {shown(v.item.statement, 1000)} (`{shown(v.item.topic, 80)}`; {_refs(v.item)}): {why}"
            for v, why in r.held_back
        ] + [""]
    if r.listed:
        out += [
            "## Not promoted",
            "",
            "Verified, but not for a topic: questions, hypotheses, things taken back, gaps.",
            "",
        ]
        out += [
            f"- {v.item.kind}, {STANCE_WORDS[v.item.stance]}: {shown(v.item.statement, 200)} "
            f"({', '.join('`' + q.ref + '`' for q in v.item.evidence[:3])})"
            for v in r.listed
        ] + [""]
    if r.refusals:
        out += ["## Refused items", ""] + [f"- {shown(x, 500)}" for x in r.refusals] + [""]
    return out


def _gaps_and_stale(r: ReportInput) -> list[str]:
    out: list[str] = []
    gaps = r.extra.get("gaps") or []
    if gaps:
        out += ["## Knowledge gaps", "", "Asked again and again, never answered well: worth a topic.", ""]
        for g in gaps:
            asked = "; ".join(f'"{shown(q, 80)}"' for q in g["queries"][:3])
            out.append(
                f"- {asked}: asked {g['asks']} times, last {format_time(g['last_asked'])}; best hit held "
                f"{g['best_coverage']:.0%} of the query's words"
            )
        out.append("")
    stale = r.extra.get("stale") or []
    if stale:
        out += ["## Topics that may be stale", "", "Review these by hand; no change is proposed for them.", ""]
        out += [
            f"- `{shown(s['path'], 120)}` (updated {s['updated']}): {s['age_days']} days older than the newest "
            f"session; its subject comes up in {_plural(len(s['sessions']), 'session')} since: "
            + ", ".join(f"`{shown(x, 120)}`" for x in s["sessions"][:5])
            for s in stale
        ] + [""]
    return out


def render_report(r: ReportInput) -> str:
    out = _header(r)
    notes = r.extra.get("notes") or []
    unchecked = next((n for n in notes if str(n).startswith("names not checked")), None)
    if unchecked:
        out += [f"**{shown(unchecked, 300)}.**", ""]
    for record, v in zip(r.changes, r.proposed, strict=True):
        out += _change_section(r, record, v)
    out += _listed(r) + _gaps_and_stale(r)
    if notes:
        out += ["## Notes", ""] + [f"- {shown(n, 400)}" for n in notes] + [""]
    out += ["## Sessions read", ""] + [f"- `{shown(s, 200)}`" for s in r.sessions] + [""]
    # A last pass: a secret quoted from a session, a topic or a past query never reaches the report.
    return redact_for_report("\n".join(out))


def record_reading(report: str, n: int, verdict: str, reason: str) -> str:
    """REPORT.md with change `n`'s second-reading line set to the reader's verdict and reason."""
    old = READING_LINE.format(n=n, verdict=NOT_READ)
    new = READING_LINE.format(n=n, verdict=f"**{verdict}** ({shown(reason, 400)})")
    return redact_for_report(report.replace(old, new, 1))


def mark_read(report: str, summary: str) -> str:
    """REPORT.md with its "not done yet" notice replaced by who read it and what they found."""
    start = report.find("**Second reading: not done yet.**")
    if start < 0:
        return report
    end = report.find("\n\n", start)
    return report[:start] + f"**Second reading: {shown(summary, 400)}**" + report[end:]
