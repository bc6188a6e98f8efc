"""Chunking follows the Markdown structure and line numbers are exact."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_server.parse.markdown import FENCE, parse_document

REPO = Path(__file__).resolve().parents[1]


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
    for a, b in zip(doc.chunks, doc.chunks[1:], strict=False):
        assert b.start_line == a.end_line + 1
    check_ranges(text, doc)


def test_session_date_from_front_matter_or_file_name():
    s = parse_document(
        "sessions/compressed/2026/2026-03-02-x.md", "session", "---\nstarted: 2026-03-04T10:00:00Z\n---\nhi"
    )
    assert s.date == "2026-03-04"
    n = parse_document("sessions/compressed/2026/2026-03-02-x.md", "session", "hi")
    assert n.date == "2026-03-02"


def test_chunks_carry_title_heading_path_and_date():
    doc = parse_document("topics/printer.md", "topic", DOC)
    tension = doc.chunks[3]
    assert (tension.title, tension.heading, tension.date) == ("Printer notes", "Belts > Tension", "2026-03-01")


def test_chunk_ids_are_stable_and_change_with_text():
    a = parse_document("topics/x.md", "topic", DOC)
    b = parse_document("topics/x.md", "topic", DOC)
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
    c = parse_document("topics/x.md", "topic", DOC.replace("first item", "first thing"))
    assert a.chunks[1].id != c.chunks[1].id and a.chunks[0].id == c.chunks[0].id


def spans(doc) -> list[tuple[int, int, str, str]]:
    return [(c.start_line, c.end_line, c.heading, c.text) for c in doc.chunks]


def test_backticks_in_the_info_string_are_not_a_fence():
    """A backtick fence's info string cannot hold a backtick: the line is a paragraph, not an open fence."""
    text = "# Cases\n\n```Support::Case``` has a status field.\n\n## Fields\n\n- status\n- owner\n"
    doc = parse_document("topics/cases.md", "topic", text)
    assert spans(doc) == [
        (3, 3, "", "```Support::Case``` has a status field."),
        (7, 7, "Fields", "- status"),
        (8, 8, "Fields", "- owner"),
    ]
    check_ranges(text, doc)
    assert not FENCE.match("```Support::Case``` has a status field.")
    assert FENCE.match("```python") and FENCE.match("~~~ a`b")


def test_a_tilde_fence_may_have_backticks_in_its_info_string():
    text = "~~~ sh `quoted`\n# not a heading\n~~~\n\n## After\n\ntext\n"
    doc = parse_document("topics/t.md", "topic", text)
    assert spans(doc) == [(1, 3, "", "~~~ sh `quoted`\n# not a heading\n~~~"), (7, 7, "After", "text")]


def test_setext_headings():
    text = "Title Here\n==========\n\nintro\n\nPart one\nspans two lines\n---\n\nbody\n"
    doc = parse_document("topics/s.md", "topic", text)
    assert doc.title == "Title Here"
    assert spans(doc) == [(4, 4, "", "intro"), (10, 10, "Part one spans two lines", "body")]


def test_nested_lists_are_one_chunk_per_top_level_item():
    text = "## L\n\n1. one\n   - a\n     - deep\n   - b\n2. two\n\n   loose paragraph of two\n\n3. three\n"
    doc = parse_document("topics/l.md", "topic", text)
    assert [(c.start_line, c.end_line) for c in doc.chunks] == [(3, 6), (7, 9), (11, 11)]
    assert all(c.heading == "L" for c in doc.chunks)
    check_ranges(text, doc)


def test_a_fence_inside_a_list_item_stays_with_the_item():
    text = "- run this:\n\n  ```sh\n  make\n\n  # a comment, not a heading\n  ```\n- next item\n\n## Later\n\nend\n"
    doc = parse_document("topics/f.md", "topic", text)
    assert [(c.start_line, c.end_line, c.heading) for c in doc.chunks] == [(1, 7, ""), (8, 8, ""), (12, 12, "Later")]
    check_ranges(text, doc)


def test_tables_html_blocks_and_reference_definitions_are_chunks():
    text = (
        "Intro line\n\n"
        "| key | value |\n| --- | --- |\n| a | 1 |\n\n"
        "<details>\n<summary>More</summary>\n\nhidden text\n</details>\n\n"
        "[spec]: https://example.invalid/spec\n\n"
        "***\n\n"
        "<!-- a note -->\n"
    )
    doc = parse_document("topics/t.md", "topic", text)
    assert [(c.start_line, c.end_line) for c in doc.chunks] == [
        (1, 1),
        (3, 5),
        (7, 8),
        (10, 10),
        (11, 11),
        (13, 13),
        (17, 17),
    ]
    check_ranges(text, doc)


def test_carriage_returns_alone_and_mixed_line_ends():
    text = "# T\r\rone\rtwo\r\n\n- item\n"
    doc = parse_document("topics/cr.md", "topic", text)
    assert spans(doc) == [(3, 4, "", "one\ntwo"), (6, 6, "", "- item")]
    check_ranges(text, doc)


def test_a_file_of_only_front_matter():
    for text in ("---\ntitle: T\n---", "---\r\ntitle: T\r\n---\r\n\r\n\r\n", "---\n---\n"):
        doc = parse_document("topics/fm.md", "topic", text)
        assert doc.chunks == [] and doc.warnings == [], text


def test_front_matter_lines_are_counted():
    text = "---\ntitle: T\ntags: [x]\n---\n\n## H\n\nbody\n"
    doc = parse_document("topics/fm.md", "topic", text)
    assert spans(doc) == [(8, 8, "H", "body")]


def test_tabs():
    text = "#\tTabbed\n\n-\titem one\n\tcontinued\n-\titem two\n\npara\n\n\tindented code\n\n## H\n\na\tb\n"
    doc = parse_document("topics/tabs.md", "topic", text)
    assert doc.title == "Tabbed"
    assert [(c.start_line, c.end_line, c.heading) for c in doc.chunks] == [
        (3, 4, ""),
        (5, 5, ""),
        (7, 7, ""),
        (9, 9, ""),
        (13, 13, "H"),
    ]
    check_ranges(text, doc)


def test_deep_nesting_loses_no_text():
    """Past the parser's nesting limit a block keeps the rest of its lines: nothing is dropped."""
    text = "\n".join("  " * i + f"- level{i}" for i in range(60)) + "\n\nafter the list\n"
    doc = parse_document("topics/deep.md", "topic", text)
    joined = "\n".join(c.text for c in doc.chunks)
    assert all(f"level{i}" in joined for i in range(60)) and "after the list" in joined
    check_ranges(text, doc)


# Line shapes for the property test: each `{w}` is a word that occurs once in the file.
LINE_SHAPES = [
    "{w} plain text",
    "- {w} item",
    "  - {w} nested item",
    "1. {w} numbered",
    "   {w} continued",
    "> {w} quoted",
    "```",
    "```py",
    "```{w}``` not a fence",
    "~~~",
    "    {w} indented",
    "\t{w} tabbed",
    "| {w} | b |",
    "|---|---|",
    "<div>",
    "</div> {w}",
    "[{w}]: /target",
    "",
    "",
    "# H",
    "## H {w}",
    "***",
    "   ",
    "* ",
    "{w}\ttab inside",
]


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(st.sampled_from(LINE_SHAPES), max_size=40),
    front_matter=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    limit=st.sampled_from([50, 1500]),
)
def test_every_chunk_reads_back_from_its_lines_and_no_text_is_lost(shapes, front_matter, newline, limit):
    words = [f"w{i}x" for i in range(len(shapes))]
    body = [shape.format(w=word) for shape, word in zip(shapes, words, strict=True)]
    lines = (["---", "title: T", "---"] if front_matter else []) + body
    text = newline.join(lines)
    doc = parse_document("topics/p.md", "topic", text, max_chunk_chars=limit)
    check_ranges(text, doc)
    for a, b in zip(doc.chunks, doc.chunks[1:], strict=False):
        assert a.end_line < b.start_line
    chunk_text = "\n".join(c.text for c in doc.chunks)
    for shape, word in zip(shapes, words, strict=True):
        if "{w}" in shape and not shape.startswith("#"):
            assert chunk_text.count(word) == 1, (word, text)


def test_the_repository_topics_read_back_exactly():
    docs = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md", REPO / "CLAUDE.md", REPO / "CONTRIBUTING.md"]
    for path in sorted((REPO / "topics").glob("*.md")) + docs:
        text = path.read_text(encoding="utf-8")
        doc = parse_document(f"topics/{path.name}", "topic", text)
        assert doc.chunks, path
        check_ranges(text, doc)
