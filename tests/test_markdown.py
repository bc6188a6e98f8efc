"""Chunking follows the Markdown structure and line numbers are exact."""

from __future__ import annotations

from memory_server.parse.markdown import parse_document


def lines_of(text: str, start: int, end: int) -> str:
    return "\n".join(text.splitlines()[start - 1 : end])


def check_ranges(text: str, doc) -> None:
    """Every chunk's text is exactly the file's lines start_line..end_line."""
    for c in doc.chunks:
        assert 1 <= c.start_line <= c.end_line
        assert lines_of(text, c.start_line, c.end_line).strip("\n") == c.text


DOC = """\
---
title: Printer notes
updated: 2026-03-01
tags: [a, b]
---
# Printer notes

Intro paragraph
over two lines.

## Belts

- first item
- second item
  continues here
  - nested item

### Tension

1. numbered one
2. numbered two

```python
def tension():

    return 110  # a blank line inside the fence stays inside
```

| a | b |
|---|---|
| 1 | 2 |

> a quote

## Other
Last paragraph without trailing newline"""


def test_structure_and_line_ranges():
    doc = parse_document("topics/printer.md", "topic", DOC)
    assert doc.title == "Printer notes"
    assert doc.date == "2026-03-01"
    assert doc.meta["tags"] == ["a", "b"]
    got = [(c.start_line, c.end_line, c.heading, c.text.splitlines()[0]) for c in doc.chunks]
    assert got == [
        (8, 9, "", "Intro paragraph"),
        (13, 13, "Belts", "- first item"),
        (14, 16, "Belts", "- second item"),
        (20, 20, "Belts > Tension", "1. numbered one"),
        (21, 21, "Belts > Tension", "2. numbered two"),
        (23, 27, "Belts > Tension", "```python"),
        (29, 31, "Belts > Tension", "| a | b |"),
        (33, 33, "Belts > Tension", "> a quote"),
        (36, 36, "Other", "Last paragraph without trailing newline"),
    ]
    check_ranges(DOC, doc)


def test_crlf_gives_the_same_chunks():
    lf = parse_document("topics/x.md", "topic", DOC)
    crlf = parse_document("topics/x.md", "topic", DOC.replace("\n", "\r\n"))
    assert [(c.start_line, c.end_line, c.text) for c in lf.chunks] == [
        (c.start_line, c.end_line, c.text) for c in crlf.chunks
    ]


def test_empty_and_blank_files():
    assert parse_document("topics/e.md", "topic", "").chunks == []
    assert parse_document("topics/e.md", "topic", "\n\n  \n").chunks == []
    only_fm = parse_document("topics/e.md", "topic", "---\ntitle: T\n---\n")
    assert only_fm.chunks == [] and only_fm.title == "T"


def test_title_falls_back_to_h1_then_file_name():
    assert parse_document("topics/a.md", "topic", "# Heading One\n\ntext").title == "Heading One"
    assert parse_document("topics/some-name.md", "topic", "text only").title == "some-name"


def test_malformed_front_matter_is_a_warning_and_the_body_is_kept():
    text = "---\ntitle: [unclosed\n---\nbody text\n"
    doc = parse_document("topics/bad.md", "topic", text)
    assert doc.warnings and "YAML" in doc.warnings[0]
    assert [c.text for c in doc.chunks] == ["body text"]
    assert doc.chunks[0].start_line == 4


def test_unclosed_fence_runs_to_end_of_file():
    text = "intro\n\n```\ncode line\nmore code"
    doc = parse_document("topics/f.md", "topic", text)
    assert [(c.start_line, c.end_line) for c in doc.chunks] == [(1, 1), (3, 5)]
    check_ranges(text, doc)


def test_long_blocks_are_split_on_line_boundaries():
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(100))
    doc = parse_document("topics/long.md", "topic", text, max_chunk_chars=600)
    assert len(doc.chunks) > 5
    assert doc.chunks[0].start_line == 1 and doc.chunks[-1].end_line == 100
    for a, b in zip(doc.chunks, doc.chunks[1:]):
        assert b.start_line == a.end_line + 1
    check_ranges(text, doc)


def test_session_date_from_front_matter_or_file_name():
    s = parse_document("sessions/compressed/2026/2026-03-02-x.md", "session", "---\nstarted: 2026-03-04T10:00:00Z\n---\nhi")
    assert s.date == "2026-03-04"
    n = parse_document("sessions/compressed/2026/2026-03-02-x.md", "session", "hi")
    assert n.date == "2026-03-02"


def test_embed_text_carries_context():
    doc = parse_document("topics/printer.md", "topic", DOC)
    tension = doc.chunks[3]
    assert tension.embed_text().startswith("Printer notes > Belts > Tension (2026-03-01)\n")


def test_chunk_ids_are_stable_and_change_with_text():
    a = parse_document("topics/x.md", "topic", DOC)
    b = parse_document("topics/x.md", "topic", DOC)
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
    c = parse_document("topics/x.md", "topic", DOC.replace("first item", "first thing"))
    assert a.chunks[1].id != c.chunks[1].id and a.chunks[0].id == c.chunks[0].id
