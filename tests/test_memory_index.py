"""MEMORY.md upkeep: length against Claude Code's load limits, topics it does not list, dead links."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_server.files.scaffold import init_root
from memory_server.parse.memory_md import (
    MAX_BYTES,
    MAX_LINES,
    check_memory_index,
    find_topic_paths,
    memory_index_notes,
)


def make_root(tmp_path: Path, memory_md: str | None, topics: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "root"
    (root / "topics").mkdir(parents=True)
    (root / "sessions" / "compressed").mkdir(parents=True)
    for rel in topics:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {path.stem}\n---\n# {path.stem}\n", encoding="utf-8")
    if memory_md is not None:
        (root / "MEMORY.md").write_text(memory_md, encoding="utf-8")
    return root


def test_a_fresh_root_is_clean(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    init_root(root)
    topics = find_topic_paths(root)
    assert topics == ["topics/lessons.md"]
    report = check_memory_index(root, topics)
    assert report["exists"] is True
    assert report["too_long"] is False
    assert report["unlisted_topics"] == []
    assert report["broken_links"] == []
    assert 0 < report["lines"] < MAX_LINES
    assert report["bytes"] == (root / "MEMORY.md").stat().st_size
    assert memory_index_notes(report) == []


def test_the_repository_memory_index_is_clean() -> None:
    """This repository is a memory root; its own MEMORY.md must pass its own check."""
    root = Path(__file__).resolve().parents[1]
    report = check_memory_index(root, find_topic_paths(root))
    assert report["exists"] and not report["too_long"], report
    assert report["unlisted_topics"] == [], report
    assert report["broken_links"] == [], report


def test_report_has_the_agreed_keys(tmp_path: Path) -> None:
    root = make_root(tmp_path, "# Memory\n")
    report = check_memory_index(root, [])
    for key, kind in {
        "lines": int,
        "bytes": int,
        "too_long": bool,
        "unlisted_topics": list,
        "broken_links": list,
    }.items():
        assert isinstance(report[key], kind), key  # type: ignore[literal-required]
    assert report["limits"] == {"lines": 200, "bytes": 25_000}


@pytest.mark.parametrize(
    ("text", "lines"),
    [("", 0), ("one", 1), ("one\n", 1), ("one\ntwo", 2), ("one\ntwo\n", 2), ("\n\n", 2)],
)
def test_line_count_ignores_the_final_newline(tmp_path: Path, text: str, lines: int) -> None:
    root = make_root(tmp_path, text)
    assert check_memory_index(root, [])["lines"] == lines


def test_exactly_at_the_limits_is_not_too_long(tmp_path: Path) -> None:
    root = make_root(tmp_path, "x\n" * MAX_LINES)
    report = check_memory_index(root, [])
    assert report["lines"] == MAX_LINES and report["too_long"] is False

    body = "y" * (MAX_BYTES - 1) + "\n"
    root = make_root(tmp_path / "b", body)
    report = check_memory_index(root, [])
    assert report["bytes"] == MAX_BYTES and report["too_long"] is False


def test_over_200_lines_is_too_long(tmp_path: Path) -> None:
    root = make_root(tmp_path, "- line\n" * (MAX_LINES + 1))
    report = check_memory_index(root, [])
    assert report["lines"] == 201 and report["too_long"] is True
    assert any("201 lines" in n and "first 200 lines" in n for n in memory_index_notes(report))


def test_over_25_kb_is_too_long_even_when_short(tmp_path: Path) -> None:
    root = make_root(tmp_path, "# Memory\n" + "z" * MAX_BYTES + "\n")
    report = check_memory_index(root, [])
    assert report["lines"] == 2
    assert report["bytes"] > MAX_BYTES and report["too_long"] is True


def test_bytes_count_utf8_not_characters(tmp_path: Path) -> None:
    root = make_root(tmp_path, "é" * 13_000)  # 13,000 characters, 26,000 bytes
    report = check_memory_index(root, [])
    assert report["bytes"] == 26_000 and report["too_long"] is True


def test_unlisted_topics(tmp_path: Path) -> None:
    topics = ("topics/a.md", "topics/b.md", "topics/c.md", "topics/sub/d.md")
    root = make_root(
        tmp_path,
        "# Memory\n\n- [A](topics/a.md): the a topic\n- [D](./topics/sub/d.md): nested\n",
        topics,
    )
    report = check_memory_index(root, list(topics))
    assert report["unlisted_topics"] == ["topics/b.md", "topics/c.md"]
    notes = memory_index_notes(report)
    assert any("does not list 2 topic" in n and "topics/b.md" in n and "topics/c.md" in n for n in notes)


def test_a_named_path_counts_as_listed(tmp_path: Path) -> None:
    topics = ("topics/a.md", "topics/ab.md", "topics/b.md")
    root = make_root(tmp_path, "See `topics/a.md` and topics/b.md.\n", topics)
    report = check_memory_index(root, list(topics))
    assert report["unlisted_topics"] == ["topics/ab.md"]  # topics/a.md does not name topics/ab.md


def test_reference_links_and_percent_encoding_list_topics(tmp_path: Path) -> None:
    topics = ("topics/my topic.md", "topics/ref.md", "topics/angle.md")
    root = make_root(
        tmp_path,
        '- [Mine](topics/my%20topic.md)\n- [Ref][r]\n- [Angle](<topics/angle.md> "title")\n\n[r]: topics/ref.md\n',
        topics,
    )
    report = check_memory_index(root, list(topics))
    assert report["unlisted_topics"] == []
    assert report["broken_links"] == []


def test_absolute_topic_paths_are_accepted(tmp_path: Path) -> None:
    root = make_root(tmp_path, "- [A](topics/a.md)\n", ("topics/a.md", "topics/b.md"))
    report = check_memory_index(root, [str(root / "topics/a.md"), str(root / "topics/b.md")])
    assert report["unlisted_topics"] == [str(root / "topics/b.md")]


def test_memory_md_itself_is_never_an_unlisted_topic(tmp_path: Path) -> None:
    root = make_root(tmp_path, "# Memory\n")
    assert check_memory_index(root, ["MEMORY.md"])["unlisted_topics"] == []


def test_broken_links_with_line_numbers(tmp_path: Path) -> None:
    root = make_root(
        tmp_path,
        "# Memory\n"
        "- [A](topics/a.md)\n"
        "- [Gone](topics/gone.md): deleted last week\n"
        "- [Section](topics/a.md#setup) and [Missing section](topics/nope.md#x)\n"
        "- ![diagram](img/arch.png)\n"
        "\n"
        "[old]: topics/old.md\n",
        ("topics/a.md",),
    )
    report = check_memory_index(root, ["topics/a.md"])
    assert report["broken_links"] == [
        {"line": 3, "target": "topics/gone.md"},
        {"line": 4, "target": "topics/nope.md#x"},
        {"line": 5, "target": "img/arch.png"},
        {"line": 7, "target": "topics/old.md"},
    ]
    notes = memory_index_notes(report)
    assert "MEMORY.md line 3 links to topics/gone.md, which does not exist" in notes


def test_web_links_anchors_and_code_are_not_checked(tmp_path: Path) -> None:
    root = make_root(
        tmp_path,
        "# Memory\n"
        "- [Docs](https://example.invalid/docs.md) [Mail](mailto:a@b.invalid) [Top](#memory) [Net](//host/x.md)\n"
        "- Example: `[x](topics/not-a-link.md)`\n"
        "```markdown\n"
        "- [Template](topics/<slug>.md)\n"
        "```\n"
        "~~~\n"
        "[y](topics/also-not.md)\n"
        "```\n"
        "still inside the tilde fence: [z](topics/nor-this.md)\n"
        "~~~\n"
        "- [Real](topics/real-missing.md)\n",
    )
    report = check_memory_index(root, [])
    assert report["broken_links"] == [{"line": 12, "target": "topics/real-missing.md"}]


def test_links_to_existing_non_topic_files_and_folders_are_fine(tmp_path: Path) -> None:
    root = make_root(tmp_path, "- [CLAUDE](CLAUDE.md) [sessions](sessions/compressed/) [up](../root/MEMORY.md)\n")
    (root / "CLAUDE.md").write_text("# rules\n", encoding="utf-8")
    assert check_memory_index(root, [])["broken_links"] == []


def test_links_resolve_against_the_root_not_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_root(tmp_path, "- [A](topics/a.md)\n", ("topics/a.md",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = check_memory_index(root, ["topics/a.md"])
    assert report["broken_links"] == [] and report["unlisted_topics"] == []


def test_missing_memory_md(tmp_path: Path) -> None:
    root = make_root(tmp_path, None, ("topics/a.md",))
    report = check_memory_index(root, ["topics/a.md"])
    assert report["exists"] is False
    assert report["lines"] == 0 and report["bytes"] == 0 and report["too_long"] is False
    assert report["unlisted_topics"] == ["topics/a.md"]
    assert report["broken_links"] == []
    assert memory_index_notes(report) == [
        "MEMORY.md is missing: run `memory-server init` to create it (nothing existing is touched)"
    ]


def test_non_utf8_memory_md_is_still_checked(tmp_path: Path) -> None:
    root = make_root(tmp_path, None, ("topics/a.md",))
    (root / "MEMORY.md").write_bytes(b"# Memory \xff\xfe\n- [A](topics/a.md)\n- [B](topics/b.md)\n")
    report = check_memory_index(root, ["topics/a.md"])
    assert report["lines"] == 3
    assert report["unlisted_topics"] == []
    assert report["broken_links"] == [{"line": 3, "target": "topics/b.md"}]


def test_check_never_writes(tmp_path: Path) -> None:
    root = make_root(tmp_path, "- [Gone](topics/gone.md)\n" * 300, ("topics/a.md",))
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    check_memory_index(root, ["topics/a.md"])
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before


def test_find_topic_paths_follows_the_store(tmp_path: Path) -> None:
    root = make_root(tmp_path, "# Memory\n", ("topics/a.md", "topics/sub/b.md"))
    (root / "topics" / ".draft.md").write_text("hidden\n", encoding="utf-8")
    (root / "topics" / "notes.txt").write_text("not markdown\n", encoding="utf-8")
    (root / "sessions" / "compressed" / "s.md").write_text("a session\n", encoding="utf-8")
    assert find_topic_paths(root) == ["topics/a.md", "topics/sub/b.md"]
