"""Pointer lines route, they do not answer: a MEMORY.md line that links a topic lends its match to that topic's
passages in search_memory and never takes a place in the answer (search/pointers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from memory_server import Memory
from memory_server.files.scaffold import init_root
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.parse.markdown import Chunk
from memory_server.search.fusion import Ranked
from memory_server.search.pointers import pointer_target, route_pointers
from memory_server.settings import RankingSettings


def _chunk(text: str, path: str = "MEMORY.md", cid: str = "c") -> Chunk:
    return Chunk(cid, path, "topic", 1, 1, "Memory", "", None, text)


@pytest.mark.parametrize(
    "text,target",
    [
        ("- [Printer](topics/printer.md): the Voron printer", "topics/printer.md"),
        ("* [Printer](./topics/3d%20printer.md)", "topics/3d printer.md"),
        ("1. Printer: see [the notes](topics/printer.md)", "topics/printer.md"),
        ('- [Printer](<topics/3d printer.md> "the printer")', "topics/3d printer.md"),
        ("- **[Printer](topics/printer.md)** (belts, firmware)", "topics/printer.md"),
        ("- [Session](sessions/compressed/2026/a.md)", None),  # not a topic
        ("- [Escape](../topics/printer.md)", None),  # outside the root
        ("- [Escape](topics/../../etc/printer.md)", None),
        ("- [Web](https://example.org/topics/printer.md)", None),
        ("See [Printer](topics/printer.md) for more.", None),  # a paragraph, not a list item
        ("- [Printer](topics/printer.md)\n  - Belts at 110 Hz", None),  # an item with content under it
    ],
)
def test_a_pointer_line_is_one_list_item_linking_a_topic(text: str, target: str | None) -> None:
    assert pointer_target(_chunk(text)) == target


def test_only_memory_md_has_pointer_lines() -> None:
    assert pointer_target(_chunk("- [Printer](topics/printer.md)", path="topics/index.md")) is None


def test_a_pointer_leaves_the_candidates_and_lends_to_its_topic() -> None:
    chunks = {
        "p": _chunk("- [Printer](topics/printer.md): the Voron printer", cid="p"),
        "belt": _chunk("The belt runs at 110 Hz.", path="topics/printer.md", cid="belt"),
        "fw": _chunk("Firmware is Klipper.", path="topics/printer.md", cid="fw"),
        "car": _chunk("Tyres at 2.4 bar.", path="topics/car.md", cid="car"),
    }
    ranked = Ranked({"p": 0.8, "belt": 0.3, "fw": 0.1, "car": 0.35}, chunks)
    routed = route_pointers(ranked, RankingSettings(pointer_weight=0.5))
    assert routed.scores == pytest.approx({"belt": 0.7, "fw": 0.5, "car": 0.35})
    assert "p" not in route_pointers(ranked, RankingSettings(pointer_weight=0.0)).scores


POINTER_ROOT = {
    "MEMORY.md": """\
# Memory

Pointers, not content: one line per topic.

## Topics

- [Printer](topics/printer.md): the Voron 2.4 printer in the workshop, its belts and its Klipper firmware
- [Kitchen](topics/kitchen.md): the dishwasher, the oven and the fridge
- [Car](topics/car.md): tyres, servicing and the MOT
""",
    "topics/printer.md": """\
---
title: Printer
updated: 2026-03-01
---
# Printer

The belts were tightened until they ring at 110 Hz when plucked.

The firmware is Klipper, flashed over USB from the Raspberry Pi.

Filament is dried for four hours before long prints.
""",
    "topics/kitchen.md": "---\ntitle: Kitchen\n---\n# Kitchen\n\nThe dishwasher runs at night on the eco programme.\n",
    "topics/car.md": "---\ntitle: Car\n---\n# Car\n\nThe tyres were rotated in May; pressure is 2.4 bar.\n",
}


def test_search_memory_answers_with_the_topic_a_pointer_names_never_the_pointer(tmp_path: Path) -> None:
    """With the real model: questions worded like a pointer line find the topic's passages, and no pointer
    line is a hit (before this rule the pointer line came first for each of them)."""
    root = tmp_path / "m"
    init_root(root)
    for rel, text in POINTER_ROOT.items():
        write(root, rel, text)
    memory = Memory(root, embedder=MiniLMEmbedder())
    try:
        memory.index()
        questions = {
            "what firmware does the Voron printer in the workshop run?": "Klipper",
            "how tight are the Voron printer's belts?": "110 Hz",
            "car tyres, servicing and MOT": "2.4 bar",
        }
        for question, answer in questions.items():
            hits, _ = memory.search_memory(question, k=5)
            assert not [h for h in hits if h.path == "MEMORY.md" and h.text.startswith("- [")], question
            assert answer in hits[0].text, (question, [h.text for h in hits])
        # search_exact is literal: it still finds the line itself
        assert memory.search_exact("the Voron 2.4 printer in the workshop")[0].path == "MEMORY.md"
    finally:
        memory.close()
