"""A fault-injection hook for tests: die with SIGKILL at a named point, exactly like `kill -9` there.

Crash-safety tests start a real `memory-server` process with `MEMORY_SERVER_CRASH_AT=<point>` (several
points separated by commas) in its environment. When that process reaches `crash_point("<point>")` it kills
itself with SIGKILL: no `finally`, no `atexit`, no flushing, so what is left on disk is what a power cut or
an OOM kill would leave at that moment. The test then runs the next command and checks that it recovers.

With `MEMORY_SERVER_PAUSE_AT=<point>` the process stops itself there instead (SIGSTOP), so a test can do
what a person might do at that moment (save a file the process is about to replace) and let it go on with
SIGCONT. Without either variable (every normal run) a call costs two environment lookups and does nothing.

Points:

    atomic-write-before-rename          store.atomic_write: the temp file is written and fsynced, not yet
                                        linked or renamed into place (compression, proposals, state files)
    compress-between-files              compress --all: one transcript's file written, the next not started
    dream-apply-before-journal          dream apply: every temp file written, the journal not yet written
    dream-apply-after-journal           the journal is on disk, no target renamed yet
    dream-apply-after-first-rename      the first target renamed into place, the others not yet
    dream-apply-before-meta             every target renamed; proposal.json and the dream state not written
                                        (`dream reject` passes this point and the next one too)
    dream-apply-before-journal-removed  proposal.json and the dream state written; the journal still there
    index-rebuild-mid-keyword           index --rebuild: half the files read into the uncommitted keyword index
    index-rebuild-after-keyword         the rebuilt keyword index committed; the vectors not yet reset
    index-embedding-between-slices      a slice of a file group's chunks embedded (and cached), the next not yet
    index-vectors-between-batches       a file group's first batch of vectors written to Chroma, not the rest
    index-vectors-before-manifest       a group's vectors written; the manifest does not yet say so
"""

from __future__ import annotations

import os
import signal

ENV = "MEMORY_SERVER_CRASH_AT"
PAUSE_ENV = "MEMORY_SERVER_PAUSE_AT"


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when MEMORY_SERVER_CRASH_AT names `name`, stop it (SIGSTOP) when
    MEMORY_SERVER_PAUSE_AT does; otherwise do nothing."""
    wanted = os.environ.get(ENV)
    if wanted and name in wanted.split(","):
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
    paused = os.environ.get(PAUSE_ENV)
    if paused and name in paused.split(",") and hasattr(signal, "SIGSTOP"):
        os.kill(os.getpid(), signal.SIGSTOP)
