"""search_exact treats any text as literal: a table of hostile queries, each answered without error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import small_root, write

from memory_server import Memory, QueryError


# The tests that only search share one indexed root per module; those that add files make their own.
@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    m = Memory(small_root(tmp_path_factory.mktemp("search") / "memory"), keyword_only=True)
    m.index()
    yield m
    m.close()


HOSTILE = [
    '"',
    '""',
    "'",
    "(",
    ")",
    "((a)",
    "*",
    "a*",
    "-",
    "-x",
    ":",
    "col:value",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(a b, 2)",
    "a AND b OR c NOT d",
    "^start",
    "{x y}",
    "+plus",
    "C++",
    "a.b.c",
    "10.0.0.1",
    "foo_bar_BAZ",
    "::",
    "->",
    "$$",
    "\\",
    "%_%",
    "'; DROP TABLE chunks; --",
    "ünïcödé 日本語 🙂",
    "x" * 5000,
    "\t\n spaced \r\n",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_answer_without_error(memory: Memory, query: str):
    hits = memory.search_exact(query, k=5)
    assert isinstance(hits, list)
    assert memory.fts.counts()["chunks"] > 0  # nothing was dropped


LITERALS = {
    "topics/literals.md": """\
# Literals

The NAS lives at 10.0.0.1 and the router at 10.0.0.254.

Error E-1042 (endstop) appears after `SAVE_CONFIG` fails.

Call parse_config() with "quoted text" and a -flag: mode=fast.

The regex is a*b+ and the path is C:\\Temp\\x.txt; arrow -> here.

Le café crème coûte 3€ à Zürich. 日本語のテキスト.

Ordinary words: belt AND pulley OR idler NEAR motor.
""",
}


@pytest.fixture(scope="module")
def literal_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    root = small_root(tmp_path_factory.mktemp("literals") / "memory")
    for rel, text in LITERALS.items():
        write(root, rel, text)
    m = Memory(root, keyword_only=True)
    m.index()
    yield m
    m.close()


@pytest.mark.parametrize(
    "query,expected_line",
    [
        ("10.0.0.1", 3),
        ("10.0.0.254", 3),
        ("E-1042", 5),
        ("SAVE_CONFIG", 5),
        ("`SAVE_CONFIG` fails", 5),
        ("parse_config()", 7),
        ('"quoted text"', 7),
        ("-flag: mode=fast", 7),
        ("a*b+", 9),
        ("C:\\Temp\\x.txt", 9),
        ("->", 9),
        ("café crème", 11),
        ("CAFÉ", 11),
        ("日本語", 11),
        ("belt AND pulley OR idler NEAR motor", 13),
        ("AND pulley", 13),
    ],
)
def test_literal_strings_are_found_as_typed(literal_memory: Memory, query: str, expected_line: int):
    hits = literal_memory.search_exact(query, k=5)
    assert hits, f"no hit for {query!r}"
    found = [h for h in hits if h.path == "topics/literals.md"]
    assert found and found[0].start_line == expected_line
    assert found[0].match in ("phrase", "substring")
    # literal matches come before partial ones
    tiers = [h.match in ("phrase", "substring") for h in hits]
    assert tiers == sorted(tiers, reverse=True)


def test_phrase_beats_scattered_terms(literal_memory: Memory):
    # "10.0.0.1" must not report 10.0.0.254's line as a phrase match of 10.0.0.1 elsewhere
    hits = literal_memory.search_exact("0.0.254 and", k=5)
    assert hits[0].start_line == 3


def test_literal_match_is_not_fooled_by_punctuation(root):
    write(root, "topics/ips.md", "# IPs\n\nOld host 10-0-0-1 retired.\n\nNew host 10.0.0.1 live.\n")
    m = Memory(root, keyword_only=True)
    m.index()
    hits = m.search_exact("10.0.0.1", k=5)
    assert hits[0].start_line == 5 and hits[0].match == "phrase"
    assert all(not (h.start_line == 3 and h.match == "phrase") for h in hits)
    m.close()


def test_multi_word_questions_fall_back_to_terms(memory: Memory):
    hits = memory.search_exact("klipper printer address", k=5)
    assert hits and hits[0].path == "topics/printer.md"
    assert hits[0].match in ("all_terms", "any_terms")


def test_matched_text_is_visible_in_long_chunks(root):
    long_para = " ".join(["filler"] * 400) + " NEEDLE_TOKEN_42 " + " ".join(["filler"] * 400)
    write(root, "topics/long.md", f"# Long\n\n{long_para}\n")
    m = Memory(root, keyword_only=True)
    m.index()
    hit = m.search_exact("NEEDLE_TOKEN_42", k=1)[0]
    assert "NEEDLE_TOKEN_42" in hit.text and len(hit.text) < 800
    m.close()


def test_ties_go_to_the_higher_layer(root):
    same = "The deploy key rotates every ninety days."
    write(root, "sessions/compressed/2026/2026-01-01-aaaa-deploy.md", f"# Deploy\n\n{same}\n")
    write(root, "topics/deploy.md", f"# Deploy\n\n{same}\n")
    m = Memory(root, keyword_only=True)
    m.index()
    hits = m.search_exact("deploy key rotates", k=2)
    assert [h.layer for h in hits] == ["topic", "session"]
    m.close()


def test_layer_and_date_filters(memory: Memory):
    assert {h.layer for h in memory.search_exact("SAVE_CONFIG", k=5, layers=["session"])} == {"session"}
    assert {h.layer for h in memory.search_exact("SAVE_CONFIG", k=5, layers=["topic"])} == {"topic"}
    assert memory.search_exact("SAVE_CONFIG", k=5, after="2026-03-02")[0].layer == "session"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"k": 0}, "k is 0"),
        ({"k": -3}, "k is -3"),
        ({"k": 10**9}, "k is"),
        ({"layers": ["nope"]}, "unknown layer"),
        ({"after": "yesterday"}, "after must be a date"),
        ({"after": "2026-02-30"}, "after must be a date"),
        ({"after": "2026-05-01", "before": "2026-01-01"}, "later than before"),
    ],
)
def test_bad_arguments_raise_clear_errors(memory: Memory, kwargs, message):
    with pytest.raises(QueryError, match=message):
        memory.search_exact("SAVE_CONFIG", **kwargs)


def test_empty_query_is_a_clear_error(memory: Memory):
    with pytest.raises(QueryError, match="empty"):
        memory.search_exact("   ")


def test_nul_and_lone_surrogates_are_answered(memory: Memory):
    assert memory.search_exact("SAVE\x00CONFIG", k=3)
    memory.search_exact("bad \ud800 surrogate", k=3)


def test_all_terms_tier_ignores_stop_words(root):
    """A long reply holding every common word of the question does not outrank the short line that holds
    its content words."""
    filler = " ".join(["what is the plan for my project and how is it going"] * 20)
    write(
        root,
        "sessions/compressed/2026/2026-03-05-eeee5555-long.md",
        f"---\nstarted: 2026-03-05\n---\n# Long\n\n{filler} deadline\n\nThe sprint deadline is March 29.\n",
    )
    m = Memory(root, keyword_only=True)
    m.index()
    hits = m.search_exact("what is my sprint deadline", k=3)
    assert hits[0].text == "The sprint deadline is March 29." and hits[0].match == "all_terms"
    m.close()


def test_index_line_comes_after_the_content_it_points_to(root):
    """MEMORY.md lists topics by title; a literal found both there and in the topic answers from the topic."""
    write(
        root,
        "topics/cases.md",
        "---\ntitle: Support::Case states\n---\n# Support::Case states\n\n"
        "The Support::Case model has a number of states, from open to resolved.\n",
    )
    index = (root / "MEMORY.md").read_text(encoding="utf-8")
    write(root, "MEMORY.md", index + "\n- [Support::Case states](topics/cases.md)\n")
    m = Memory(root, keyword_only=True)
    m.index()
    hits = m.search_exact("Support::Case", k=3)
    assert hits[0].path == "topics/cases.md" and hits[0].match == "phrase", [h.path for h in hits]
    m.close()


def test_an_excerpt_starts_and_ends_between_words() -> None:
    from memory_server.search.query import cut_text

    text = (
        "Several servers (one per Claude Code session) share one root. " * 3
        + ("The index uses WAL mode and BEGIN IMMEDIATE for writers, so readers never block while a writer commits.")
        + " Filler words follow here." * 10
    )
    cut = cut_text(text, ["BEGIN IMMEDIATE"], 120)
    assert "BEGIN IMMEDIATE" in cut and cut.startswith("…") and cut.endswith("…")
    body = cut.strip("…")
    start = text.index(body)  # the match makes it unique
    end = start + len(body)
    assert text[start - 1] == " " and text[end] == " ", cut  # "…rs (one per" was the old start
