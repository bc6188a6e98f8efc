"""Every error memory-server raises on purpose.

Each message says what went wrong and what to do about it; a tool turns it into an MCP tool error
with that message, and the command line prints it to stderr and exits with status 2.

    MemoryServerError
    ├── ConfigError            memory.yaml or a setting is invalid
    ├── RootError              the memory root is missing or is not a directory
    ├── PathRefusedError       a path resolves outside the root (or the transcript folder), or is not a regular file
    ├── NotFoundError          a path or session inside the root does not exist
    ├── QueryError             a search argument is out of range (k, layers, dates)
    ├── ModelError             the embedding model or its tokenizer cannot be found or loaded
    ├── VectorStoreError       the Chroma index (embedded or server) cannot be reached or used
    ├── LockedError            another process holds a lock we need (index writer, dream, compression)
    ├── IndexUnavailableError  an index cannot be used now, without being damaged (full disk, closing, no file handles)
    ├── TranscriptError        a Claude Code transcript cannot be read at all
    ├── DreamError             a dream proposal cannot be made, applied or rejected
    │   └── StaleProposalError a target file changed after the proposal was written
    └── SetupError             wiring memory-server into Claude Code or a project failed (plugin, hooks, init)
"""

from __future__ import annotations


class MemoryServerError(Exception):
    """Base class: anything memory-server raises deliberately."""


class ConfigError(MemoryServerError):
    """memory.yaml or a setting is invalid."""


class RootError(MemoryServerError):
    """The memory root is missing or not a directory."""


class PathRefusedError(MemoryServerError):
    """A path resolves outside the root, or names something that is not a regular file."""


class NotFoundError(MemoryServerError):
    """A file or session inside the root does not exist."""


class QueryError(MemoryServerError):
    """A search argument is out of range."""


class ModelError(MemoryServerError):
    """The embedding model or tokenizer cannot be found or loaded."""


class VectorStoreError(MemoryServerError):
    """The Chroma vector index cannot be reached or used."""


class LockedError(MemoryServerError):
    """Another process holds a lock this operation needs."""


class IndexUnavailableError(MemoryServerError):
    """An index cannot be used right now (a full disk, a read-only folder, no file handles left, the memory
    is closing), although nothing says it is damaged: no repair is started."""


class TranscriptError(MemoryServerError):
    """A Claude Code transcript cannot be read."""


class DreamError(MemoryServerError):
    """A dream proposal cannot be made, applied or rejected."""


class StaleProposalError(DreamError):
    """A file a proposal targets changed after the proposal was written."""


class SetupError(MemoryServerError):
    """Wiring memory-server into Claude Code or a project failed: the plugin, its hooks, or `init`'s edits."""
