"""Settings: defaults, overridden by `<root>/memory.yaml`.

Every ranking weight is a named setting here; the LoCoMo benchmark (bench/locomo.py) chose the defaults.
Unknown keys are an error (a typo should not silently do nothing).

    # memory.yaml
    search:
      default_k: 6
    ranking:
      semantic_weight: 1.0
    vectors:
      backend: http          # use a Chroma server instead of the embedded store
      url: http://127.0.0.1:8000
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memory_server.errors import ConfigError
from memory_server.files.store import DEFAULT_MAX_FILE_BYTES, SETTINGS_FILE


@dataclass
class IndexSettings:
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_chunk_chars: int = 1500  # longer blocks are split on line boundaries
    watch_debounce_seconds: float = 0.3


@dataclass
class SearchSettings:
    default_k: int = 6
    max_k: int = 50
    hit_chars: int = 700  # text of one hit is cut to this many characters around the match
    budget_chars: int = 5000  # all hits' text together (about 1,250 tokens plus metadata)
    candidate_pool: int = 60  # candidates taken from each retriever before fusion


@dataclass
class RankingSettings:
    # "score": each list's scores normalised (cosine min-max over the pool, BM25 / best BM25) and summed
    # with the weights below; "rrf": reciprocal-rank fusion with constant rrf_k. LoCoMo chose "score".
    fusion: str = "score"
    rrf_k: float = 60.0
    semantic_weight: float = 0.7
    keyword_weight: float = 1.0
    # Session routing: a chunk gains file_weight x (its file's summed top-`file_top` scores, relative to the
    # best file's) x the best fused score, so passages from the file that answers best rise together.
    file_weight: float = 0.5
    file_top: int = 3
    # Context: the passages just before and after a strong candidate gain neighbour_weight x its score
    # (the answer often sits next to the passage that matches the question's words).
    neighbour_weight: float = 0.3
    neighbour_sources: int = 40  # how many of the best candidates lend weight to their neighbours
    # Precedence: the fused score is multiplied by (1 + bonus) per layer, so on equal relevance a curated
    # topic beats a session, and a session a transcript.
    topic_bonus: float = 0.05
    session_bonus: float = 0.0
    transcript_bonus: float = -0.05
    recency_weight: float = 0.1  # share of a session's score that decays with age (topics never decay)
    recency_half_life_days: float = 90.0
    mmr_weight: float = 0.2  # diversity: penalty for resembling a hit already chosen (x best score x cosine)
    # Diversity by file: one file gets max(file_quota, file_share x k) hits before same_file_penalty applies
    # to its further hits; so a default answer never holds five chunks of one file while others are relevant.
    file_quota: int = 4
    file_share: float = 0.5
    same_file_penalty: float = 0.5
    duplicate_similarity: float = 0.97  # hits more similar than this to a chosen one are dropped


@dataclass
class EmbeddingSettings:
    model_dir: str | None = None  # folder with model.onnx + tokenizer.json; default: the installed package
    batch_size: int = 32
    threads: int | None = None


@dataclass
class VectorSettings:
    backend: str = "persistent"  # "persistent" (under .memory/chroma) or "http" (a Chroma server)
    url: str | None = None  # for http: e.g. http://127.0.0.1:8000
    token: str | None = None  # for http: sent as a bearer token (hosted Chroma)
    collection: str = "memory"


@dataclass
class TranscriptSettings:
    # Claude Code's transcripts for this project; searched only when a query asks for layer "transcript".
    dir: str | None = None


@dataclass
class DreamSettings:
    # The due-gate: a dream is due when both hold.
    min_hours: float = 24.0  # since the last dream
    min_sessions: int = 5  # compressed sessions closed since (not yet processed by a dream)
    lock_wait_seconds: float = 5.0  # a second `dream run` waits this long for the first, then gives up
    # Scoring: score = prior of the kind + sum of weight * signal (each signal in 0..1); proposed when
    # score >= min_score (and, for lessons, the error shows in lesson_min_sessions sessions or more).
    min_score: float = 0.5
    prior_drift: float = 0.4  # a session contradicts what a topic says today
    prior_lesson: float = 0.25  # an error that recurs in several sessions
    prior_decision: float = 0.1  # a decision or rule stated in a session
    prior_stale: float = 0.0  # a topic whose subject keeps coming up while it does not change
    weight_support: float = 0.4  # sessions that support the candidate, / support_cap
    weight_recency: float = 0.25  # halves every recency_half_life_days since the newest evidence
    weight_recall_count: float = 0.15  # searches whose hits held the evidence, / recall_count_cap
    weight_recall_quality: float = 0.1  # how high those hits scored, relative to the best hit of the search
    weight_distinct_queries: float = 0.1  # distinct query keys among those searches, / distinct_queries_cap
    weight_rule: float = 0.1  # 1 when a decision is stated as a standing rule ("from now on", "always", "never")
    support_cap: int = 3
    recall_count_cap: int = 5
    distinct_queries_cap: int = 3
    recency_half_life_days: float = 30.0
    # Gathering.
    lesson_min_sessions: int = 2  # an error becomes a lesson when it shows in this many sessions
    error_similarity: float = 0.5  # share of content words two error lines must share to be "the same"
    topic_match_min: float = 0.3  # share of a statement's content words a topic section must hold
    topic_semantic_min: float = 0.5  # or: cosine similarity of statement and topic section (semantic)
    rewrite_similarity: float = 0.5  # a statement sharing this share of words with a topic line updates that line
    decisions_topic: str = "decisions"  # new topic for decisions no existing topic matches
    stale_min_sessions: int = 3  # sessions mentioning a topic's subject since it last changed
    stale_min_days: float = 14.0  # and the topic is at least this old
    gap_min_asks: int = 3  # a query asked this often that never found anything good is a knowledge gap
    gap_min_coverage: float = 0.5  # "good": a hit holding this share of the query's content words
    recall_max_events: int = 5000  # the recall log keeps this many latest searches


@dataclass
class Settings:
    index: IndexSettings = field(default_factory=IndexSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    ranking: RankingSettings = field(default_factory=RankingSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    vectors: VectorSettings = field(default_factory=VectorSettings)
    transcripts: TranscriptSettings = field(default_factory=TranscriptSettings)
    dream: DreamSettings = field(default_factory=DreamSettings)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_settings(root: Path) -> Settings:
    """Read `<root>/memory.yaml` over the defaults; raise ConfigError naming the file and key at fault."""
    path = Path(root) / SETTINGS_FILE
    settings = Settings()
    if not path.exists():
        return settings
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid YAML ({exc}); fix it or delete it to use the defaults") from exc
    if raw is None:
        return settings
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a mapping of sections (index, search, ranking, ...)")
    apply_overrides(settings, raw, source=str(path))
    return settings


def apply_overrides(settings: Settings, raw: dict[str, Any], *, source: str = "settings") -> None:
    """Apply a nested mapping onto `settings`, type-checking each value."""
    for section_name, values in raw.items():
        section = getattr(settings, str(section_name), None)
        if section is None or not dataclasses.is_dataclass(section):
            known = ", ".join(f.name for f in dataclasses.fields(settings))
            raise ConfigError(f"{source}: unknown section {section_name!r}; known sections: {known}")
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section {section_name!r} must be a mapping")
        fields = {f.name: f for f in dataclasses.fields(section)}
        for key, value in values.items():
            if key not in fields:
                raise ConfigError(
                    f"{source}: unknown setting {section_name}.{key}; known: {', '.join(sorted(fields))}"
                )
            default = getattr(type(section)(), key)
            setattr(section, key, _coerce(value, default, f"{section_name}.{key}", source))


def _coerce(value: Any, default: Any, name: str, source: str) -> Any:
    if value is None or default is None:
        if value is not None and not isinstance(value, (str, int, float)):
            raise ConfigError(f"{source}: {name} must be a string or number")
        return os.path.expanduser(value) if isinstance(value, str) else value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {name} must be true or false")
        return value
    if isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: {name} must be a number, got {value!r}")
        return type(default)(value) if isinstance(default, float) else int(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{source}: {name} must be a string, got {value!r}")
        return value
    return value
