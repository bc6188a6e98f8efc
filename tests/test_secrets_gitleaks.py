"""Secrets by shape and context, measured on a corpus built from gitleaks' rule set (tests/gitleaks_corpus.py),
and what must never change: hashes, UUIDs, commit ids, digests and ordinary code.

A fast, representative part of `bench/redaction_corpus.py` (which runs every sample through the pipeline in
every place and encoding and prints the rates the README quotes): here every sample of one draw is redacted
in each encoding, a third of another draw goes through compression, the keyword index and the transcript
layer in every place, and the forms people paste secrets in are checked one by one.
"""

from __future__ import annotations

import json
import sysconfig
import uuid
from pathlib import Path

import pytest
from gitleaks_corpus import ENCODINGS, PLACES, RULES, decoded_forms, encode, exposed, hash_like_lines, samples

from memory_server import Memory
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.redact import redact_secrets

REPO = Path(__file__).resolve().parents[1]
MAX_LEAK_RATE = 0.01
MAX_CODE_CHANGED = 0.02


def test_the_corpus_covers_gitleaks_rule_set() -> None:
    items = samples()
    assert len(RULES) >= 210 and len({s.rule for s in items if not s.rule.startswith("context:")}) == len(RULES)
    assert all(s.secret and s.secret in s.text or s.rule.endswith("jwt-base64") for s in items)


def test_every_sample_in_every_encoding_leaks_at_most_one_percent() -> None:
    items = samples()
    leaked = [
        (s.rule, enc) for s in items for enc in ENCODINGS if exposed(s.secret, redact_secrets(encode(s.text, enc)))
    ]
    assert len(leaked) <= MAX_LEAK_RATE * len(items) * len(ENCODINGS), leaked


CONTEXT = [s for s in samples(seed=4242) if s.rule.startswith("context:")]


@pytest.mark.parametrize("sample", CONTEXT, ids=[s.rule[8:] for s in CONTEXT])
def test_secrets_in_the_forms_people_paste_them(sample) -> None:
    """PEM keys on one line, `Authorization: Basic`, `auth=(user, pass)`, `.netrc`, NuGet, kubeconfig key data,
    "the password is: X", `az login -p`, `htpasswd -nb`, `sudo -S`, tokens glued by JSON or URL escapes."""
    for enc in ENCODINGS:
        out = redact_secrets(encode(sample.text, enc))
        assert not exposed(sample.secret, out), (enc, out)


def _record(kind: str, sid: str, n: int, content: object, **extra: object) -> dict[str, object]:
    message: dict[str, object] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{n}"
    return {
        "type": kind,
        "sessionId": sid,
        "uuid": str(uuid.UUID(int=n + 1)),
        "timestamp": f"2026-03-01T10:{n % 60:02d}:00Z",
        "message": message,
        **extra,
    }


def _transcript(place: str, texts: list[str], sid: str) -> list[dict[str, object]]:
    recs = [_record("user", sid, 0, "Configure the deployment")]
    for i, text in enumerate(texts, start=1):
        n = 2 * i
        if place == "user message":
            recs.append(_record("user", sid, n, f"use this:\n{text}"))
        elif place == "assistant text":
            recs.append(_record("assistant", sid, n, [{"type": "text", "text": f"Set:\n{text}"}]))
        else:
            use = {
                "command": {"name": "Bash", "input": {"command": text}},
                "tool output": {"name": "Bash", "input": {"command": "cat .env"}},
                "file written": {"name": "Write", "input": {"file_path": f"/app/{i}.env", "content": text}},
                "edit": {"name": "Edit", "input": {"file_path": "/app/s.py", "old_string": "x", "new_string": text}},
            }[place]
            output = text if place == "tool output" else "ok"
            recs.append(_record("assistant", sid, n, [{"type": "tool_use", "id": f"t{i}", **use}]))
            recs.append(
                _record("user", sid, n + 1, [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}])
            )
    return recs


def test_secrets_reach_no_summary_index_or_transcript_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "claude"
    folder = config / "projects" / "-app"
    folder.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    root = tmp_path / "root"
    init_root(root)
    placed = {}
    for k, place in enumerate(PLACES):
        enc = ENCODINGS[k % len(ENCODINGS)]
        items = samples(seed=777 + k)[k % 3 :: 3]  # a third of a draw of its own: secrets unique to a place
        sid = f"{k + 1:08x}-0000-4000-8000-{k + 1:012x}"
        path = folder / f"{sid}.jsonl"
        texts = [encode(s.text, enc) for s in items]
        path.write_text("".join(json.dumps(r) + "\n" for r in _transcript(place, texts, sid)), encoding="utf-8")
        assert compress_transcript(path, MemoryRoot(root)), place
        placed[sid] = (place, items)
    memory = Memory(root, keyword_only=True)
    try:
        memory.index()
        state = decoded_forms(
            "\n".join(p.read_bytes().decode("utf-8", "replace") for p in (root / ".memory").rglob("*") if p.is_file())
        )
        leaked = []
        for sid, (place, items) in placed.items():
            summary = "\n".join(p.read_text(encoding="utf-8") for p in (root / "sessions").rglob(f"*{sid[:8]}*.md"))
            layer = memory.read("transcript:" + sid, 1, 10_000).text
            assert layer.strip()
            forms = decoded_forms(summary + "\n" + layer) + state
            leaked += [(place, s.rule) for s in items if exposed(s.secret, forms)]
    finally:
        memory.close()
    total = sum(len(items) for _place, items in placed.values())
    assert len(leaked) <= MAX_LEAK_RATE * total, leaked


def test_hashes_uuids_commit_ids_and_digests_are_never_redacted() -> None:
    changed = [line for line in hash_like_lines() if redact_secrets(line) != line]
    assert changed == []


def test_ordinary_code_is_left_alone() -> None:
    """This repository's code (but for the modules that spell out secret syntaxes) and two installed
    packages' sources: at most 2 % of their lines change (the benchmark adds seven more packages)."""
    site = Path(sysconfig.get_paths()["purelib"])
    files = [
        p for p in sorted((REPO / "memory_server").rglob("*.py")) if "secret_" not in p.name and p.name != "redact.py"
    ]
    files += sorted((site / "click").rglob("*.py")) + sorted((site / "jwt").rglob("*.py"))
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    changed = [line for line in lines if redact_secrets(line) != line]
    assert len(lines) > 20_000
    assert len(changed) <= MAX_CODE_CHANGED * len(lines), changed[:20]
