"""Late interaction: rerank the best candidates by how well each token of the question finds a token of
the passage that means the same (ColBERT's MaxSim, over all-MiniLM-L6-v2's own token vectors).

A passage's vector is the mean of its tokens, so a long passage that answers in a few words looks like
little of it; token by token, "taped network replays" still finds "cassette" and "recorded HTTP" in the
right line. The token vectors come from the indexing pass (index/token_vectors.py), the question's from
the same model call that makes its vector, so the rerank costs a lookup and a few small matrix products.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from memory_server.parse.markdown import Chunk
from memory_server.search.fusion import Ranked
from memory_server.search.signals import is_assistant
from memory_server.settings import RankingSettings

# Below this spread of MaxSim over the reranked candidates, the spread is not stretched to 0..1: candidates
# that match the question's tokens almost equally stay almost equal.
MIN_SPAN = 0.05

TokenLookup = Callable[[list[Chunk]], dict[str, NDArray[np.float32]]]


def maxsim(query_tokens: NDArray[np.float32], passage_tokens: NDArray[np.float32]) -> float:
    """Mean over the question's tokens of the best dot product with any of the passage's tokens."""
    if not len(query_tokens) or not len(passage_tokens):
        return 0.0
    return maxsims(query_tokens, [passage_tokens])[0]


def maxsims(query_tokens: NDArray[np.float32], passages: list[NDArray[np.float32]]) -> list[float]:
    """`maxsim` against each of `passages` (none empty), in one matrix product: thirty small products
    cost more in BLAS overhead than one of their combined size."""
    if not passages:
        return []
    products = query_tokens @ np.concatenate(passages).T  # (question tokens, all passage tokens)
    starts = np.cumsum([0] + [len(p) for p in passages[:-1]])
    best = np.maximum.reduceat(products, starts, axis=1)  # per question token, the best in each passage
    return [float(v) for v in best.mean(axis=0)]


def late_rerank(
    scores: dict[str, float],
    chunks: dict[str, Chunk],
    query_tokens: NDArray[np.float32],
    lookup: TokenLookup,
    ranking: RankingSettings,
) -> int:
    """Add `late_weight` x the best score x each of the `late_pool` best candidates' MaxSim (min-max over
    them) to its score, in place; an assistant's line in a session gains `assistant_weight` of that, as
    its other scores are weighed (without it the assistant's long restatements, with many tokens to
    match, won back what that weight took: BEAM R@5 0.526 -> 0.489 on chats 1-5). Candidates without
    stored token vectors gain nothing. Returns how many were reranked."""
    if ranking.late_weight <= 0 or not scores or not len(query_tokens):
        return 0
    top = sorted(scores, key=lambda cid: -scores[cid])[: ranking.late_pool]
    found = lookup([chunks[cid] for cid in top])
    sims = dict(
        zip(
            (ids := [cid for cid in top if cid in found and len(found[cid])]),
            maxsims(query_tokens, [found[cid] for cid in ids]),
            strict=True,
        )
    )
    if len(sims) < 2:
        return 0
    low, high = min(sims.values()), max(sims.values())
    span = max(high - low, MIN_SPAN)
    best = scores[top[0]]
    for cid, sim in sims.items():
        speaker = ranking.assistant_weight if is_assistant(chunks[cid]) else 1.0
        scores[cid] += ranking.late_weight * speaker * best * (sim - low) / span
    return len(sims)


def rerank(
    ranked: Ranked, query_tokens: NDArray[np.float32] | None, lookup: TokenLookup | None, ranking: RankingSettings
) -> Ranked:
    """The late-interaction stage: `late_rerank` on the fused scores, when the question's token vectors and the
    candidates' stored ones are at hand."""
    if query_tokens is None or lookup is None:
        return ranked
    scores = dict(ranked.scores)
    late_rerank(scores, ranked.chunks, query_tokens, lookup, ranking)
    return Ranked(scores, ranked.chunks)


__all__ = ["TokenLookup", "late_rerank", "maxsim", "maxsims", "rerank"]
