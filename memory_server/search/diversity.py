"""Diversity: pick the final hits from the ranked candidates so one fact or one file does not fill the answer.

Every pick depends only on the candidates and the hits picked before it, never on how many hits were asked
for: the first n hits of an answer for more are the answer for n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from memory_server.parse.markdown import Chunk
from memory_server.search.candidates import Candidates, Vector
from memory_server.search.exact import normalise
from memory_server.search.fusion import Ranked
from memory_server.search.query import LAYER_RANK
from memory_server.settings import RankingSettings

VectorLookup = Callable[[list[Chunk]], dict[str, Vector]]
WINDOW_FLOOR = 50  # diversity picks among at least this many of the best candidates (see window)


def window(max_k: int) -> int:
    """How many of the best candidates diversity picks from: a fixed floor, or the largest k allowed, never the
    k asked for (which would make the first hits of a larger answer differ from a smaller one's)."""
    return max(WINDOW_FLOOR, max_k)


def file_quota(picked: int, ranking: RankingSettings) -> int:
    """Hits one file may hold among the first `picked + 1` before `same_file_penalty` damps its next ones:
    `file_quota`, or `file_share` of the hits so far when that is more."""
    return max(ranking.file_quota, math.ceil((picked + 1) * ranking.file_share))


def candidate_vectors(
    found: Candidates, ranked: Ranked, lookup: VectorLookup | None, ranking: RankingSettings
) -> dict[str, Vector | None]:
    """The vectors diversity compares: the semantic candidates' own, and (when MMR weighs) the stored vectors
    of the others, from the embedding cache (no model call), so that keyword-only candidates count alike."""
    vecs = {cid: vec for cid, _sim, vec in found.semantic}
    if found.semantic and lookup is not None and ranking.mmr_weight:
        vecs.update(lookup([ranked.chunks[cid] for cid in ranked.scores if cid not in vecs]))
    return vecs


class _Pool:
    """The candidates diversity picks from, as arrays: scores, files, vectors, closest cosine to a hit picked."""

    def __init__(self, ranked: list[tuple[float, Chunk]], vecs: Mapping[str, Vector | None]) -> None:
        self.items = ranked
        self.scores = np.array([score for score, _ in ranked], dtype=np.float64)
        files: dict[str, int] = {}
        self.file = np.array([files.setdefault(c.path, len(files)) for _, c in ranked], dtype=np.int64)
        self.per_file = np.zeros(len(files), dtype=np.int64)
        found = [vecs.get(c.id) for _, c in ranked]
        dim = next((len(v) for v in found if v is not None), 0)
        self.vectors = np.zeros((len(ranked), dim), dtype=np.float32)
        for i, vec in enumerate(found):
            if vec is not None:
                self.vectors[i] = vec
        self.has_vector = [v is not None for v in found]
        self.closest = np.zeros(len(ranked), dtype=np.float64)  # highest cosine to any picked hit, at least 0
        self.left = np.ones(len(ranked), dtype=bool)

    def best(self, quota: int, ranking: RankingSettings, top: float) -> int:
        """The candidate left whose score, damped for a full file and for resembling a picked hit, is highest
        (the first such in rank order)."""
        full = self.per_file[self.file] >= quota
        eff = self.scores * np.where(full, ranking.same_file_penalty, 1.0) - ranking.mmr_weight * top * self.closest
        return int(np.argmax(np.where(self.left, eff, -np.inf)))

    def pick(self, i: int) -> None:
        self.per_file[self.file[i]] += 1
        if self.has_vector[i]:
            np.maximum(self.closest, self.vectors @ self.vectors[i], out=self.closest)


def diversify(
    ranked: list[tuple[float, Chunk]],
    vecs: Mapping[str, Vector | None],
    k: int,
    ranking: RankingSettings,
    pool_size: int = WINDOW_FLOOR,
) -> list[tuple[float, Chunk]]:
    """Greedy maximal-marginal-relevance pick among the `pool_size` best: a candidate loses `mmr_weight` x
    best score x its cosine to the closest hit already chosen (so near-repeats of one fact give way to other
    relevant passages); once a file has its quota of the hits so far (file_quota), its further hits are damped
    by `same_file_penalty` (one file does not fill the answer while other files are relevant);
    near-duplicates are dropped."""
    ranked.sort(key=lambda sc: (-sc[0], LAYER_RANK.get(sc[1].layer, 9), sc[1].path, sc[1].start_line))
    pool = _Pool(ranked[:pool_size], vecs)
    top = ranked[0][0] if ranked else 0.0
    chosen: list[tuple[float, Chunk]] = []
    seen_text: set[str] = set()
    while len(chosen) < k and pool.left.any():
        i = pool.best(file_quota(len(chosen), ranking), ranking, top)
        pool.left[i] = False
        score, chunk = pool.items[i]
        key = normalise(chunk.text)
        if ranking.duplicate_similarity <= 1.0 and (key in seen_text or pool.closest[i] > ranking.duplicate_similarity):
            continue
        seen_text.add(key)
        chosen.append((score, chunk))
        pool.pick(i)
    return chosen
