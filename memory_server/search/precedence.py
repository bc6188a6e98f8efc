"""The stage before diversity: layer precedence and recency. On equal relevance a topic beats Claude Code's auto
memory, that a session, and a session a transcript (a per-layer bonus); inside a layer, part of a session's score
decays with its age (topics never decay)."""

from __future__ import annotations

import datetime as dt
import math

from memory_server.parse.markdown import Chunk
from memory_server.search.fusion import Ranked
from memory_server.settings import RankingSettings


def weigh_precedence(ranked: Ranked, ranking: RankingSettings, today: dt.date) -> list[tuple[float, Chunk]]:
    """(score, chunk) for every candidate, with the layer bonus and the recency decay applied."""
    return [
        (adjust(score, ranked.chunks[cid], ranking, today), ranked.chunks[cid]) for cid, score in ranked.scores.items()
    ]


def adjust(score: float, chunk: Chunk, ranking: RankingSettings, today: dt.date) -> float:
    bonus = {
        "topic": ranking.topic_bonus,
        "auto_memory": ranking.auto_memory_bonus,
        "session": ranking.session_bonus,
        "transcript": ranking.transcript_bonus,
    }
    if chunk.layer != "topic" and chunk.date and ranking.recency_weight:
        try:
            age = max(0, (today - dt.date.fromisoformat(chunk.date)).days)
        except ValueError:
            age = 0
        decay = math.pow(0.5, age / max(ranking.recency_half_life_days, 1e-6))
        score *= 1.0 - ranking.recency_weight + ranking.recency_weight * decay
    return score * (1.0 + bonus.get(chunk.layer, 0.0))
