"""REPORT.md of a dream proposal: one section per hunk (what it says, the stance, the evidence quoted with
its reference and date), then what waits for the next pass, what was not promoted, refusals, knowledge
gaps, topics that may be stale, and the sessions read. Every quoted text goes through redaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memory_server.dream.evidence import SessionEvidence
from memory_server.dream.gate import format_time
from memory_server.dream.patch import Hunk
from memory_server.dream.verify import Verified
from memory_server.sessions.redact import redact_for_report

STANCE_WORDS = {
    "adopted": "adopted",
    "rejected": "decided against",
    "hypothetical": "only supposed",
    "reverted": "taken back later",
}


@dataclass
class ReportInput:
    dream_id: str
    created: float
    origin: str  # "agent" (dream propose) or "run" (dream run, no agent)
    sessions: list[str]
    hunks: list[Hunk]
    proposed: dict[str, Verified]
    held_back: list[tuple[Verified, str]]  # (item, why it waits)
    listed: list[Verified]
    refusals: list[str]
    extra: dict[str, Any]  # "gaps": [...], "stale": [...], "notes": [...]
    evidence: list[SessionEvidence]
    max_changes: int = 5
    waiting_total: int = 0  # verified items waiting in the dream state after this pass (these and older ones)


def _one_line(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _item_section(v: Verified, dates: dict[str, str | None]) -> list[str]:
    item = v.item
    out = [
        f"- Kind: {item.kind}; stance: {STANCE_WORDS[item.stance]}; target: `{item.topic}`"
        + (f" § {item.section}" if item.section else "")
    ]
    out += [f"- {note}" for note in v.notes]
    if item.replace_lines:
        out.append(f"- Replaces `{item.old}` by `{item.new}` on {', '.join('`' + r + '`' for r in item.replace_lines)}")
    out.append("- Evidence:")
    for q in item.evidence:
        role = f" ({q.role})" if q.role != "support" else ""
        out.append(f'  - `{q.ref}` {dates.get(q.source) or ""}{role}: "{_one_line(q.quote, 300)}"')
    out += [f"- Fingerprint: `{item.fingerprint}`", ""]
    return out


def render_report(r: ReportInput) -> str:
    dates = {s.ref_base: s.date for s in r.evidence}
    files = sorted({h.path for h in r.hunks})
    made = (
        "the agent's items, each verified against the sessions"
        if r.origin == "agent"
        else ("`dream run` without an agent: repeated errors with their fix, knowledge gaps and stale topics only")
    )
    out = [
        f"# Dream {r.dream_id}",
        "",
        f"Made {format_time(r.created)} from {_plural(len(r.sessions), 'new session')} ({made}). Nothing in "
        "topics/ or MEMORY.md has changed: a person applies or rejects this proposal.",
        "",
    ]
    notes = r.extra.get("notes") or []
    if r.hunks:
        out += [
            f"- Proposal: `dreams/{r.dream_id}/proposal.diff` ({_plural(len(r.proposed), 'change')} in "
            f"{_plural(len(r.hunks), 'hunk')} in "
            f"{_plural(len(files), 'file')}: {', '.join(files)})",
            f"- Review: `memory-server dream show {r.dream_id}`",
            f"- Apply: `memory-server dream apply {r.dream_id}` (all), or `--hunks 1,3` for some",
            f"- Reject: `memory-server dream reject {r.dream_id} --hunks 2` (a rejected change is never proposed "
            "again)",
            "",
        ]
    else:
        out += ["No changes to topics are proposed.", ""]
    if r.origin == "agent":
        out += [
            f"Items are taken in the order given, at most {r.max_changes} changes (`dream.max_hunks`): one item is "
            "one change, whatever number of hunks it shows as.",
            "",
        ]
    if any(str(n).startswith("names not checked") for n in notes):
        out += [f"**{next(n for n in notes if str(n).startswith('names not checked'))}.**", ""]
    hunks_of: dict[str, list[int]] = {}
    for hunk in r.hunks:
        for k in hunk.keys:
            hunks_of.setdefault(k, []).append(hunk.n)
    shown: set[str] = set()
    for hunk in r.hunks:
        items = [r.proposed[k] for k in hunk.keys if k in r.proposed]
        out += [f"## Hunk {hunk.n}: {hunk.path}", ""]
        if len(items) > 1:
            out += [
                f"This hunk carries {len(items)} items (their lines are adjacent): applying or rejecting it "
                "takes them together.",
                "",
            ]
        added = [t.rstrip("\r\n") for tag, t in hunk.lines if tag == "+" and t.strip()]
        if added:
            out += ["Proposed lines:", "", "```markdown", *added, "```", ""]
        for v in items:
            out += [f"### {_one_line(v.item.statement, 160)}", ""]
            many = hunks_of.get(v.item.fingerprint, [])
            if len(many) > 1:
                out += [
                    f"- One change over hunks {', '.join(map(str, many))}"
                    + (" (described at the first)" if v.item.fingerprint in shown else ""),
                    "",
                ]
            if v.item.fingerprint in shown:
                continue
            shown.add(v.item.fingerprint)
            out += _item_section(v, dates)
    if r.held_back or r.waiting_total:
        waits = (
            f"{_plural(r.waiting_total, 'verified item')} wait in the dream state with their evidence; the "
            "next `memory-server dream gather` lists them first and `dream status` counts them."
        )
        out += ["## Verified, waiting for the next proposal", "", waits + " Held back by this pass:", ""]
        out += [
            f"- {v.item.kind}: {_one_line(v.item.statement, 200)} (`{v.item.topic}`): {why}" for v, why in r.held_back
        ] + [""]
    if r.listed:
        out += [
            "## Not promoted",
            "",
            "Verified, but not for a topic: questions, hypotheses, things taken back, gaps.",
            "",
        ]
        out += [
            f"- {v.item.kind}, {STANCE_WORDS[v.item.stance]}: {_one_line(v.item.statement, 200)} "
            f"({', '.join('`' + q.ref + '`' for q in v.item.evidence[:3])})"
            for v in r.listed
        ] + [""]
    if r.refusals:
        out += ["## Refused items", ""] + [f"- {_one_line(x, 400)}" for x in r.refusals] + [""]
    gaps = r.extra.get("gaps") or []
    if gaps:
        out += ["## Knowledge gaps", "", "Asked again and again, never answered well: worth a topic.", ""]
        for g in gaps:
            asked = "; ".join(f'"{_one_line(q, 80)}"' for q in g["queries"][:3])
            out.append(
                f"- {asked}: asked {g['asks']} times, last {format_time(g['last_asked'])}; best hit held "
                f"{g['best_coverage']:.0%} of the query's words"
            )
        out.append("")
    stale = r.extra.get("stale") or []
    if stale:
        out += ["## Topics that may be stale", "", "Review these by hand; no change is proposed for them.", ""]
        out += [
            f"- `{s['path']}` (updated {s['updated']}): {s['age_days']} days older than the newest session; its "
            f"subject comes up in {_plural(len(s['sessions']), 'session')} since: "
            + ", ".join(f"`{x}`" for x in s["sessions"][:5])
            for s in stale
        ] + [""]
    if notes:
        out += ["## Notes", ""] + [f"- {_one_line(n, 400)}" for n in notes] + [""]
    out += ["## Sessions read", ""] + [f"- `{s}`" for s in r.sessions] + [""]
    # A last pass: a secret quoted from a session, a topic or a past query never reaches the report.
    return redact_for_report("\n".join(out))
