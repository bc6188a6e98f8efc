"""Semantic search with the real MiniLM model: paraphrases, precedence, recency, diversity, filters."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import write

from memory_server import Memory
from memory_server.files.scaffold import init_root
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.testing import FakeEmbedder

PARAPHRASE_TOPICS = {
    "topics/printer.md": """\
---
title: Printer
updated: 2026-03-01
---
# Printer

## Belts

Tighten the X axis belt until it twangs at 110 Hz when plucked.

## Network

The printer's web interface is reachable at 192.168.1.50 on port 7125.
""",
    "topics/database.md": """\
---
title: Database
updated: 2026-02-01
---
# Database

Migrations run with alembic upgrade head before each deploy.

Backups are written every night to the S3 bucket and kept for thirty days.
""",
    "topics/frontend.md": """\
---
title: Frontend
updated: 2026-01-15
---
# Frontend

The web app is built with Vite and deployed as static files behind nginx.
""",
}


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def paraphrase_memory(tmp_path: Path, minilm: MiniLMEmbedder):
    root = tmp_path / "m"
    init_root(root)
    for rel, text in PARAPHRASE_TOPICS.items():
        write(root, rel, text)
    m = Memory(root, embedder=minilm)
    m.index()
    yield m
    m.close()


@pytest.mark.parametrize(
    "question,path,line",
    [
        ("how taut should the drive strap be?", "topics/printer.md", 9),
        ("how long do we retain copies of our data?", "topics/database.md", 9),
        ("what address serves the machine's dashboard?", "topics/printer.md", 13),
    ],
)
def test_paraphrase_finds_the_answer_first(paraphrase_memory: Memory, question: str, path: str, line: int):
    # the question shares no content word with the answer
    hits, mode = paraphrase_memory.search_memory(question, k=3)
    assert mode == "hybrid"
    assert (hits[0].path, hits[0].start_line) == (path, line), [(h.path, h.start_line) for h in hits]


def test_semantic_only_mode_also_finds_it(paraphrase_memory: Memory):
    paraphrase_memory.settings.ranking.keyword_weight = 0.0
    hits, mode = paraphrase_memory.search_memory("how taut should the drive strap be?", k=1)
    assert mode == "semantic" and hits[0].start_line == 9


def test_topic_outranks_a_session_saying_the_same(tmp_path: Path, minilm: MiniLMEmbedder):
    root = tmp_path / "m"
    init_root(root)
    said = "The staging deploy runs every Friday at noon from the release branch."
    # the session is newer and says the same thing; the curated topic still wins
    write(
        root,
        "sessions/compressed/2026/2026-11-20-aaaa1111-deploy.md",
        f"---\nstarted: 2026-11-20\n---\n# Deploy\n\n{said}\n",
    )
    write(root, "topics/deploy.md", f"---\ntitle: Deploy\nupdated: 2025-01-01\n---\n# Deploy\n\n{said}\n")
    m = Memory(root, embedder=minilm)
    m.index()
    hits, _ = m.search_memory("when does staging get deployed?", k=3)
    assert hits[0].path == "topics/deploy.md"
    # the session's copy is a duplicate of a higher-layer hit: dropped, not shown twice
    assert all(h.path != "sessions/compressed/2026/2026-11-20-aaaa1111-deploy.md" for h in hits)
    m.settings.ranking.duplicate_similarity = 1.01
    hits, _ = m.search_memory("when does staging get deployed?", k=3, layers=["topic", "session"])
    assert [h.layer for h in hits if said in h.text] == ["topic", "session"]
    m.close()


def test_recent_session_beats_old_one_on_equal_relevance(tmp_path: Path):
    """The same line said twice, ranked on the keyword signal (equal BM25: the vectors would differ, since
    each chunk is embedded with its date): the recent session comes first, the older duplicate is dropped."""
    root = tmp_path / "m"
    init_root(root)
    text = "We profiled the importer and found the regex backtracking."
    today = dt.date.today()
    old, new = today - dt.timedelta(days=400), today - dt.timedelta(days=3)
    write(root, f"sessions/compressed/{old.year}/{old}-aaaa-old.md", f"---\nstarted: {old}\n---\n# S\n\n{text}\n")
    write(root, f"sessions/compressed/{new.year}/{new}-bbbb-new.md", f"---\nstarted: {new}\n---\n# S\n\n{text}\n")
    m = Memory(root, keyword_only=True)
    m.index()
    hits, _ = m.search_memory("importer regex backtracking", k=2, layers=["session"])
    assert hits[0].date == str(new)  # and the older duplicate is dropped
    assert len(hits) == 1
    m.close()


def test_one_file_does_not_fill_the_answer(tmp_path: Path):
    root = tmp_path / "m"
    init_root(root)
    many = "\n\n".join(f"Kafka consumer lag note {i}: the consumer lag grew on partition {i}." for i in range(12))
    write(root, "topics/kafka.md", f"# Kafka\n\n{many}\n")
    write(root, "topics/ops.md", "# Ops\n\nConsumer lag alerts page the on-call when lag exceeds ten thousand.\n")
    m = Memory(root, embedder=FakeEmbedder())
    m.settings.ranking.same_file_penalty = 0.5  # the per-file quota is off by default (it cost recall)
    m.index()
    hits, _ = m.search_memory("consumer lag", k=5)
    assert "topics/ops.md" in {h.path for h in hits}
    # the quota counts the hits picked so far, not the k asked for: larger answers start with smaller ones
    answers = {k: [(h.path, h.start_line) for h in m.search_memory("consumer lag", k=k)[0]] for k in (3, 5, 8, 12)}
    assert answers[12][:8] == answers[8] and answers[8][:5] == answers[5] and answers[5][:3] == answers[3]
    m.close()


def test_near_duplicates_are_dropped(tmp_path: Path):
    root = tmp_path / "m"
    init_root(root)
    text = "Rotate the API signing key every ninety days."
    write(root, "topics/a.md", f"# A\n\n{text}\n")
    write(root, "topics/b.md", f"# A\n\n{text}\n")
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    hits, _ = m.search_memory("signing key rotation", k=5)
    assert sum(1 for h in hits if h.text == text) == 1
    m.close()


def test_layer_and_date_filters(fake_memory: Memory):
    hits, _ = fake_memory.search_memory("belt", k=5, layers=["session"])
    assert hits and {h.layer for h in hits} == {"session"}
    hits, _ = fake_memory.search_memory("belt", k=5, after="2026-03-02")
    assert hits and all(h.date and h.date >= "2026-03-02" for h in hits)
    hits, _ = fake_memory.search_memory("belt", k=5, before="2026-02-28")
    assert all(h.date and h.date <= "2026-02-28" for h in hits)


def test_answer_fits_the_budget(fake_memory: Memory):
    hits, _ = fake_memory.search_memory("printer belt firmware config", k=50)
    total = sum(len(h.text) for h in hits)
    assert total <= fake_memory.settings.search.budget_chars + 50 * 2


def test_repository_memory_paraphrase(minilm: MiniLMEmbedder):
    """On this repository's own memory, a paraphrase finds the topic chunk that answers it."""
    repo = Path(__file__).resolve().parents[1]
    m = Memory(repo, embedder=minilm)
    m.index()
    hits, _ = m.search_memory("why don't we download the model when the program runs?", k=3)
    assert hits[0].path == "topics/decisions.md" and hits[0].heading == "Embeddings", hits[0]
    m.close()


def test_the_passage_next_to_a_match_rises_with_it(tmp_path: Path):
    root = tmp_path / "m"
    init_root(root)
    write(
        root,
        "topics/printer.md",
        "# Printer\n\nWhich port does the Moonraker dashboard listen on?\n\nIt answers on 7125, behind nginx.\n",
    )
    for i in range(6):
        write(root, f"topics/other{i}.md", f"# Other {i}\n\nThe build answers on port {8000 + i} behind nginx.\n")
    m = Memory(root, embedder=FakeEmbedder())
    m.settings.ranking.file_weight = 0.0  # isolate the neighbour effect from session routing
    m.settings.ranking.late_weight = 0.0  # and from the token-by-token rerank
    m.index()
    hits, _ = m.search_memory("Moonraker dashboard port", k=3)
    assert [(h.path, h.start_line) for h in hits[:2]] == [("topics/printer.md", 3), ("topics/printer.md", 5)]
    m.settings.ranking.neighbour_weight = 0.0
    hits, _ = m.search_memory("Moonraker dashboard port", k=3)
    assert ("topics/printer.md", 5) not in [(h.path, h.start_line) for h in hits[:2]]
    m.close()


PRINTER_ROOT = {
    "topics/printer.md": """\
---
title: 3D printer
updated: 2026-03-01
---
# 3D printer

![Status: in use](https://img.shields.io/badge/status-in%20use-green)

The belt tension was tightened to 110 Hz.

The printer lives at 192.168.0.108.

Firmware is Klipper, flashed over USB.
""",
    "topics/kitchen.md": "---\ntitle: Kitchen\n---\n# Kitchen\n\nThe dishwasher runs at night on the eco programme.\n",
    "topics/car.md": "---\ntitle: Car\n---\n# Car\n\nThe tyres were rotated in May; pressure is 2.4 bar.\n",
}


@pytest.fixture
def printer_memory(tmp_path: Path, minilm: MiniLMEmbedder):
    root = tmp_path / "m"
    init_root(root)
    for rel, text in PRINTER_ROOT.items():
        write(root, rel, text)
    m = Memory(root, embedder=minilm)
    m.index()
    yield m
    m.close()


def test_paraphrase_beats_common_words_matching_everywhere(printer_memory: Memory):
    """ "3d" and "printer" are in every chunk's title; the keyword signal they make must not outrank the
    clear semantic answer (the belt line), and the literal IP still finds its own line."""
    hits, _ = printer_memory.search_memory("how tight is the drive strap on the 3D printer", k=3)
    assert "belt tension" in hits[0].text, [h.text for h in hits]
    hits, _ = printer_memory.search_memory("192.168.0.108", k=3)
    assert "192.168.0.108" in hits[0].text, [h.text for h in hits]


def test_a_status_badge_does_not_answer_for_its_file(printer_memory: Memory):
    """The badge line is embedded as what it says, not as the file's title: it does not outrank the
    paragraphs that answer a question about the printer."""
    hits, _ = printer_memory.search_memory("what firmware does the 3D printer run?", k=3)
    assert "Klipper" in hits[0].text, [h.text for h in hits]
    assert "Status" not in hits[0].text


PREFIX_QUESTIONS = [
    "how do several servers share one index safely?",
    "what was decided about ranking",
    "why don't we download the model when the program runs?",
    "how are the tests run, and which parts are real?",
    "what happens when the keyword index is damaged?",
    "how are secrets kept out of summaries?",
    "hooks",
    "dream proposal review",
]


def test_an_answer_for_fewer_hits_is_the_start_of_one_for_more(minilm: MiniLMEmbedder):
    """On this repository's own memory, with the real model: the answers for k = 5, 10 and 20 are prefixes of
    each other (candidate pools and diversity do not depend on k)."""
    repo = Path(__file__).resolve().parents[1]
    m = Memory(repo, embedder=minilm)
    try:
        m.index()
        for question in PREFIX_QUESTIONS:
            answers = {
                k: [(h.path, h.start_line, h.end_line) for h in m.search_memory(question, k)[0]] for k in (5, 10, 20)
            }
            assert len(answers[20]) == 20, question
            assert answers[20][:10] == answers[10], question
            assert answers[10][:5] == answers[5], question
            scores = {k: [h.score for h in m.search_memory(question, k)[0]] for k in (5, 20)}
            assert scores[20][:5] == scores[5], question
    finally:
        m.close()
