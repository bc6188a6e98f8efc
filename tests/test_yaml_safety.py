"""YAML from files anyone can commit is loaded safely: aliases, oversized and odd YAML are refused, fast."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_server.errors import UnsafeYamlError, YamlError
from memory_server.parse.frontmatter import (
    MAX_FRONT_MATTER_CHARS,
    load_yaml,
    read_front_matter,
    split_front_matter,
)

TESTS = Path(__file__).resolve().parent


def alias_bomb() -> str:
    """About 400 bytes of front matter whose `title` expands to 9**9 strings: anchors nested 9 deep."""
    names = "abcdefghi"
    lines = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for prev, cur in zip(names[:-1], names[1:], strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join([*lines, "title: *i"])


def test_the_bomb_is_small() -> None:
    assert len(alias_bomb()) < 420


def test_aliases_and_anchors_are_refused() -> None:
    with pytest.raises(UnsafeYamlError, match="aliases"):
        load_yaml(alias_bomb())
    with pytest.raises(UnsafeYamlError):
        load_yaml("base: &b {x: 1}\nother:\n  <<: *b\n")
    assert isinstance(UnsafeYamlError("x"), YamlError)  # callers that handle bad YAML handle this too


def test_only_plain_values_come_back() -> None:
    meta = load_yaml("title: T\nupdated: 2025-01-02\ntags: [a, b]\nn: 3\nnested: {k: [1, 2.5, null, true]}\n")
    assert meta["title"] == "T" and meta["tags"] == ["a", "b"] and meta["nested"]["k"] == [1, 2.5, None, True]
    for odd in ("x: !!binary aGVsbG8=", "x: !!set {a, b}", "x: !!python/object:os.system {}"):
        with pytest.raises(YamlError):
            load_yaml(odd)
    with pytest.raises(UnsafeYamlError, match="deep"):
        load_yaml("[" * 5000 + "]" * 5000)


def test_oversized_front_matter_is_refused_and_the_body_kept() -> None:
    lines = ["---", *[f"k{i}: {'x' * 100}" for i in range(MAX_FRONT_MATTER_CHARS // 100)], "---", "# Body"]
    meta, body_start, warnings = split_front_matter(lines)
    assert meta == {} and lines[body_start] == "# Body" and "limit" in warnings[0]


def test_front_matter_on_disk(tmp_path: Path) -> None:
    ok = tmp_path / "ok.md"
    ok.write_text("---\ntranscript: /x/y.jsonl\nlines: [1, 9]\n---\nbody\n", encoding="utf-8")
    assert read_front_matter(ok) == {"transcript": "/x/y.jsonl", "lines": [1, 9]}
    bomb = tmp_path / "bomb.md"
    bomb.write_text(f"---\n{alias_bomb()}\n---\nbody\n", encoding="utf-8")
    assert read_front_matter(bomb) == {}


def test_a_bad_memory_yaml_is_a_config_error(tmp_path: Path) -> None:
    from memory_server.errors import ConfigError
    from memory_server.settings import load_settings

    (tmp_path / "memory.yaml").write_text("search: &s {default_k: 5}\nother: *s\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="aliases"):
        load_settings(tmp_path)


# The three readers that used to expand the bomb, run in a child process whose address space is capped, so an
# expanding loader fails (MemoryError or the time limit) instead of taking the machine's memory.
CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[2])
    limit = 2 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from memory_server import Memory
    from memory_server.dream.run import run_dream
    NOW = 1767960000.0  # 2026-01-09 12:00 UTC
    root = sys.argv[1]
    out = {"rss_before_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    m = Memory(root, keyword_only=True)
    m.index()
    with open(root + "/topics/bomb.md", "w", encoding="utf-8") as fh:
        fh.write(sys.argv[3])
    t = time.monotonic(); m.index(); out["index"] = time.monotonic() - t
    t = time.monotonic(); topics = m.list_topics(); out["list_topics"] = time.monotonic() - t
    out["bomb_title"] = [x.title for x in topics if x.path == "topics/bomb.md"]
    out["problems"] = [p.model_dump() for p in m.status().problem_files if p.path == "topics/bomb.md"]
    t = time.monotonic(); result = run_dream(root, clock=lambda: NOW); out["dream"] = time.monotonic() - t
    out["dream_sessions"] = len(result.sessions)
    m.close()
    out["rss_after_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(out))
    """
)


SESSION = """\
---
session_id: a1b2c3d4-0000-4000-8000-000000000000
started: 2026-01-03T09:00:00Z
ended: 2026-01-03T10:30:00Z
cwd: /home/dev/project
---
# Fix the flaky tests

## Errors and fixes

- `ModuleNotFoundError: No module named 'yaml'` when running pytest (line 41) — fixed: ran `.venv/bin/pytest`
"""


def make_root(tmp_path: Path) -> Path:
    """A memory root with one ordinary topic and one compressed session for the dream to read."""
    from memory_server.files.scaffold import init_root

    root = tmp_path / "root"
    init_root(root)
    (root / "topics" / "tooling.md").write_text(
        "---\ntitle: Tooling\nupdated: 2025-11-01\n---\n# Tooling\n\n- Run the tests with pytest.\n", encoding="utf-8"
    )
    session = root / "sessions" / "compressed" / "2026" / "2026-01-03-a1b2c3d4-fix-flaky-tests.md"
    session.parent.mkdir(parents=True)
    session.write_text(SESSION, encoding="utf-8")
    return root


def test_an_alias_bomb_in_a_topic_is_refused_by_the_indexer_list_topics_and_dream(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    bomb = f"---\n{alias_bomb()}\n---\n# Bomb\n\nBOMB_BODY_TOKEN\n"
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(root), str(TESTS), bomb], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the alias bomb was expanded: indexing, list_topics and dream did not finish in 30 s")
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["index"] < 1.0 and out["list_topics"] < 1.0 and out["dream"] < 1.0, out
    assert out["dream_sessions"] >= 1  # the dream read the topics (with the bomb) and the sessions
    assert out["bomb_title"] == ["bomb"]  # indexed without its front matter: the title falls back to the name
    [problem] = out["problems"]
    assert problem["status"] == "degraded" and "aliases" in problem["reason"], problem
    assert out["rss_after_kb"] - out["rss_before_kb"] < 300 * 1024, out  # bounded: no expansion
