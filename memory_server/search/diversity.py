"""Diversity: pick the final hits from the ranked candidates so one fact or one file does not fill the answer."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from memory_server.parse.markdown import Chunk
from memory_server.search.candidates import Candidates, Vector
from memory_server.search.exact import normalise
from memory_server.search.fusion import Ranked
from memory_server.search.query import LAYER_RANK
from memory_server.settings import RankingSettings

VectorLookup = Callable[[list[Chunk]], dict[str, Vector]]


def candidate_vectors(
    found: Candidates, ranked: Ranked, lookup: VectorLookup | None, ranking: RankingSettings
) -> dict[str, Vector | None]:
    """The vectors diversity compares: the semantic candidates' own, and (when MMR weighs) the stored vectors
    of the others, from the embedding cache (no model call), so that keyword-only candidates count alike."""
    vecs = {cid: vec for cid, _sim, vec in found.semantic}
    if found.semantic and lookup is not None and ranking.mmr_weight:
        vecs.update(lookup([ranked.chunks[cid] for cid in ranked.scores if cid not in vecs]))
    return vecs


def diversify(
    ranked: list[tuple[float, Chunk]], vecs: Mapping[str, Vector | None], k: int, ranking: RankingSettings
) -> list[tuple[float, Chunk]]:
    """Greedy maximal-marginal-relevance pick: a candidate loses `mmr_weight` x best score x its cosine to
    the closest hit already chosen (so near-repeats of one fact give way to other relevant passages);
    once a file has its quota of hits, its further hits are damped by `same_file_penalty` (one file does not
    fill the answer while other files are relevant); near-duplicates are dropped."""
    ranked.sort(key=lambda sc: (-sc[0], LAYER_RANK.get(sc[1].layer, 9), sc[1].path, sc[1].start_line))
    remaining = ranked[: max(k * 5, 50)]
    top = remaining[0][0] if remaining else 0.0
    chosen: list[tuple[float, Chunk]] = []
    per_file: dict[str, int] = {}
    seen_text: set[str] = set()
    chosen_vecs: list[Vector] = []
    closest: dict[str, float] = {}  # candidate id -> highest cosine to any chosen hit
    quota = max(ranking.file_quota, math.ceil(k * ranking.file_share))
    while remaining and len(chosen) < k:
        best_i, best_eff = -1, -math.inf
        for i, (score, chunk) in enumerate(remaining):
            eff = score * (ranking.same_file_penalty if per_file.get(chunk.path, 0) >= quota else 1.0)
            eff -= ranking.mmr_weight * top * closest.get(chunk.id, 0.0)
            if eff > best_eff:
                best_i, best_eff = i, eff
        score, chunk = remaining.pop(best_i)
        key = normalise(chunk.text)
        vec = vecs.get(chunk.id)
        nearest = closest.get(chunk.id, 0.0)
        if ranking.duplicate_similarity <= 1.0 and (key in seen_text or nearest > ranking.duplicate_similarity):
            continue
        seen_text.add(key)
        per_file[chunk.path] = per_file.get(chunk.path, 0) + 1
        chosen.append((score, chunk))
        if vec is not None:
            chosen_vecs.append(vec)
            for _s, other in remaining:
                ov = vecs.get(other.id)
                if ov is not None:
                    closest[other.id] = max(closest.get(other.id, 0.0), float(ov @ vec))
    return chosen
