"""REPORT.md of a dream proposal: one section per hunk (reason, evidence with file and lines, scores),
then knowledge gaps, topics that may be stale, what stayed under the threshold, and notes."""

from __future__ import annotations

import re

from memory_server.dream.candidates import Candidate, Evidence
from memory_server.dream.gate import format_time
from memory_server.dream.patch import Hunk
from memory_server.settings import DreamSettings

KIND_TITLES = {"drift": "policy drift", "decision": "decision", "lesson": "lesson", "stale": "may be stale"}
SIGNALS = ("support", "recency", "recall_count", "recall_quality", "distinct_queries", "rule")


def _one_line(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _evidence(ev: Evidence) -> str:
    return f"`{ev.where()}` ({ev.date or 'undated'}): {_one_line(ev.text)}"


def scores_line(cand: Candidate, settings: DreamSettings) -> str:
    parts = [f"prior {cand.signals.get('prior', 0.0):.2f}"]
    for name in SIGNALS:
        parts.append(f"{name} {cand.signals.get(name, 0.0):.2f} × {getattr(settings, 'weight_' + name):.2f}")
    searches = int(cand.signals.get("searches", 0))
    return (
        f"score {cand.score:.2f} (threshold {settings.min_score:.2f}): {'; '.join(parts)}; "
        f"{searches} recorded search{'es' if searches != 1 else ''} found this evidence"
    )


def reason(cand: Candidate) -> str:
    if cand.kind == "drift" and cand.payload.get("rewrite"):
        line = cand.topic_lines[0]
        return (
            f"{line.where()} says nearly the same as a newer session, but not the same. Both are shown with their "
            "dates; the proposal replaces the topic's line by the session's statement. Confirm which is true now."
        )
    if cand.kind == "drift":
        old, new = cand.payload["old"], cand.payload["new"]
        return (
            f"{cand.target} still says {old}, but a newer session says the project moved from {old} to {new}. "
            f"Both are shown with their dates; the proposal rewrites the lines that say {old}. The wording is "
            "mechanical: check commands and names before applying."
        )
    if cand.kind == "decision":
        where = f"the section \"{cand.payload['heading']}\" of {cand.target}" if cand.payload["heading"] else cand.target
        return f"A session states a decision or rule that {cand.target} does not record yet; proposed for {where}."
    if cand.kind == "lesson":
        return (
            f"The same error shows in {len(cand.sessions)} sessions; proposed as an entry of {cand.target} "
            "with the mistake, the fix and the sessions."
        )
    return f"{cand.target} has not changed since {cand.payload.get('since')} while {len(cand.sessions)} sessions mention its subject."


def candidate_section(cand: Candidate, settings: DreamSettings) -> list[str]:
    out = [f"Reason: {reason(cand)}", ""]
    if cand.topic_lines:
        out.append(f"What {cand.target} says today (changed {cand.topic_lines[0].date or 'on an unknown date'}):")
        out += [f"- `{ev.where()}`: {_one_line(ev.text)}" for ev in cand.topic_lines]
        out.append("")
    out.append("What the sessions say:")
    out += [f"- {_evidence(ev)}" for ev in sorted(cand.evidence, key=lambda e: (e.ts, e.path, e.start_line))]
    for ev in cand.payload.get("contradicted_by", []):
        out.append(f"- earlier, the other way round: {_evidence(ev)}")
    out += ["", f"Scores: {scores_line(cand, settings)}", "", f"Fingerprint: `{cand.fingerprint}`", ""]
    return out


def render_report(
    dream_id: str,
    created: float,
    sessions: list[str],
    hunks: list[Hunk],
    proposed: dict[str, Candidate],
    stale: list[Candidate],
    below: list[Candidate],
    gaps: list[dict],
    notes: list[str],
    settings: DreamSettings,
) -> str:
    files = sorted({h.path for h in hunks})
    out = [
        f"# Dream {dream_id}",
        "",
        f"Made {format_time(created)} from {len(sessions)} new session{'s' if len(sessions) != 1 else ''}. "
        "Nothing in topics/ or MEMORY.md has changed: a person applies or rejects this proposal.",
        "",
    ]
    if hunks:
        out += [
            f"- Proposal: `dreams/{dream_id}/proposal.diff` ({len(hunks)} hunk{'s' if len(hunks) != 1 else ''} "
            f"in {len(files)} file{'s' if len(files) != 1 else ''}: {', '.join(files)})",
            f"- Review: `memory-server dream show {dream_id}`",
            f"- Apply: `memory-server dream apply {dream_id}` (all), or `--hunks 1,3` for some",
            f"- Reject: `memory-server dream reject {dream_id} --hunks 2` (a rejected change is never proposed again)",
            "",
        ]
    else:
        out += ["No changes to topics are proposed.", ""]
    for hunk in hunks:
        cands = [proposed[k] for k in hunk.keys if k in proposed]
        kinds = ", ".join(dict.fromkeys(KIND_TITLES[c.kind] for c in cands))
        out += [f"## Hunk {hunk.n}: {hunk.path} ({kinds})", ""]
        added = [t.rstrip("\r\n") for tag, t in hunk.lines if tag == "+" and t.strip()]
        if added:
            out += ["Proposed lines:", "", "```markdown", *added, "```", ""]
        for cand in cands:
            if len(cands) > 1:
                out += [f"### {_one_line(cand.summary, 120)}", ""]
            out += candidate_section(cand, settings)
    if gaps:
        out += ["## Knowledge gaps", "", "Asked again and again, never answered well: worth a topic.", ""]
        for g in gaps:
            asked = "; ".join(f'"{_one_line(q, 80)}"' for q in g["queries"][:3])
            out.append(
                f"- {asked}: asked {g['asks']} times, last {format_time(g['last_asked'])}; best hit held "
                f"{g['best_coverage']:.0%} of the query's words"
            )
        out.append("")
    if stale:
        out += ["## Topics that may be stale", "", "Review these by hand; no change is proposed for them.", ""]
        for cand in stale:
            out += [f"### {cand.target}", ""] + candidate_section(cand, settings)
    if below:
        out += ["## Not proposed: under the threshold", ""]
        out += [
            f"- {KIND_TITLES[c.kind]}: {_one_line(c.summary, 160)} (score {c.score:.2f}; "
            f"{', '.join('`' + e.where() + '`' for e in c.evidence[:3])})"
            for c in below
        ]
        out.append("")
    if notes:
        out += ["## Notes", ""] + [f"- {_one_line(n, 400)}" for n in notes] + [""]
    out += ["## Sessions processed", ""] + [f"- `{s}`" for s in sessions] + [""]
    return "\n".join(out)
