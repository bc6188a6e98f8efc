"""The /dream commands of one memory root, one call each: what `memory-server dream ...` runs, as `memory.dream`.

    with Memory(root) as memory:
        memory.dream.status()                     # due or not, and why
        memory.dream.gather()                     # the evidence pack (dreams/evidence.md)
        memory.dream.propose("items.json")        # verify the agent's items, render the proposal
        memory.dream.propose(memory.dream.keep_items(text))  # items given as text (stdin, an MCP tool)
        memory.dream.apply(changes=[1, 3])        # apply the newest proposal's changes 1 and 3
        memory.dream.dismiss()                    # set the newest `dream run` proposal aside, its sessions read

Each call uses the memory's root and its settings as they are now (the server follows memory.yaml edits);
`propose` places items given without a section by meaning too, when the memory has an embedding model.
The dream's modules are imported by the call that needs them: the server starts without them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memory_server.dream.records import (
    DismissResult,
    DreamStatusReport,
    ProposalView,
    ReviewResult,
    VerdictsResult,
)
from memory_server.errors import DreamError
from memory_server.files.root import MemoryRoot
from memory_server.files.writing import atomic_write
from memory_server.settings import Settings

if TYPE_CHECKING:
    from memory_server.dream.pack import Gathered
    from memory_server.dream.propose import ProposeResult
    from memory_server.index.embedder import Embedder

Clock = Callable[[], float]
ITEMS_FILE = "items.json"  # items given as text, kept under dreams/


class Dreams:
    """The dream commands of `root`. `settings` and `embedder` give the owner's current ones at each call."""

    def __init__(
        self,
        root: MemoryRoot,
        settings: Callable[[], Settings],
        embedder: Callable[[], Embedder | None],
        clock: Clock = time.time,
    ) -> None:
        self.root = root
        self._settings = settings
        self._embedder = embedder
        self.clock = clock

    def status(self) -> DreamStatusReport:
        """Whether a dream is due and why; sessions and verified items waiting; proposals with changes to review."""
        from memory_server.dream.review import dream_status

        return dream_status(self.root, clock=self.clock, settings=self._settings())

    def gather(self) -> Gathered:
        """Write the evidence pack of the sessions no dream has read to dreams/evidence.md."""
        from memory_server.dream.pack import gather

        return gather(self.root, clock=self.clock, settings=self._settings())

    def propose(
        self,
        items_file: str | Path,
        *,
        drop_refused: bool = False,
        redo: str | None = None,
        semantic: bool = True,
    ) -> ProposeResult:
        """Verify the agent's items against the sessions and render dreams/<id>/ (never changes topics/).
        `semantic=False` places items without a section by keywords only."""
        from memory_server.dream.propose import propose

        return propose(
            self.root,
            items_file,
            drop_refused=drop_refused,
            clock=self.clock,
            embedder=self._embedder() if semantic else None,
            redo=redo,
            settings=self._settings(),
        )

    def keep_items(self, text: str) -> Path:
        """Items given as text rather than a file (on stdin, or to the MCP tool), kept as dreams/items.json for
        `propose` to read: what was submitted stays readable next to the proposals."""
        path = self.root.dreams_dir / ITEMS_FILE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        except OSError as exc:
            raise DreamError(
                f"cannot keep the items in {path} ({exc.strerror}): a dream writes under dreams/, so the memory "
                "root must be writable; run it where it is"
            ) from exc
        return path

    def run(self, *, redo: str | None = None) -> ProposeResult:
        """A pass without an agent: repeated errors with their fix, knowledge gaps, stale topics."""
        from memory_server.dream.run import run_dream

        return run_dream(self.root, clock=self.clock, redo=redo, settings=self._settings())

    def show(self, proposal_id: str | None = None) -> ProposalView:
        """A proposal (default: the newest with changes to review), whether it still applies, and its diff."""
        from memory_server.dream.review import show_proposal

        return show_proposal(self.root, proposal_id, settings=self._settings())

    def apply(
        self,
        proposal_id: str | None = None,
        *,
        changes: Sequence[int] | None = None,
        hunks: Sequence[int] | None = None,
    ) -> ReviewResult:
        """Apply a proposal's changes (default: every pending one) to topics/ and MEMORY.md, all or nothing."""
        from memory_server.dream.review import apply_proposal

        return apply_proposal(
            self.root, proposal_id, hunks, changes=changes, clock=self.clock, settings=self._settings()
        )

    def reject(
        self,
        proposal_id: str | None = None,
        *,
        changes: Sequence[int] | None = None,
        hunks: Sequence[int] | None = None,
    ) -> ReviewResult:
        """Reject a proposal's changes (default: every pending one); they are not proposed again."""
        from memory_server.dream.review import reject_proposal

        return reject_proposal(
            self.root, proposal_id, hunks, changes=changes, clock=self.clock, settings=self._settings()
        )

    def dismiss(self, proposal_id: str | None = None) -> DismissResult:
        """Set a `dream run` proposal aside: its sessions count as read, as after applying it (the due note clears)."""
        from memory_server.dream.review import dismiss_proposal

        return dismiss_proposal(self.root, proposal_id, clock=self.clock, settings=self._settings())

    def verdicts(self, verdicts: object, proposal_id: str | None = None) -> VerdictsResult:
        """Record a second reader's verdicts ({"verdicts": [{"change", "verdict", "reason"}]}) on a proposal."""
        from memory_server.dream.review import record_verdicts

        return record_verdicts(self.root, proposal_id, verdicts, clock=self.clock, settings=self._settings())

    def record(self, ref: str, around: int = 6) -> str:
        """The turns around a reference (transcript:<id>:LINE or sessions/...md:LINE), quoted as data."""
        from memory_server.dream.context import render_around

        return render_around(self.root, ref, around, settings=self._settings())
