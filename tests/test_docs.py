"""The README is a front door: short, its links lead somewhere, and its sample topic is a topic."""

from __future__ import annotations

import re

from conftest import REPO

from memory_server.parse.markdown import parse_document

README = REPO / "README.md"
DOCS = (
    "benchmarks",
    "settings",
    "guarantees",
    "dream",
    "sessions",
    "evidence",
    "reference",
    "clients",
    "embeddings",
    "python-api",
)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_a_front_door() -> None:
    size = len(readme().encode("utf-8"))
    assert size <= 16_000, f"the README is {size} bytes; move reference text into docs/"
    for heading in ("## Set-up: two commands", "## Claude Code", "## A topic file", "## Uninstall"):
        assert f"\n{heading}\n" in readme(), heading
    assert "## Saving what the user asks to remember" in readme()
    assert "## What to do with `dreams/`" in readme()


def test_every_reference_document_is_linked_and_every_link_resolves() -> None:
    text = readme()
    for name in DOCS:
        assert f"(docs/{name}.md)" in text, f"the README does not link docs/{name}.md"
    for document in [README, REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]:
        prose = re.sub(r"```.*?```|`[^`]*`", "", document.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
            if "://" in target:
                continue
            assert (document.parent / target).exists(), f"{document.name} links {target}, which does not exist"
    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "topics/architecture.md" in contributing and ".ci/run" in contributing


def test_the_readme_says_how_to_install_claude_before_a_step_needs_it() -> None:
    """The first command that needs Claude Code's `claude` (`plugin install`, `claude mcp add`, starting
    `claude`) comes after the line that says how to install it."""
    text = readme()
    install = text.find("`npm install -g @anthropic-ai/claude-code`")
    assert install > 0, "the README does not say how to install the claude CLI"
    blocks = [(m.start(), m.group(1)) for m in re.finditer(r"^```bash\n(.*?)^```", text, flags=re.M | re.S)]
    needs = re.compile(r"plugin install|(^|&& )claude\b", flags=re.M)
    first = min(start for start, block in blocks if needs.search(block))
    assert install < first, text[first : first + 200]


def test_contributing_lists_exactly_the_steps_ci_runs() -> None:
    """CONTRIBUTING.md's list of checks is .ci/run's command, step by step, in its order: nothing more, nothing
    less, no flag of its own."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    (command,) = [line for line in ci.splitlines() if line.startswith("npm install ")]
    steps = command.split(" && ")
    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", contributing, flags=re.M | re.S)
    assert steps in [block.splitlines() for block in blocks], f"CONTRIBUTING.md does not list .ci/run's steps: {steps}"


def test_the_readme_sample_topic_is_a_clean_topic() -> None:
    text = readme()
    section = text[text.index("\n## A topic file\n") :]
    (sample,) = re.findall(r"^```markdown\n(.*?)^```", section, flags=re.M | re.S)[:1]
    doc = parse_document("topics/printer.md", "topic", sample)
    assert doc.warnings == [], doc.warnings
    assert doc.title == "Printer" and doc.meta["description"] and doc.date == "2026-03-01"
    assert any("E-4242" in chunk.text for chunk in doc.chunks)
