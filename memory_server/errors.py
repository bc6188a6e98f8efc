"""Every exception class memory-server defines, and the one place each foreign error becomes one of these.

Each message says what went wrong and what to do about it; a tool turns it into an MCP tool error
with that message, and the command line prints it to stderr and exits with status 2.

    MemoryServerError
    ├── ConfigError            memory.yaml or a setting is invalid
    ├── YamlError              YAML that does not parse (PyYAML's errors become this in parse/frontmatter.py)
    │   └── UnsafeYamlError    YAML refused before or while loading: aliases, too large, too deep, odd types
    ├── RootError              the memory root is missing or is not a directory
    ├── PathRefusedError       a path resolves outside the root (or the transcript folder), or is not a regular file
    ├── NotFoundError          a path or session inside the root does not exist
    ├── FileSkipped            a memory file that cannot be indexed (binary, too large, unreadable); carries why
    ├── QueryError             a search argument is out of range (k, layers, dates)
    ├── ModelError             the embedding model or its tokenizer cannot be found or loaded
    ├── VectorStoreError       the Chroma index (embedded or server) cannot be reached or used
    ├── CorruptIndexError      the keyword index file is damaged (truncated, garbage, wrong schema): rebuilt
    ├── LockedError            another process holds a lock we need (index writer, dream, compression)
    ├── IndexUnavailableError  an index cannot be used now, without being damaged (full disk, closing, no file handles)
    │   └── IndexCancelled     an index update stopped because the memory is closing; the next run resumes it
    ├── TranscriptError        a Claude Code transcript cannot be read at all
    ├── DreamError             a dream proposal cannot be made, applied or rejected
    │   └── StaleProposalError a target file changed after the proposal was written
    └── SetupError             wiring memory-server into Claude Code or a project failed (plugin, hooks, init)

    CheckFailed                the outcome of one check, caught where the checks run (not an error of the program)
    ├── Unlocated              a quote is not at the reference it cites (dream/locate.py)
    └── Refused                a proposal item fails a check; the reason is shown with the item (dream/verify.py)

Foreign errors are translated at one boundary each: SQLite's in `api.Memory._keyword_guard` and
`files/sqlite.py`, Chroma's (panics included) in `index/vectors.py`, PyYAML's in `parse/frontmatter.load_yaml`,
onnxruntime's in `index/embedder.py`.
"""

from __future__ import annotations


class MemoryServerError(Exception):
    """Base class: anything memory-server raises deliberately."""


class ConfigError(MemoryServerError):
    """memory.yaml or a setting is invalid."""


class YamlError(MemoryServerError):
    """YAML text that does not parse; the message is PyYAML's (where and what)."""


class UnsafeYamlError(YamlError):
    """YAML refused before or while loading: aliases, anchors, too large, too deep, odd types."""


class RootError(MemoryServerError):
    """The memory root is missing or not a directory."""


class PathRefusedError(MemoryServerError):
    """A path resolves outside the root, or names something that is not a regular file."""


class NotFoundError(MemoryServerError):
    """A file or session inside the root does not exist."""


class FileSkipped(MemoryServerError):
    """A memory file that cannot be indexed (binary, too large, not a regular file); carries why."""


class QueryError(MemoryServerError):
    """A search argument is out of range."""


class ModelError(MemoryServerError):
    """The embedding model or tokenizer cannot be found or loaded."""


class VectorStoreError(MemoryServerError):
    """The Chroma vector index cannot be reached or used."""


class CorruptIndexError(MemoryServerError):
    """The keyword index's SQLite file is not a usable index (truncated, garbage, wrong schema)."""


class LockedError(MemoryServerError):
    """Another process holds a lock this operation needs."""


class IndexUnavailableError(MemoryServerError):
    """An index cannot be used right now (a full disk, a read-only folder, no file handles left, the memory
    is closing), although nothing says it is damaged: no repair is started."""


class IndexCancelled(IndexUnavailableError):
    """An index update was stopped (the memory is closing: the server is shutting down); the next run resumes it."""

    def __init__(self, message: str = "indexing stopped: the memory is closing; the next run resumes it") -> None:
        super().__init__(message)


class TranscriptError(MemoryServerError):
    """A Claude Code transcript cannot be read."""


class DreamError(MemoryServerError):
    """A dream proposal cannot be made, applied or rejected."""


class StaleProposalError(DreamError):
    """A file a proposal targets changed after the proposal was written."""


class SetupError(MemoryServerError):
    """Wiring memory-server into Claude Code or a project failed: the plugin, its hooks, or `init`'s edits."""


class CheckFailed(Exception):  # noqa: N818 - an outcome, not an error of the program
    """The outcome of one check, caught where the checks run; its message is the reason, shown with the item."""


class Unlocated(CheckFailed):
    """A quote is not at the reference it cites (or the reference is not a session the dream reads)."""


class Refused(CheckFailed):
    """A proposal item fails a check."""
