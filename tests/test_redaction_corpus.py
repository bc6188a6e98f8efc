"""Secrets in every place a transcript carries them never reach a summary, an index, the transcript layer or
a dream report; ordinary code comes through redaction (nearly) unchanged.

The corpus (`secret_corpus.py`) holds token formats and command-line / assignment forms, made at run time.
Each is put in a user message, a Bash command, a tool's output (past the 2,000-character search cut), an
assistant reply, a Write and an Edit; the transcripts go through the real compression, the real index and
transcript layer, and a dream run whose recall log holds the secrets as past queries.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from secret_corpus import ORDINARY_LINES, leaked, secret_cases

from memory_server import Memory
from memory_server.dream.recall import RecallLog
from memory_server.dream.run import run_dream
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.redact import redact_secrets
from memory_server.testing import FakeEmbedder

PLACES = ("user message", "bash command", "tool output", "assistant reply", "write content", "edit")
NOW = 1_780_000_000.0
FILLER = "ok line of ordinary build output\n" * 60  # 1,980 characters: the secret straddles the 2,000 cut


def _rec(kind: str, sid: str, n: int, content: Any, **extra: Any) -> dict[str, Any]:
    rec = {
        "type": kind,
        "sessionId": sid,
        "uuid": str(uuid.UUID(int=n)),
        "timestamp": f"2026-03-0{1 + n % 5}T10:{n % 60:02d}:00Z",
        "cwd": "/home/dev/app",
        "gitBranch": "main",
        "version": "2.0.14",
        "message": {"role": kind, "content": content},
        **extra,
    }
    if kind == "assistant":
        rec["message"]["id"] = f"msg_{n}"
    return rec


def _transcript(place: str, cases: list[tuple[str, str, str]], sid: str) -> list[dict[str, Any]]:
    recs = [_rec("user", sid, 0, "Set up the deployment configuration for the app")]
    n = 1
    for i, (_label, text, _secret) in enumerate(cases):
        tid = f"toolu_{i:04d}"
        failed = i % 3 == 0
        if place == "user message":
            recs.append(_rec("user", sid, n, f"Please use this for the deploy: {text}"))
        elif place == "assistant reply":
            recs.append(_rec("assistant", sid, n, [{"type": "text", "text": f"I decided to use {text} from now on."}]))
        else:
            use: dict[str, Any]
            if place == "bash command":
                use = {"name": "Bash", "input": {"command": text, "description": "configure"}}
                output = "error: exit code 1" if failed else "done"
            elif place == "tool output":
                use = {"name": "Bash", "input": {"command": "cat .env", "description": "show env"}}
                output = FILLER + f"error: bad value {text}\nDONE" if failed else FILLER + f"{text}\nDONE"
            elif place == "write content":
                use = {"name": "Write", "input": {"file_path": "/home/dev/app/.env", "content": f"# deploy\n{text}\n"}}
                output = "File created successfully at: /home/dev/app/.env"
            else:
                use = {
                    "name": "Edit",
                    "input": {
                        "file_path": "/home/dev/app/settings.py",
                        "old_string": "X = 1",
                        "new_string": text,
                        "replace_all": False,
                    },
                }
                output = "The file /home/dev/app/settings.py has been updated."
            recs.append(_rec("assistant", sid, n, [{"type": "tool_use", "id": tid, **use}]))
            n += 1
            data: dict[str, Any] = {"stdout": output, "stderr": "", "interrupted": False}
            if place in ("write content", "edit"):
                data = {
                    "type": "update",
                    "filePath": use["input"]["file_path"],
                    "content": text,
                    "newString": text,
                    "originalFile": "X = 1\n" + text,
                }
            recs.append(
                _rec(
                    "user",
                    sid,
                    n,
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": tid,
                            "content": output,
                            "is_error": failed and place in ("bash command", "tool output"),
                        }
                    ],
                    toolUseResult=data,
                )
            )
        n += 1
    recs.append(_rec("assistant", sid, n, [{"type": "text", "text": "All set."}]))
    return recs


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Compress, index and dream over one transcript per place; every output's text, by place."""
    base = tmp_path_factory.mktemp("corpus")
    cases = secret_cases()
    config = base / "claude"
    folder = config / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    root = base / "root"
    init_root(root)
    mp = pytest.MonkeyPatch()
    mp.setenv("CLAUDE_CONFIG_DIR", str(config))
    sids = {}
    for p, place in enumerate(PLACES):
        sid = str(uuid.UUID(int=(p + 1) * 0x1111))
        sids[place] = sid
        path = folder / f"{sid}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _transcript(place, cases, sid)), encoding="utf-8")
        assert compress_transcript(path, MemoryRoot(root)), place
    memory = Memory(root, embedder=FakeEmbedder())  # a real embedded Chroma beside FTS5
    try:
        memory.index()
        state_files = [p for p in sorted((root / ".memory").rglob("*")) if p.is_file()]
        state = "\n".join(p.read_bytes().decode("utf-8", "replace") for p in state_files)
        summaries = {}
        layer: dict[str, str] = {}
        for place, sid in sids.items():
            summaries[place] = "\n".join(
                p.read_text(encoding="utf-8") for p in (root / "sessions").rglob("*.md") if sid[:8] in p.name
            )
            virtual = "transcript:" + sid
            assert memory.fts.file(virtual) is not None, "the transcript layer must index the transcript"
            texts = []
            for start in range(1, 2 * len(cases) + 4, 2):
                texts.append(memory.read(virtual, start, start + 1).text)
            layer[place] = "\n".join(texts)
        log = RecallLog(root / ".memory")
        for i, (_label, text, _secret) in enumerate(cases):
            for ask in range(3):
                log.record("search_exact", f"where is {text}", [], when=NOW - 3600 * (i + ask + 1))
        log.close()
        result = run_dream(root, clock=lambda: NOW)
        assert result.id is not None, result.message
        dream_dir = root / "dreams" / result.id
        report = "\n".join(p.read_text(encoding="utf-8") for p in sorted(dream_dir.iterdir()) if p.is_file())
        recall_state = (root / ".memory" / "recall.sqlite3").read_bytes().decode("utf-8", "replace")
        # Searching for the bare secrets (after the dream: these probes are not secret-shaped, and the log
        # keeps what was searched) must find nothing that shows them.
        searched = []
        for _label, _text, secret in cases:
            hits = memory.search_exact(secret, k=20, layers=["topic", "session", "transcript"])
            searched.append("\n".join(h.text for h in hits))
    finally:
        memory.close()
        mp.undo()
    return {
        "cases": cases,
        "summaries": summaries,
        "state": state,
        "state_files": " ".join(str(p.relative_to(root)) for p in state_files),
        "layer": layer,
        "searched": "\n".join(searched),
        "report": report + recall_state,
    }


def _leaks(cases: list[tuple[str, str, str]], text: str) -> list[str]:
    return [label for label, _text, secret in cases if leaked(secret, text)]


def test_the_corpus_is_large_enough(pipeline: dict[str, Any]) -> None:
    assert len(pipeline["cases"]) >= 150


@pytest.mark.parametrize("place", PLACES)
def test_no_secret_reaches_a_summary(pipeline: dict[str, Any], place: str) -> None:
    text = pipeline["summaries"][place]
    assert text.strip()
    assert _leaks(pipeline["cases"], text) == []


def test_no_secret_reaches_the_indices(pipeline: dict[str, Any]) -> None:
    assert "chroma" in pipeline["state_files"] and "[REDACTED]" in pipeline["state"]
    assert _leaks(pipeline["cases"], pipeline["state"]) == []


@pytest.mark.parametrize("place", PLACES)
def test_no_secret_reaches_the_transcript_layer(pipeline: dict[str, Any], place: str) -> None:
    text = pipeline["layer"][place]
    assert "[REDACTED]" in text
    assert _leaks(pipeline["cases"], text) == []


def test_no_secret_comes_back_from_a_search(pipeline: dict[str, Any]) -> None:
    assert _leaks(pipeline["cases"], pipeline["searched"]) == []


def test_no_secret_reaches_a_dream_report_or_the_recall_log(pipeline: dict[str, Any]) -> None:
    report = pipeline["report"]
    assert "## Knowledge gaps" in report and "[REDACTED]" in report
    assert _leaks(pipeline["cases"], report) == []


def test_ordinary_code_is_left_alone() -> None:
    lines = ORDINARY_LINES.splitlines()
    assert len(lines) >= 70
    changed = [line for line in lines if redact_secrets(line) != line]
    assert len(changed) <= 2, changed


CONTEXTS = {
    "bare": "{t}",
    "double quotes": 'value "{t}" here',
    "single quotes": "value '{t}' here",
    "code span": "run `{t}` now",
    "parentheses": "(see {t})",
    "end of sentence": "it is {t}.",
    "before a comma": "{t}, then more",
    "own line": "line one\n{t}\nline three",
    "list item": "- {t}",
    "after a colon": "key: {t}",
    "tabs": "\t{t}\t",
    "inside a JSON string": '{{"output": {j}}}',
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_secret_is_caught_whatever_surrounds_it(context: str) -> None:
    """A second draw of the corpus (other random parts), each secret in text around it: quotes, code spans,
    punctuation, and JSON escaping (tool output that shows JSON inside a JSON string)."""
    missed = []
    for label, text, secret in secret_cases(seed=99):
        wrapped = CONTEXTS[context].format(t=text, j=json.dumps(text))
        if leaked(secret, redact_secrets(wrapped)):
            missed.append(label)
    assert missed == []
