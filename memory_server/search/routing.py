"""The stage after fusion: scores lent along a file. The passages next to a strong candidate gain a share of
its score (an answer often spans a question and its reply), and every candidate rises with how well its whole
file answers (session routing: the file that answers best rises together)."""

from __future__ import annotations

from memory_server.index.fts import FtsIndex
from memory_server.parse.markdown import Chunk
from memory_server.search.fusion import Ranked
from memory_server.search.pointers import pointer_target
from memory_server.search.query import Query
from memory_server.settings import RankingSettings


def lend_to_neighbours(fts: FtsIndex, ranked: Ranked, ranking: RankingSettings, q: Query) -> Ranked:
    """The best candidates lend a share of their score to the passages just before and after them."""
    if ranking.neighbour_weight <= 0 or not ranked.scores:
        return ranked
    scores, chunks = dict(ranked.scores), dict(ranked.chunks)
    lenders = sorted(scores.items(), key=lambda item: -item[1])[: ranking.neighbour_sources]
    gains: dict[str, float] = {}
    around = fts.neighbours([cid for cid, _ in lenders])
    for cid, score in lenders:
        for other in around.get(cid, []):
            if other.layer not in q.layers or not _in_dates(other, q) or pointer_target(other) is not None:
                continue  # a pointer line left the candidates (pointers.py): it does not come back as a neighbour
            chunks.setdefault(other.id, other)
            gains[other.id] = max(gains.get(other.id, 0.0), ranking.neighbour_weight * score)
    for cid, gain in gains.items():
        scores[cid] = scores.get(cid, 0.0) + gain
    return Ranked(scores, chunks)


def _in_dates(chunk: Chunk, q: Query) -> bool:
    if q.after and not (chunk.date and chunk.date >= q.after):
        return False
    if q.before and not (chunk.date and chunk.date <= q.before):
        return False
    return True


def route_by_file(ranked: Ranked, ranking: RankingSettings) -> Ranked:
    """Lift every candidate by how well its whole file answers (the sum of the file's best few scores)."""
    scores, chunks = ranked.scores, ranked.chunks
    if not scores or ranking.file_weight <= 0:
        return ranked
    per_file: dict[str, list[float]] = {}
    for cid, score in scores.items():
        per_file.setdefault(chunks[cid].path, []).append(score)
    strength = {path: sum(sorted(v, reverse=True)[: max(1, ranking.file_top)]) for path, v in per_file.items()}
    best_file = max(strength.values()) or 1.0
    best = max(scores.values())
    routed = {
        cid: score + ranking.file_weight * strength[chunks[cid].path] / best_file * best
        for cid, score in scores.items()
    }
    return Ranked(routed, chunks)
