"""Fusion of the keyword and semantic signals: the keyword floor, title and heading words as context, the
literal tier inside search_memory, the user's words over the assistant's, and the embedding recipe."""

from __future__ import annotations

from pathlib import Path

from conftest import write

from memory_server import Memory
from memory_server.files.root import Layer
from memory_server.files.scaffold import init_root
from memory_server.index.embed_text import MIN_WORDS_FOR_CONTEXT, embed_text
from memory_server.parse.markdown import Chunk
from memory_server.search.candidates import keyword_candidates
from memory_server.search.fusion import fuse
from memory_server.search.parsed import idf, parse, query_terms
from memory_server.search.query import validate
from memory_server.search.signals import (
    asks_for_wishes,
    context_scores,
    is_assistant,
    keyword_scale,
    own_keyword_shares,
    states_a_wish,
)
from memory_server.settings import RankingSettings
from memory_server.testing import FakeEmbedder


def _chunk(text: str, title: str = "Notes", heading: str = "", layer: Layer = "topic", cid: str = "c") -> Chunk:
    return Chunk(cid, "topics/x.md", layer, 1, 1, title, heading, None, text)


def test_keyword_scores_are_normalised_against_the_whole_query() -> None:
    """Matches on common words only (IDF clamped near zero) stay small; the best hit alone would make
    them 1.0 and 0.5. A chunk that holds one of a question's several rare words gets that share, not 1."""
    ranking = RankingSettings(semantic_weight=0.0, keyword_floor=1.0)
    keyword = [("a", 2e-6), ("b", 1e-6)]
    rare = idf(0, 1000)  # "drive", "strap": words no chunk holds weigh most
    common = [idf(1000, 1000), idf(1000, 1000)]  # "3d", "printer": in every chunk
    scaled = fuse([], keyword, ranking, keyword_scale=keyword_scale(2e-6, [rare, rare, *common], 1.0))
    assert max(scaled.values()) < 1e-3
    assert fuse([], keyword, ranking) == {"a": 1.0, "b": 0.5}
    # one word found in one chunk, out of a question of four such words: a quarter of the full weight
    once = idf(1, 1000)
    partial = fuse([], [("a", once)], ranking, keyword_scale=keyword_scale(once, [once] * 4, 1.0))
    assert abs(partial["a"] - 0.25) < 1e-9
    # a literal found whole reaches the full weight
    assert fuse([], [("a", 2 * once)], ranking, keyword_scale=keyword_scale(2 * once, [once] * 2, 1.0)) == {"a": 1.0}


def test_title_words_are_context_not_each_chunks_own_match(tmp_path: Path) -> None:
    root = tmp_path / "m"
    init_root(root)
    write(
        root,
        "topics/kafka.md",
        "---\ntitle: Kafka broker\n---\n# Kafka broker\n\n"
        "Status: accepted.\n\nConsumers replay the log from any offset they choose.\n",
    )
    m = Memory(root, keyword_only=True)
    m.index()
    q = validate("kafka offset", 3, None, None, None, m.settings.search)
    parsed = parse(m.fts, q.text)
    own = keyword_candidates(m.fts, parsed, q, 20, "text")
    assert [c.text for c, _ in own] == ["Consumers replay the log from any offset they choose."]
    around = [c for c, _ in keyword_candidates(m.fts, parsed, q, 20, "title heading")]
    assert {c.text for c in around} >= {"Status: accepted.", "Consumers replay the log from any offset they choose."}
    hits, _ = m.search_memory("kafka offset", k=3)
    assert hits[0].text.startswith("Consumers replay"), [h.text for h in hits]
    m.close()


def test_context_and_own_shares() -> None:
    status = _chunk("Status: accepted.", title="Kafka broker", cid="s")
    answer = _chunk("The broker keeps seven days of log.", title="Kafka broker", cid="a")
    assert context_scores(query_terms("kafka retention").stems, [status]) == {"s": 0.5}
    # "broker" is in the title too: the line's own evidence is "log" only
    shares = own_keyword_shares(query_terms("kafka broker log").stems, [answer], lambda word: 1.0)
    assert shares == {"a": 0.5}
    # a query naming only the subject keeps its match
    assert own_keyword_shares(query_terms("broker").stems, [answer], lambda word: 1.0) == {}


def test_a_literal_query_puts_its_phrase_match_first(tmp_path: Path) -> None:
    """Short lines holding 3, 2 and 7 apart outscore a long line holding `3.2.7` on BM25 and on the fake
    vectors; the literal tier puts the line that holds the query itself first."""
    root = tmp_path / "m"
    init_root(root)
    steps = "\n\n".join(f"Step 7 of {i}: run 3 jobs on 2 nodes." for i in range(8))
    answer = (
        "The parser was pinned in version 3.2.7 because the new grammar broke quoting in the config "
        "loader, which we found after a long afternoon of bisecting releases."
    )
    write(root, "topics/releases.md", f"# Releases\n\n{steps}\n\n{answer}\n")
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    hits, _ = m.search_memory("3.2.7", k=3)
    assert hits[0].text == answer, [h.text for h in hits]
    m.settings.ranking.phrase_bonus = 0.0
    hits, _ = m.search_memory("3.2.7", k=3)
    assert hits[0].text != answer
    m.close()


def _one_chat(tmp_path: Path, *lines: str) -> Memory:
    """A memory holding one session of these lines (paragraphs), indexed with the fake embedder."""
    root = tmp_path / "m"
    init_root(root)
    body = "\n\n".join(lines)
    write(
        root, "sessions/compressed/2026/2026-03-01-aaaa-chat.md", f"---\nstarted: 2026-03-01\n---\n# Chat\n\n{body}\n"
    )
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    return m


def test_the_users_words_outweigh_the_assistants_restatement(tmp_path: Path) -> None:
    m = _one_chat(
        tmp_path,
        "**User:** The sprint deadline moved to March 29.",
        "**Assistant:** Noted: the sprint deadline moved to March 29.",
    )
    m.settings.ranking.duplicate_similarity = 1.01
    hits, _ = m.search_memory("sprint deadline March 29", k=2)
    assert hits[0].text.startswith("**User:**"), [h.text for h in hits]
    m.settings.ranking.assistant_weight = 1.0
    m.settings.ranking.neighbour_weight = 0.0
    hits, _ = m.search_memory("sprint deadline moved March 29 noted", k=2)
    assert hits[0].text.startswith("**Assistant:**")
    m.close()


def test_a_standing_wish_comes_back_with_the_request_it_governs(tmp_path: Path) -> None:
    """search_memory's description asks the caller to add "my preference, always, never" to a request: then a
    line stating a standing wish outranks a line that only shares the request's words. Off (wish_weight 0),
    or without those words in the query, the request's own words win."""
    m = _one_chat(
        tmp_path,
        "**User:** Dependencies are pinned to exact versions.",
        "**User:** Always pin the dependencies of the service to exact versions in the lock file.",
    )
    request = "how should dependencies be pinned; versions"
    hits, _ = m.search_memory(f"{request}, my preference, never", k=2)
    assert hits[0].text.startswith("**User:** Always pin"), [h.text for h in hits]
    hits, _ = m.search_memory(request, k=2)
    assert hits[0].text.startswith("**User:** Dependencies"), "without the wish words, no line is lifted"
    m.settings.ranking.wish_weight = 0.0
    hits, _ = m.search_memory(f"{request}, my preference, never", k=2)
    assert hits[0].text.startswith("**User:** Dependencies"), [h.text for h in hits]
    m.close()


def test_what_states_a_standing_wish() -> None:
    assert asks_for_wishes("deploy steps; my preferences") and asks_for_wishes("Never? always")
    assert not asks_for_wishes("what did we decide about retries")
    for text in (
        "**User:** Always format dates as month-day-year.",
        "- Never push to main without review.",
        "**User:** Thanks. Please always run the linter.",
        "**User:** I'd prefer pnpm over npm.",
        "**User:** From now on, write tests first.",
    ):
        assert states_a_wish(_chunk(text, layer="session")), text
    # The words are found first and only the few characters before each are read: crafted text stays linear.
    for crafted in ("always " * 30_000, "I " * 60_000 + "prefer", "." * 100_000 + " never", "- " * 50_000):
        states_a_wish(_chunk(crafted, layer="session"))
    for text in (
        "**User:** I always forget the flag.",
        "**Assistant:** Always format dates as month-day-year.",
        "**User:** The cache never expires.",
    ):
        assert not states_a_wish(_chunk(text, layer="session")), text


def test_speaker_labels() -> None:
    assert is_assistant(_chunk("**Assistant:** Sure.", layer="session"))
    assert is_assistant(_chunk("- **Claude:** done", layer="session"))
    assert not is_assistant(_chunk("**User:** Assistant: is a word", layer="session"))
    assert not is_assistant(_chunk("**Assistant:** in a topic it is text", layer="topic"))


def test_short_chunks_are_embedded_without_the_title() -> None:
    badge = _chunk("![Accepted](https://img.shields.io/badge/adr-accepted-green)", title="ADR 19: Use LOAF")
    assert embed_text(badge) == "Accepted"
    words = " ".join(["word"] * MIN_WORDS_FOR_CONTEXT)
    long = _chunk(f"**Why:** {words}", title="ADR 19", heading="Context")
    assert embed_text(long) == f"ADR 19 > Context\nWhy: {words}"


def test_close_cosines_stay_close() -> None:
    """Min-max over a tiny pool (a layer or date filter) must not stretch a 0.02 cosine gap to the whole
    semantic weight."""
    ranking = RankingSettings(keyword_weight=0.0)
    scores = fuse([("a", 0.52), ("b", 0.50)], [], ranking)
    assert scores["a"] - scores["b"] < 0.25 * ranking.semantic_weight  # min-max alone: the whole weight
