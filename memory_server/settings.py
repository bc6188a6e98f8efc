"""Settings: typed models with checked ranges, read from the defaults, a user-level config and `<root>/memory.yaml`.

Every ranking weight is a named setting here; the LoCoMo benchmark (bench/locomo.py) chose the defaults.
Unknown keys and values out of range are refused when the settings are loaded, naming the key, the value
and what is allowed (a typo should not silently do nothing, and a bad value should not fail later).

Where settings come from, later ones winning:

1. the defaults below;
2. the user-level config: `$MEMORY_SERVER_CONFIG`, else `$XDG_CONFIG_HOME/memory-server/config.yaml`
   (`~/.config/memory-server/config.yaml`); same sections as memory.yaml;
3. the memory root's `memory.yaml` (usually committed with the repository);
4. environment variables: MEMORY_TRANSCRIPTS_DIR (transcripts.dir), MEMORY_AUTO_MEMORY_DIR (auto_memory.dir),
   MEMORY_VECTORS_URL (vectors.url, and backend http), MEMORY_VECTORS_TOKEN (vectors.token).

Trust boundary: anyone who can commit to a repository can change its memory.yaml, so settings that reach
outside the root come only from the user (2 and 4): `transcripts.dir` anywhere but this project's own Claude
Code folder, `auto_memory.dir` anywhere but this project's own Claude Code folders (its path's, its git
root's), and the http vector backend (which sends embeddings and file paths to a server). A memory.yaml
that sets them is refused with a ConfigError saying where to put them instead.

    # memory.yaml
    search:
      default_k: 6
    ranking:
      semantic_weight: 1.0
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory_server.errors import ConfigError, YamlError
from memory_server.files.claude_home import git_roots, project_folder
from memory_server.files.reading import DEFAULT_MAX_FILE_BYTES
from memory_server.files.root import SETTINGS_FILE, USER_CONFIG_ENV, user_config_path

TRANSCRIPTS_DIR_ENV = "MEMORY_TRANSCRIPTS_DIR"
AUTO_MEMORY_DIR_ENV = "MEMORY_AUTO_MEMORY_DIR"
VECTORS_URL_ENV = "MEMORY_VECTORS_URL"
VECTORS_TOKEN_ENV = "MEMORY_VECTORS_TOKEN"
PROMPT_BAR = 2.0  # hooks.prompt_bar: over every score `python bench/prompt_recall.py` saw (no bar reached 0.9)


class _Section(BaseModel):
    # strict: "5" is not a number and 1 is not true; assignment is not re-checked (tests and benchmarks tune
    # values in place)
    model_config = ConfigDict(extra="forbid", strict=True)


class IndexSettings(_Section):
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1)
    max_chunk_chars: int = Field(default=1500, ge=50)  # longer blocks are split on line boundaries
    watch_debounce_seconds: float = Field(default=0.3, ge=0)


class SearchSettings(_Section):
    default_k: int = Field(default=6, ge=1)
    max_k: int = Field(default=50, ge=1, le=1000)
    hit_chars: int = Field(default=700, ge=1)  # text of one hit is cut to this many characters around the match
    budget_chars: int = Field(default=5000, ge=1)  # all hits' text together (about 1,250 tokens plus metadata)
    # candidates taken from each retriever before fusion (max_k when more; never sized by the k asked for)
    candidate_pool: int = Field(default=60, ge=1)

    @model_validator(mode="after")
    def _default_within_max(self) -> SearchSettings:
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) must be at most max_k ({self.max_k})")
        return self


class RankingSettings(_Section):
    # "score": each list's scores normalised (cosine min-max over the pool, BM25 / best BM25) and summed
    # with the weights below; "rrf": reciprocal-rank fusion with constant rrf_k. LoCoMo chose "score".
    fusion: Literal["score", "rrf"] = "score"
    rrf_k: float = Field(default=60.0, gt=0)
    semantic_weight: float = Field(default=0.85, ge=0)
    keyword_weight: float = Field(default=1.0, ge=0)
    # Session routing: a chunk gains file_weight x (its file's summed top-`file_top` scores, relative to the
    # best file's) x the best fused score, so passages from the file that answers best rise together.
    file_weight: float = Field(default=0.7, ge=0)
    file_top: int = Field(default=3, ge=1)
    # Pointers: a MEMORY.md line linking a topic leaves the candidates (it says where the answer is, not what it
    # is) and lends pointer_weight x its score to that topic's candidate passages. Lending any share cost the
    # coding probe (the only set with a MEMORY.md) answers ranked first: 0 (docs/benchmarks.md).
    pointer_weight: float = Field(default=0.0, ge=0)
    # Context: the passages just before and after a strong candidate gain neighbour_weight x its score
    # (the answer often sits next to the passage that matches the question's words).
    neighbour_weight: float = Field(default=0.3, ge=0)
    neighbour_sources: int = Field(default=40, ge=0)  # how many of the best candidates lend weight to their neighbours
    # Precedence: the fused score is multiplied by (1 + bonus) per layer, so on equal relevance a curated
    # topic beats a session, and a session a transcript.
    topic_bonus: float = Field(default=0.05, gt=-1)
    auto_memory_bonus: float = Field(default=0.02, gt=-1)  # Claude Code's auto memory: below topics, above sessions
    session_bonus: float = Field(default=0.0, gt=-1)
    transcript_bonus: float = Field(default=-0.05, gt=-1)
    recency_weight: float = Field(default=0.1, ge=0, le=1)  # share of a session's score that decays with age
    recency_half_life_days: float = Field(default=90.0, gt=0)
    mmr_weight: float = Field(default=0.2, ge=0)  # diversity: penalty for resembling a hit already chosen
    # Diversity by file: among the first n hits one file gets max(file_quota, file_share x n) before
    # same_file_penalty damps its further hits (n, not the k asked for: an answer's first hits do not depend
    # on k). Off by default (penalty 1.0): set it below 1 so one file does not fill an answer while others
    # are relevant.
    file_quota: int = Field(default=4, ge=1)
    file_share: float = Field(default=0.5, ge=0, le=1)
    # 1.0: no damping. Any damping cost LoCoMo and BEAM recall (their answers sit in one session); a file then
    # fills an answer only when each of its passages outranks every other file's (docs/benchmarks.md).
    same_file_penalty: float = Field(default=1.0, ge=0, le=1)
    duplicate_similarity: float = Field(default=0.97, ge=0)  # hits more similar than this to a chosen one are dropped
    # Keyword scores are BM25 / max(best BM25, keyword_floor x the sum of the query words' IDFs, about the
    # BM25 of a chunk holding every query word): a match counts by the share of the query it covers, so
    # common words alone, or one word of a long question, stay small instead of reaching 1.
    keyword_floor: float = Field(default=0.3, ge=0)
    # A chunk holding the query itself (2+ tokens) gains phrase_bonus x keyword_weight.
    phrase_bonus: float = Field(default=1.0, ge=0)
    # Query words found only in a chunk's title/heading: context_weight x keyword_weight x their share.
    context_weight: float = Field(default=0.1, ge=0)
    # In sessions, the assistant's lines weigh this share of the user's (they mostly restate the user).
    assistant_weight: float = Field(default=0.4, ge=0, le=1)
    # When the query asks how the person wants things done ("my preference, always, never"), a line stating a
    # standing wish ("Always ...", "I prefer ...") weighs 1 + wish_weight.
    wish_weight: float = Field(default=0.5, ge=0)
    # Late interaction: the late_pool best candidates gain late_weight x the best score x how well each of
    # the question's tokens finds its closest token in the passage (min-max over those candidates); needs
    # the token vectors that embedding.token_vectors keeps. 0 turns it off.
    late_weight: float = Field(default=1.0, ge=0)
    late_pool: int = Field(default=30, ge=1, le=500)


TokenFormat = Literal["bits", "int8", "off"]


class EmbeddingSettings(_Section):
    model_dir: str | None = None  # folder with model.onnx + tokenizer.json; default: the installed package
    # Token vectors kept for late-interaction reranking: "bits" (48 bytes a token), "int8" (388 bytes a
    # token, a little more exact) or "off" (none; ranking.late_weight then does nothing).
    token_vectors: TokenFormat = "bits"
    batch_size: int = Field(default=32, ge=1, le=4096)
    threads: int | None = Field(default=None, ge=1)

    @field_validator("model_dir")
    @classmethod
    def _expand(cls, value: str | None) -> str | None:
        return os.path.expanduser(value) if value else value


class VectorSettings(_Section):
    backend: Literal["persistent", "http"] = "persistent"  # under .memory/chroma, or a Chroma server
    url: str | None = None  # for http: e.g. http://127.0.0.1:8000
    token: str | None = None  # for http: sent as a bearer token (hosted Chroma)
    collection: str = Field(default="memory", min_length=1, max_length=512)

    @model_validator(mode="after")
    def _http_needs_url(self) -> VectorSettings:
        if self.backend == "http" and not self.url:
            raise ValueError(f"backend http needs a url (set {VECTORS_URL_ENV} or vectors.url in the user config)")
        return self


class TranscriptSettings(_Section):
    # Claude Code's transcripts for this project; searched only when a query asks for layer "transcript".
    # A relative path is relative to the memory root (load_settings makes it absolute).
    dir: str | None = None
    # Kept copies (sessions/transcripts/): a redacted, compressed copy of each transcript a session is
    # compressed from, read when Claude Code has deleted the original (after its cleanupPeriodDays).
    keep: bool = True
    keep_budget_bytes: int = Field(default=4 * 1024 * 1024, ge=16 * 1024)  # per session, compressed
    keep_commit: bool = False  # false: sessions/transcripts/.gitignore keeps them out of git
    cleanup_warn_days: float = Field(default=7.0, ge=0)  # status warns this long before Claude Code's clean-up

    @field_validator("dir")
    @classmethod
    def _expand(cls, value: str | None) -> str | None:
        return os.path.expanduser(value) if value else value


class AutoMemorySettings(_Section):
    # Claude Code's auto memory (projects/<project>/memory/): a read-only layer written by the model.
    enabled: bool = True
    # Default: where Claude Code keeps it for this project (see files/claude_home.py); a relative path is
    # relative to the memory root (load_settings makes it absolute).
    dir: str | None = None

    @field_validator("dir")
    @classmethod
    def _expand(cls, value: str | None) -> str | None:
        return os.path.expanduser(value) if value else value


class DreamSettings(_Section):
    # The due-gate: a dream is due when both hold.
    min_hours: float = Field(default=24.0, ge=0)  # since the last dream
    min_sessions: int = Field(default=5, ge=0)  # compressed sessions closed since (not yet processed by a dream)
    lock_wait_seconds: float = Field(default=5.0, ge=0)  # a second `dream run` waits this long for the first
    # Gathering.
    lesson_min_sessions: int = Field(default=2, ge=1)  # an error becomes a lesson when it shows in this many sessions
    # An item without a section goes to a section holding this share of its content words,
    topic_match_min: float = Field(default=0.3, ge=0, le=1)
    # and (with a model) this cosine with it; with no such section, under "## Updates"
    topic_semantic_min: float = Field(default=0.3, ge=-1, le=1)
    stale_min_sessions: int = Field(default=3, ge=1)  # sessions mentioning a topic's subject since it last changed
    stale_min_days: float = Field(default=14.0, ge=0)  # and the topic is at least this old
    gap_min_asks: int = Field(default=3, ge=1)  # a query asked this often that never found anything good is a gap
    gap_min_coverage: float = Field(default=0.5, ge=0, le=1)  # "good": a hit holding this share of the query's words
    recall_max_events: int = Field(default=5000, ge=1)  # the recall log keeps this many latest searches
    # The agent's pass (gather -> items -> propose).
    # A proposal holds at most this many changes (one item = one change, whatever its number of diff hunks);
    # the other verified items wait in the dream state for the next gather. (`max_hunks`: its earlier name.)
    max_changes: int = Field(default=5, ge=1)
    pack_session_tokens: int = Field(default=2500, ge=100)  # evidence pack: at most this many tokens per session
    pack_topic_lines: int = Field(default=60, ge=0)  # evidence pack: topic lines that share identifiers with it
    pack_max_tokens: int = Field(default=20_000, ge=1_000)  # evidence pack: sessions past this wait for the next dream
    pack_auto_memory_tokens: int = Field(default=1_500, ge=0)  # evidence pack: Claude Code's auto memory entries


class HookSettings(_Section):
    # SessionStart: a brief of what the records say (the last session's open items, decisions and lessons of
    # the last `brief_days` days, topics that may be stale), at most `brief_chars` characters; 0 turns it off.
    brief_chars: int = Field(default=1200, ge=0, le=20_000)
    brief_days: float = Field(default=7.0, ge=0)
    # PostToolUseFailure: the earlier fix of the same error, at most `fix_chars` characters; 0 turns it off.
    fix_chars: int = Field(default=600, ge=0, le=20_000)
    # UserPromptSubmit: per-prompt recall, off by default; at most `prompt_hits` hits scoring at least
    # `prompt_bar` (chosen by bench/prompt_recall.py for precision on real prompts), at most `prompt_chars`.
    prompt_recall: bool = False
    prompt_hits: int = Field(default=2, ge=1, le=2)
    prompt_bar: float = Field(default=PROMPT_BAR, ge=0)
    prompt_chars: int = Field(default=800, ge=100, le=20_000)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    index: IndexSettings = Field(default_factory=IndexSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ranking: RankingSettings = Field(default_factory=RankingSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    transcripts: TranscriptSettings = Field(default_factory=TranscriptSettings)
    auto_memory: AutoMemorySettings = Field(default_factory=AutoMemorySettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    hooks: HookSettings = Field(default_factory=HookSettings)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


# -- loading --------------------------------------------------------------------------------------------


def load_settings(root: Path | str) -> Settings:
    """Defaults, then the user config, then `<root>/memory.yaml`, then the environment (see the module
    docstring); raise ConfigError naming the file, the key and the value at fault."""
    settings = Settings()
    user_file = user_config_path()
    if user_file is not None:
        user_raw = _read_yaml(user_file, required=bool(os.environ.get(USER_CONFIG_ENV)))
        apply_overrides(settings, user_raw, source=str(user_file))
    path = Path(root) / SETTINGS_FILE
    if path.exists():
        raw = _read_yaml(path, required=True)
        check_repository_settings(raw, Path(root), source=str(path))
        apply_overrides(settings, raw, source=str(path))
    apply_overrides(settings, environment_overrides(), source="the environment")
    for section in (settings.transcripts, settings.auto_memory):
        if section.dir and not Path(section.dir).is_absolute():
            # Relative to the root wherever it was set: the folder checked (check_repository_settings) is the
            # folder read, whatever the working directory.
            section.dir = str((Path(root) / section.dir).resolve())
    return settings


def settings_stamp(root: Path | str) -> tuple[object, ...]:
    """How `<root>/memory.yaml` and the user config look on disk (path, time, size, inode): when this changes,
    the settings are read again (the server applies edits without a restart)."""
    stamp: list[object] = []
    for path in (Path(root) / SETTINGS_FILE, user_config_path()):
        if path is None:
            stamp.append(None)
            continue
        try:
            st = path.stat()
            stamp.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            stamp.append((str(path), None))
    return tuple(stamp)


def environment_overrides() -> dict[str, dict[str, Any]]:
    """The settings the environment gives (user-controlled, so trusted like the user config)."""
    out: dict[str, dict[str, Any]] = {}
    if os.environ.get(TRANSCRIPTS_DIR_ENV):
        out["transcripts"] = {"dir": os.environ[TRANSCRIPTS_DIR_ENV]}
    if os.environ.get(AUTO_MEMORY_DIR_ENV):
        out["auto_memory"] = {"dir": os.environ[AUTO_MEMORY_DIR_ENV]}
    if os.environ.get(VECTORS_URL_ENV):
        out["vectors"] = {"backend": "http", "url": os.environ[VECTORS_URL_ENV]}
    if os.environ.get(VECTORS_TOKEN_ENV):
        out.setdefault("vectors", {})["token"] = os.environ[VECTORS_TOKEN_ENV]
    return out


def claude_project_dir(root: Path) -> Path:
    """Claude Code's transcript folder for a project at `root`: `<config>/projects/<path, every character
    but ASCII letters and digits replaced by '-'>`; config is $CLAUDE_CONFIG_DIR, else ~/.claude."""
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(Path(root).expanduser().resolve()))


def check_repository_settings(raw: Any, root: Path, *, source: str) -> None:
    """Refuse settings in a repository's memory.yaml that reach outside the root (see the module docstring)."""
    if not isinstance(raw, dict):
        return  # apply_overrides says what is wrong with the shape
    where = f"put it in your user config ({_user_config_hint()}) or set"
    vectors = raw.get("vectors")
    if isinstance(vectors, dict):
        remote = [key for key in ("url", "token") if vectors.get(key) is not None]
        if vectors.get("backend") == "http" or remote:
            keys = ", ".join(f"vectors.{k}" for k in (["backend"] if vectors.get("backend") == "http" else []) + remote)
            raise ConfigError(
                f"{source} sets {keys}: a repository's memory.yaml may not send the index to a server; "
                f"{where} {VECTORS_URL_ENV} (and {VECTORS_TOKEN_ENV}) in your environment"
            )
    transcripts = raw.get("transcripts")
    if isinstance(transcripts, dict) and isinstance(transcripts.get("dir"), str) and transcripts["dir"]:
        value = transcripts["dir"]
        folder = Path(os.path.expanduser(value))
        real = (folder if folder.is_absolute() else root / folder).resolve()
        own = claude_project_dir(root).resolve()
        if real != own and own not in real.parents:
            raise ConfigError(
                f"{source} sets transcripts.dir: {value}, outside this project's own Claude Code folder ({own}); "
                f"a repository's memory.yaml may not make other transcripts searchable: {where} "
                f"{TRANSCRIPTS_DIR_ENV} in your environment"
            )
    _check_auto_memory_dir(raw.get("auto_memory"), root, source, where)


def _check_auto_memory_dir(section: Any, root: Path, source: str, where: str) -> None:
    """A repository's memory.yaml may point auto_memory.dir only inside this project's own Claude Code folders."""
    if not isinstance(section, dict) or not isinstance(section.get("dir"), str) or not section["dir"]:
        return
    value = section["dir"]
    folder = Path(os.path.expanduser(value))
    real = (folder if folder.is_absolute() else root / folder).resolve()
    own = [project_folder(p).resolve() for p in [*git_roots(root.resolve()), root.resolve()]]
    if not any(real == base or base in real.parents for base in own):
        raise ConfigError(
            f"{source} sets auto_memory.dir: {value}, outside this project's own Claude Code folders "
            f"({', '.join(map(str, own))}); a repository's memory.yaml may not make other files searchable: "
            f"{where} {AUTO_MEMORY_DIR_ENV} in your environment"
        )


# Settings renamed since an earlier release: the old name still works.
RENAMED = {("dream", "max_hunks"): "max_changes"}


def apply_overrides(settings: Settings, raw: Any, *, source: str = "settings") -> None:
    """Apply a nested mapping {section: {key: value}} onto `settings` in place, checking every key and value."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise ConfigError(f"{source} must be a mapping of sections ({', '.join(Settings.model_fields)})")
    merged = settings.model_dump()
    for section, values in raw.items():
        if isinstance(values, dict):
            values = {RENAMED.get((section, k), k): v for k, v in values.items()}
        if isinstance(values, dict) and isinstance(merged.get(section), dict):
            merged[section] = {**merged[section], **values}
        elif values is not None or section not in merged:
            merged[section] = values
    try:
        checked = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, source)) from None
    for name in Settings.model_fields:
        setattr(settings, name, getattr(checked, name))


def describe_errors(exc: ValidationError, source: str) -> str:
    """One sentence per problem: the key, the value given and what is allowed."""
    parts = []
    for error in exc.errors()[:3]:
        loc = [str(p) for p in error["loc"]]
        dotted = ".".join(loc)
        kind = error["type"]
        if kind == "extra_forbidden" and len(loc) == 1:
            parts.append(f"unknown section {loc[0]!r}; known sections: {', '.join(Settings.model_fields)}")
        elif kind == "extra_forbidden":
            section = Settings.model_fields.get(loc[0])
            known = sorted(section.annotation.model_fields) if section and section.annotation else []
            parts.append(f"unknown setting {dotted}; known: {', '.join(known)}")
        elif kind in ("model_type", "model_attributes_type") and len(loc) == 1:
            parts.append(f"section {loc[0]} must be a mapping of settings, got {error['input']!r}")
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            message = message[:1].lower() + message[1:]
            if len(loc) == 1:  # a check across settings of one section
                parts.append(f"{dotted}: {message}")
            else:
                parts.append(f"{dotted}: {error['input']!r} is not allowed: {message}")
    more = len(exc.errors()) - len(parts)
    return f"{source}: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "") + "; fix or remove it"


def _read_yaml(path: Path, *, required: bool) -> Any:
    from memory_server.parse.frontmatter import load_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"settings file {path} does not exist: create it, or unset {USER_CONFIG_ENV}") from None
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read settings file {path} ({exc}); fix it or delete it to use the defaults") from exc
    try:
        return load_yaml(text)
    except YamlError as exc:
        detail = " ".join(str(exc).split())  # one line: errors are printed on one line
        raise ConfigError(f"{path} is not valid YAML ({detail}); fix it or delete it to use the defaults") from exc


def _user_config_hint() -> str:
    named = os.environ.get(USER_CONFIG_ENV)
    return named or "~/.config/memory-server/config.yaml"
