"""Leak and false-positive rates of redaction, through the real pipeline.

Secrets: `tests/gitleaks_corpus.py`, a generator per rule of gitleaks' default rule set plus the forms people
paste secrets in. Every sample is put in each of the six places a Claude Code transcript holds text (user
message, Bash command, tool output, assistant text, a file written, an edit) and in each of three encodings
(plain, inside a JSON string with a line break and a tab glued to it, URL-encoded in a query string): one
transcript per place and encoding, each with its own draw of the corpus (so every secret is unique to one
placement). The transcripts are compressed and indexed (keyword index and the transcript layer) by the
real code; a placement leaks when its secret, or any 12-character piece of it, shows plain, URL-decoded or
JSON-unescaped in its session file, in the transcript layer (`read_memory` on `transcript:<id>`), or in the
text the keyword index holds for either (what FTS5 tokenises and search answers quote).

False positives, with `redact_secrets` on each line alone:
- hash-like: commit ids, UUIDs, hashes and digests in the contexts they show up in (goal: none changed);
- ordinary code: every non-blank line of a named set of real source files (this repository's
  memory_server/ but its redaction modules, and installed packages: click, httpx, requests, jwt, yaml,
  markdown_it, filelock, anyio, pydantic): the share of lines changed (goal: at most 2 %).

    python bench/redaction_corpus.py                # full run, about 3 minutes
    python bench/redaction_corpus.py --direct       # redact_secrets on each placed text only (seconds)
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))

from benchlib import default_json_out, environment, format_table, log, write_json  # noqa: E402
from gitleaks_corpus import (  # noqa: E402
    ENCODINGS,
    PLACES,
    Sample,
    decoded_forms,
    encode,
    exposed,
    hash_like_lines,
    samples,
)

from memory_server.sessions.redact import redact_secrets  # noqa: E402

SEED = 20261125
FILLER = "ok line of ordinary build output\n" * 60  # 1,980 characters: a secret straddles the 2,000 cut
CODE_PACKAGES = ("click", "httpx", "requests", "jwt", "yaml", "markdown_it", "filelock", "anyio", "pydantic")
# Modules whose job is to describe secrets (their docstrings and tables spell out secret syntaxes).
NOT_ORDINARY = ("sessions/secret_", "sessions/redact.py")


# -- transcripts ----------------------------------------------------------------------------------------


def _rec(kind: str, sid: str, n: int, content: Any, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "type": kind,
        "sessionId": sid,
        "uuid": str(uuid.UUID(int=n + 1)),
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


def _tool(place: str, text: str, i: int) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(tool use, its output, toolUseResult) for a tool place."""
    if place == "command":
        return {"name": "Bash", "input": {"command": text, "description": "configure"}}, "done", {}
    if place == "tool output":
        return (
            {"name": "Bash", "input": {"command": "cat .env", "description": "show env"}},
            FILLER + text + "\nDONE",
            {"stdout": FILLER + text, "stderr": "", "interrupted": False},
        )
    if place == "file written":
        path = f"/home/dev/app/config/{i}.env"
        return {"name": "Write", "input": {"file_path": path, "content": f"# deploy\n{text}\n"}}, "created", {}
    return (
        {
            "name": "Edit",
            "input": {"file_path": "/home/dev/app/settings.py", "old_string": "X = 1", "new_string": text},
        },
        "updated",
        {"filePath": "/home/dev/app/settings.py", "newString": text, "originalFile": "X = 1\n"},
    )


def transcript(place: str, texts: list[str], sid: str) -> list[dict[str, Any]]:
    recs = [_rec("user", sid, 0, "Set up the deployment configuration for the app")]
    n = 1
    for i, text in enumerate(texts):
        if place == "user message":
            recs.append(_rec("user", sid, n, f"Please use this for the deploy:\n{text}"))
        elif place == "assistant text":
            recs.append(_rec("assistant", sid, n, [{"type": "text", "text": f"I will use this:\n{text}"}]))
        else:
            use, output, data = _tool(place, text, i)
            tid = f"toolu_{i:04d}"
            recs.append(_rec("assistant", sid, n, [{"type": "tool_use", "id": tid, **use}]))
            n += 1
            result = [{"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": i % 5 == 0}]
            recs.append(_rec("user", sid, n, result, toolUseResult=data))
        n += 1
    recs.append(_rec("assistant", sid, n, [{"type": "text", "text": "All set."}]))
    return recs


def draws() -> dict[tuple[str, str], list[Sample]]:
    """Each placement's own draw of the corpus: no secret is in two transcripts."""
    out = {}
    for k, (place, enc) in enumerate((p, e) for p in PLACES for e in ENCODINGS):
        out[(place, enc)] = samples(SEED + 101 * k)
    return out


def pipeline_leaks(base: Path) -> dict[str, Any]:
    """Compress and index one transcript per placement; the leaks found in every output."""
    import os

    from memory_server import Memory
    from memory_server.files.root import MemoryRoot
    from memory_server.files.scaffold import init_root
    from memory_server.sessions.compress import compress_transcript

    config = base / "claude"
    folder = config / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    os.environ["CLAUDE_CONFIG_DIR"] = str(config)
    root = base / "root"
    init_root(root)
    placed = draws()
    sids = {}
    for k, ((place, enc), items) in enumerate(placed.items()):
        sid = f"{k + 1:08x}-0000-4000-8000-{k + 1:012x}"  # distinct first 8 characters: distinct file names
        sids[(place, enc)] = sid
        path = folder / f"{sid}.jsonl"
        recs = transcript(place, [encode(s.text, enc) for s in items], sid)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
        log(f"compressing {place} / {enc}")
        compress_transcript(path, MemoryRoot(root))
    memory = Memory(root, keyword_only=True)
    try:
        log("indexing")
        memory.index()
        leaks: Counter[tuple[str, str]] = Counter()
        leaked_rules: Counter[str] = Counter()
        for (place, enc), items in placed.items():
            sid = sids[(place, enc)]
            files = sorted((root / "sessions").rglob(f"*{sid[:8]}*.md"))
            indexed = [c.text for f in files for c in memory.fts.chunks_of(MemoryRoot(root).relpath(f))]
            indexed += [c.text for c in memory.fts.chunks_of("transcript:" + sid)]
            shown = decoded_forms(
                "\n".join(p.read_text(encoding="utf-8") for p in files)
                + "\n"
                + memory.read("transcript:" + sid, 1, 100_000).text
                + "\n"
                + "\n".join(indexed)
            )
            for s in items:
                if exposed(s.secret, shown):
                    leaks[(place, enc)] += 1
                    leaked_rules[s.rule] += 1
    finally:
        memory.close()
    total = sum(len(v) for v in placed.values())
    return _rates(leaks, leaked_rules, total, {k: len(v) for k, v in placed.items()})


def direct_leaks() -> dict[str, Any]:
    """`redact_secrets` on each placed text (what every path in the pipeline applies), without the pipeline."""
    placed = draws()
    leaks: Counter[tuple[str, str]] = Counter()
    leaked_rules: Counter[str] = Counter()
    for (place, enc), items in placed.items():
        for s in items:
            if exposed(s.secret, redact_secrets(encode(s.text, enc))):
                leaks[(place, enc)] += 1
                leaked_rules[s.rule] += 1
    total = sum(len(v) for v in placed.values())
    return _rates(leaks, leaked_rules, total, {k: len(v) for k, v in placed.items()})


def _rates(
    leaks: Counter[tuple[str, str]], rules: Counter[str], total: int, sizes: dict[tuple[str, str], int]
) -> dict[str, Any]:
    return {
        "placements": total,
        "leaked": sum(leaks.values()),
        "leak_rate": sum(leaks.values()) / max(1, total),
        "by_place": {p: sum(leaks[(p, e)] for e in ENCODINGS) for p in PLACES},
        "by_encoding": {e: sum(leaks[(p, e)] for p in PLACES) for e in ENCODINGS},
        "per_placement": {f"{p} / {e}": sizes[(p, e)] for p, e in sizes},
        "leaked_rules": dict(rules.most_common()),
    }


# -- false positives ------------------------------------------------------------------------------------


def code_files() -> dict[str, list[Path]]:
    site = Path(sysconfig.get_paths()["purelib"])
    repo = BENCH.parent / "memory_server"
    sets = {"memory_server": [p for p in sorted(repo.rglob("*.py")) if not str(p).endswith(NOT_ORDINARY)]}
    sets["memory_server"] = [p for p in sets["memory_server"] if not any(x in str(p) for x in NOT_ORDINARY)]
    for pkg in CODE_PACKAGES:
        sets[pkg] = sorted((site / pkg).rglob("*.py"))
    return sets


def false_positives() -> dict[str, Any]:
    hashes = hash_like_lines()
    changed_hashes = [line for line in hashes if redact_secrets(line) != line]
    per_set = {}
    lines_total = changed_total = 0
    examples: list[str] = []
    for name, files in code_files().items():
        lines = [
            line for f in files for line in f.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
        changed = [line for line in lines if redact_secrets(line) != line]
        per_set[name] = {"files": len(files), "lines": len(lines), "changed": len(changed)}
        lines_total += len(lines)
        changed_total += len(changed)
        examples += [line.strip()[:160] for line in changed[:3]]
    return {
        "hash_like_lines": len(hashes),
        "hash_like_changed": len(changed_hashes),
        "hash_like_examples": changed_hashes[:10],
        "code_sets": per_set,
        "code_lines": lines_total,
        "code_changed": changed_total,
        "code_rate": changed_total / max(1, lines_total),
        "code_examples": examples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--direct", action="store_true", help="redact_secrets on the placed texts, no pipeline")
    parser.add_argument("--json", type=Path, default=default_json_out("redaction_corpus"))
    args = parser.parse_args(argv)
    items = samples(SEED)
    rules = {s.rule for s in items if not s.rule.startswith("context:")}
    places = f"{len(PLACES)} places x {len(ENCODINGS)} encodings"
    log(f"{len(items)} samples per draw ({len(rules)} gitleaks rules), {places}")
    if args.direct:
        leaks = direct_leaks()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            leaks = pipeline_leaks(Path(tmp))
    fp = false_positives()
    rows = [(p, leaks["by_place"][p]) for p in PLACES] + [
        (f"encoding: {e}", leaks["by_encoding"][e]) for e in ENCODINGS
    ]
    print(format_table(("where", "leaked"), rows, "Leaks by place and encoding"))
    print()
    mode = "redact_secrets only" if args.direct else "compress + index + transcript layer"
    print(
        f"leak rate ({mode}): {leaks['leaked']} of {leaks['placements']} placements = "
        f"{100 * leaks['leak_rate']:.2f} % (goal <= 1 %)"
    )
    if leaks["leaked_rules"]:
        print("leaked rules: " + ", ".join(f"{r} ({n})" for r, n in leaks["leaked_rules"].items()))
    print(
        f"false positives on commit ids, UUIDs, hashes, digests: {fp['hash_like_changed']} of "
        f"{fp['hash_like_lines']} lines (goal: 0)"
    )
    code_rows = [
        (n, v["files"], v["lines"], v["changed"], f"{100 * v['changed'] / max(1, v['lines']):.2f}")
        for n, v in fp["code_sets"].items()
    ]
    print(format_table(("ordinary code", "files", "lines", "changed", "%"), code_rows))
    print(
        f"false positives on ordinary code: {fp['code_changed']} of {fp['code_lines']} lines = "
        f"{100 * fp['code_rate']:.2f} % (goal <= 2 %)"
    )
    write_json(
        args.json,
        {
            "environment": environment(),
            "mode": mode,
            "samples_per_draw": len(items),
            "gitleaks_rules": len(rules),
            "leaks": leaks,
            "false_positives": fp,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
