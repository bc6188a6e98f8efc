"""Late interaction: token vectors kept beside each chunk's vector, and the best candidates reranked by how
well each token of the question finds a token of the passage (search/late.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from memory_server import Memory
from memory_server.files.scaffold import init_root
from memory_server.index.embedder import MiniLMEmbedder, TokenEmbedder
from memory_server.index.token_vectors import pack, unpack
from memory_server.parse.markdown import Chunk
from memory_server.search.late import late_rerank, maxsim
from memory_server.settings import RankingSettings, Settings
from memory_server.testing import FakeEmbedder

# The pooled vector of the long passage is diluted by its other words; token by token, every word of the
# question is in it. The short passage repeats one of the question's words, so its pooled vector is closer.
QUESTION = "alpha beta gamma"
ANSWER = "Alpha beta gamma, noted with " + " ".join(f"filler{i}" for i in range(30)) + "."
DECOY = "Alpha alpha alpha alpha."


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("fmt", ["bits", "int8"])
def test_packed_token_vectors_keep_what_ranking_needs(fmt: str) -> None:
    rows = _unit(np.random.default_rng(7).standard_normal((9, 384)))
    back = unpack(pack(rows, fmt), 9, 384, fmt)  # type: ignore[arg-type]
    assert back.shape == (9, 384)
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-5)
    agreement = (back * rows).sum(axis=1)
    assert agreement.min() > (0.999 if fmt == "int8" else 0.7)  # bits: the signs, cosine about 0.8
    assert unpack(pack(rows[:0], fmt), 0, 384, fmt).shape == (0, 384)  # type: ignore[arg-type]
    # sizes as token_vectors.py states them
    assert len(pack(rows, fmt)) == 9 * (48 if fmt == "bits" else 388)  # type: ignore[arg-type]


def test_maxsim_rewards_each_question_token_found() -> None:
    q = _unit(np.eye(4, 384, dtype=np.float32)[:2])
    both = _unit(np.eye(4, 384, dtype=np.float32))
    one = _unit(np.eye(4, 384, dtype=np.float32)[:1])
    assert maxsim(q, both) == pytest.approx(1.0)
    assert maxsim(q, one) == pytest.approx(0.5)
    assert maxsim(q, one[:0]) == 0.0


def test_late_rerank_lifts_the_candidate_whose_tokens_match() -> None:
    chunks = {cid: Chunk(cid, "topics/x.md", "topic", i, i, "X", "", None, cid) for i, cid in enumerate("ab", 1)}
    q = _unit(np.eye(2, 384, dtype=np.float32))
    tokens = {"a": q[:1], "b": q}  # b holds both of the question's tokens, a one
    scores = {"a": 1.0, "b": 0.8}
    late_rerank(scores, chunks, q, lambda cs: {c.id: tokens[c.id] for c in cs}, RankingSettings(late_weight=1.0))
    assert scores["b"] > scores["a"]
    unchanged = {"a": 1.0, "b": 0.8}
    late_rerank(unchanged, chunks, q, lambda cs: {c.id: tokens[c.id] for c in cs}, RankingSettings(late_weight=0))
    assert unchanged == {"a": 1.0, "b": 0.8}
    missing = {"a": 1.0, "b": 0.8}  # no token vectors stored: nothing to compare, nothing changes
    assert late_rerank(missing, chunks, q, lambda cs: {}, RankingSettings(late_weight=1.0)) == 0
    assert missing == {"a": 1.0, "b": 0.8}


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "m"
    init_root(root)
    write(root, "topics/answer.md", f"---\ntitle: Notes one\n---\n\n{ANSWER}\n")
    write(root, "topics/decoy.md", f"---\ntitle: Notes two\n---\n\n{DECOY}\n")
    return root


def _first(root: Path, **settings: object) -> str:
    ranking: dict[str, object] = {"keyword_weight": 0.0, "file_weight": 0.0, "neighbour_weight": 0.0}  # semantic alone
    ranking.update({k: v for k, v in settings.items() if k.startswith("late")})
    embedding = {k: v for k, v in settings.items() if k == "token_vectors"}
    m = Memory(
        root, settings=Settings.model_validate({"ranking": ranking, "embedding": embedding}), embedder=FakeEmbedder()
    )
    try:
        m.index()
        hits, _ = m.search_memory(QUESTION, k=2)
        return hits[0].text
    finally:
        m.close()


def test_search_memory_reranks_by_token_matches_end_to_end(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert _first(root, late_weight=0.0) == DECOY  # pooled vectors alone prefer the short passage
    assert _first(root, late_weight=1.0) == ANSWER  # every word of the question is in the long one
    # without stored token vectors there is nothing to rerank with
    assert _first(root, late_weight=1.0, token_vectors="off") == DECOY


def test_token_vectors_are_stored_beside_each_vector_and_follow_the_setting(tmp_path: Path) -> None:
    root = _root(tmp_path)
    cache = root / ".memory" / "embeddings.sqlite3"

    def stored() -> list[tuple[str, int]]:
        with sqlite3.connect(cache) as c:
            return sorted(c.execute("SELECT format, count FROM tokens").fetchall())

    _first(root, late_weight=1.0)
    bits = stored()
    assert bits and {fmt for fmt, _ in bits} == {"bits"}
    assert max(count for _, count in bits) >= 30  # one row per word of the long passage (FakeEmbedder)
    _first(root, late_weight=1.0, token_vectors="int8")  # switching the format re-embeds every chunk
    assert {fmt for fmt, _ in stored()} == {"int8"} and len(stored()) == len(bits)

    on = Memory(root, embedder=FakeEmbedder())
    sem = on.status().semantic_index
    assert (sem.token_vectors, sem.late_interaction) == ("bits", True)
    on.close()

    fresh = _root(tmp_path / "off")
    off = Memory(
        fresh, settings=Settings.model_validate({"embedding": {"token_vectors": "off"}}), embedder=FakeEmbedder()
    )
    assert off.status().semantic_index.late_interaction is False
    off.close()
    _first(fresh, late_weight=1.0, token_vectors="off")
    with sqlite3.connect(fresh / ".memory" / "embeddings.sqlite3") as c:
        assert c.execute("SELECT count(*) FROM tokens").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM vectors").fetchone()[0] > 0


def test_the_real_model_gives_token_vectors_from_the_same_call() -> None:
    embedder = MiniLMEmbedder()
    assert isinstance(embedder, TokenEmbedder)
    texts = ["The belt tension was tightened to 110 Hz.", "The printer lives at 192.168.0.108.", ""]
    pooled, tokens = embedder.embed_with_tokens(texts)
    assert np.allclose(pooled, embedder.embed(texts), atol=1e-5)
    for text, rows in zip(texts, tokens, strict=True):
        assert rows.shape[1] == 384 and rows.shape[0] >= 2  # [CLS] ... [SEP]
        assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4), text
    # the question's words find their own in the right line
    _, (question,) = embedder.embed_with_tokens(["how tight is the drive belt"])
    assert maxsim(question, tokens[0]) > maxsim(question, tokens[1])


def test_the_assistants_lines_gain_their_share_of_the_rerank() -> None:
    """An assistant's line in a session gains `assistant_weight` of the late bonus, as it is weighed for its
    other scores: its long restatements have many tokens to match the question with."""
    said = {
        "u": Chunk("u", "sessions/s.md", "session", 1, 1, "S", "", None, "**User:** the belt is loose"),
        "a": Chunk("a", "sessions/s.md", "session", 2, 2, "S", "", None, "**Assistant:** the belt tension is low"),
    }
    q = _unit(np.eye(2, 384, dtype=np.float32))
    tokens = {"u": q[:1], "a": q}

    def gain(weight: float) -> float:
        scores = {"u": 1.0, "a": 1.0}
        ranking = RankingSettings(late_weight=1.0, assistant_weight=weight)
        late_rerank(scores, said, q, lambda cs: {c.id: tokens[c.id] for c in cs}, ranking)
        return scores["a"] - 1.0

    assert gain(1.0) == pytest.approx(1.0)
    assert gain(0.4) == pytest.approx(0.4)


def test_a_damaged_token_row_costs_that_passage_its_rerank_not_the_search(tmp_path: Path) -> None:
    root = _root(tmp_path)
    _first(root, late_weight=1.0)
    with sqlite3.connect(root / ".memory" / "embeddings.sqlite3") as c:
        c.execute("UPDATE tokens SET data = x'00ff'")  # every row cut short
    assert _first(root, late_weight=1.0) == DECOY  # the search answers, as it would without token vectors
    with pytest.raises(ValueError, match="take"):
        unpack(b"\x00\xff", 3, 384, "bits")
