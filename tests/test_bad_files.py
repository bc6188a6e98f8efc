"""Malformed YAML, binary, non-UTF-8, huge files: the rest is indexed, status names the problem files."""

from __future__ import annotations

from pathlib import Path

from conftest import write

from memory_server import Memory
from memory_server.settings import Settings


def test_bad_files_are_skipped_or_degraded_and_named(root: Path):
    write(root, "topics/bad-yaml.md", "---\ntitle: [unclosed\nupdated: :\n---\n# Bad\n\nYAML_BODY_TOKEN survives.\n")
    (root / "topics/binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR" + bytes(range(256)))
    (root / "topics/latin1.md").write_bytes("# Latin\n\nCaf\xe9 LATIN_TOKEN cr\xe8me\n".encode("latin-1"))
    settings = Settings()
    settings.index.max_file_bytes = 10_000
    write(root, "topics/huge.md", "# Huge\n\n" + "word " * 5000)
    m = Memory(root, settings=settings, keyword_only=True)
    report = m.index()
    assert sorted(report.skipped) == ["topics/binary.md", "topics/huge.md"]
    assert m.search_exact("YAML_BODY_TOKEN")[0].path == "topics/bad-yaml.md"
    assert m.search_exact("LATIN_TOKEN")[0].path == "topics/latin1.md"
    assert m.search_exact("SAVE_CONFIG")  # the good files are all there
    problems = {p.path: p for p in m.status().problem_files}
    assert problems["topics/bad-yaml.md"].status == "degraded" and "YAML" in str(problems["topics/bad-yaml.md"].reason)
    assert problems["topics/latin1.md"].status == "degraded" and "UTF-8" in str(problems["topics/latin1.md"].reason)
    assert problems["topics/binary.md"].status == "skipped" and "binary" in str(problems["topics/binary.md"].reason)
    assert problems["topics/huge.md"].status == "skipped" and "limit" in str(problems["topics/huge.md"].reason)
    # fixing a file clears its problem
    write(root, "topics/bad-yaml.md", "---\ntitle: Fixed\n---\n# Fixed\n\nYAML_BODY_TOKEN survives.\n")
    m.index()
    assert "topics/bad-yaml.md" not in {p.path for p in m.status().problem_files}
    m.close()


def test_list_topics_survives_bad_front_matter(root: Path):
    write(root, "topics/bad-yaml.md", "---\ntitle: [unclosed\n---\nbody\n")
    m = Memory(root, keyword_only=True)
    topics = {t.path: t for t in m.list_topics()}
    assert topics["topics/printer.md"].title == "Printer"
    assert topics["topics/printer.md"].description == "How the 3D printer is set up"
    assert topics["topics/printer.md"].updated == "2026-03-01"
    assert topics["topics/printer.md"].tags == ["hardware", "klipper"]
    assert topics["topics/bad-yaml.md"].title == "bad-yaml"
    m.close()


def test_broken_memory_yaml(root: Path):
    import pytest

    from memory_server import ConfigError

    write(root, "memory.yaml", "search: [\n")
    with pytest.raises(ConfigError, match="memory.yaml is not valid YAML"):
        Memory(root, keyword_only=True)
    write(root, "memory.yaml", "search:\n  defualt_k: 3\n")
    with pytest.raises(ConfigError, match="unknown setting search.defualt_k"):
        Memory(root, keyword_only=True)
    lenient = Memory.open_lenient(root, keyword_only=True)
    assert "defualt_k" in str(lenient.status().config_error)
    lenient.close()
