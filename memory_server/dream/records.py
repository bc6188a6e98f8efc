"""The dream's records on disk and what its commands return, typed once: the dream state
(`.memory/dream-state.json`), a proposal's metadata (`dreams/<id>/proposal.json`), and the answers of
`dream status`, `show`, `apply`, `reject` and `verdicts`.

They are JSON objects on disk (read back as written, so older files keep working), hence TypedDicts: each
key is spelled here once, and mypy checks every use of it.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

HunkStatus = Literal["pending", "withheld", "applied", "rejected"]
Decided = Literal["applied", "rejected"]


class SessionRead(TypedDict):
    """A session file a dream has read: which dream, and when (seconds since the epoch)."""

    dream: str | None
    at: float


class Decision(TypedDict):
    """An applied or rejected change, by its item's fingerprint: never proposed again as it was."""

    proposal: str | None
    hunk: int | None
    at: float
    statement: str
    target: str
    summary: NotRequired[str]


class HeldItem(TypedDict):
    """A verified item a proposal could not take; the next `dream gather` lists it first."""

    item: dict[str, object]  # the item as the agent submitted it
    statement: str
    kind: str
    topic: str
    sessions: list[str]
    proposal: str
    at: float
    why: str


class DreamState(TypedDict):
    version: int
    last_dream: float | None
    processed: dict[str, SessionRead]  # sessions the agent's /dream has read
    rejected: dict[str, Decision]
    applied: dict[str, Decision]
    held: dict[str, HeldItem]
    run_read: dict[str, SessionRead]  # sessions `dream run` (no agent) has read


def empty_state() -> DreamState:
    return {
        "version": 1,
        "last_dream": None,
        "processed": {},
        "rejected": {},
        "applied": {},
        "held": {},
        "run_read": {},
    }


class Reading(TypedDict):
    """A second reader's verdict on a change."""

    verdict: str
    reason: str
    at: float


class ChangeRecord(TypedDict):
    """One change (one item) of a proposal, with the hunks that carry it (a proposal made before changes
    were recorded has one per hunk, with only n, hunks, statement and reading)."""

    n: int
    hunks: list[int]
    statement: str
    reading: Reading | None
    fingerprint: NotRequired[str]
    kind: NotRequired[str]
    stance: NotRequired[str]
    target: NotRequired[str]


class HunkRecord(TypedDict):
    n: int
    path: str
    fingerprints: list[str]
    change: int | None
    kinds: list[str]
    summary: str
    status: HunkStatus
    applied_at: NotRequired[float]
    rejected_at: NotRequired[float]


class ItemRecord(TypedDict):
    kind: str
    statement: str
    stance: str
    target: str
    evidence: list[str]


class ProposalMeta(TypedDict):
    """`dreams/<id>/proposal.json`: what a proposal read, proposes, and what became of each hunk."""

    version: int
    id: str
    created: float
    created_utc: str
    origin: str  # agent or run
    status: str  # pending, empty, done, superseded
    sessions: list[str]
    targets: dict[str, str | None]  # target path -> sha256 when the proposal was made (None: a new file)
    current: dict[str, str | None]  # ... as the proposal's own applied hunks left it
    base: dict[str, str | None]  # target path -> the text the hunks apply to
    changes: list[ChangeRecord]
    hunks: list[HunkRecord]
    items: dict[str, ItemRecord]
    second_reading: str
    held_back: list[str]
    superseded_by: NotRequired[str]
    reviewed_at: NotRequired[float]  # a `dream run` proposal a person reviewed: its sessions count as read


class ProposalSummary(TypedDict):
    id: str
    created: float
    status: str
    hunks: int
    pending_hunks: list[int]


class Thresholds(TypedDict):
    min_hours: float
    min_sessions: int


class DreamStatusReport(TypedDict):
    """`dream status`: due or not and why, what waits, the proposals with changes to review."""

    due: bool
    reason: str
    unprocessed_sessions: int
    waiting_items: int
    last_dream: float | None
    last_dream_utc: str
    flag: bool
    thresholds: Thresholds
    proposals_to_review: list[ProposalSummary]
    clears: str  # what ends a due dream


class ChangeView(ChangeRecord):
    status: str
    paths: list[str]


class ProposalView(TypedDict):
    """`dream show`: a proposal, its changes and hunks, and whether it still applies."""

    id: str
    created_utc: str | None
    status: str
    report: str
    diff: str | None
    sessions: list[str]
    hunks: list[HunkRecord]
    changes: list[ChangeView]
    second_reading: str
    check: str
    diff_text: str
    proposals: list[ProposalSummary]


class ReviewResult(TypedDict):
    """`dream apply` and `dream reject`: the hunks and changes done, and the files written."""

    id: str
    action: str
    hunks: list[int]
    changes: list[int]
    added: list[int]
    files: list[str]
    reviewed: list[str]  # sessions of a `dream run` proposal that now count as read (its review is complete)


class DismissResult(TypedDict):
    """`dream dismiss`: a `dream run` proposal set aside; its sessions count as read."""

    id: str
    reviewed: list[str]  # sessions that now count as read
    left: list[int]  # changes left unapplied (not remembered as rejected)
    already: bool  # it was reviewed before: nothing changed


class VerdictsResult(TypedDict):
    id: str
    accepted: list[int]
    withheld: list[int]
    unread: list[int]
    summary: str
