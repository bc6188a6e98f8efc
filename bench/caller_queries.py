"""The queries a calling model wrote for each development-set question (bench/queries/, see its README.md).

Each set's file holds one JSON object a line, {"id", "query"}; ids name a question the way the harnesses
index them: LoCoMo "<conversation index>:<question index>" (locomo.Question.index, its place in the
conversation's qa list), BEAM "<chat number>:<question index>" (beam.Question.index), coding-probe the
probe's own ids ("p01", "l01").

`bench/run.py` asks every question twice with `search_memory`: as the data set words it (the protocol peers
publish) and as the caller wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path

QUERIES_DIR = Path(__file__).resolve().parent / "queries"
FILES = {"locomo": "locomo.jsonl", "beam": "beam.jsonl", "coding": "coding-probe.jsonl"}
SOURCES = ("asked", "caller")  # the question as asked; the queries the calling model wrote for it (every writer set)
CALLER_TOOLS = ("search_memory",)  # the description the writers saw is search_memory's


WRITER_FOLDER = "writer-"  # bench/queries/writer-1/, writer-2/, ...: one writer set's files each


def writer_folders(folder: Path = QUERIES_DIR) -> dict[str, Path]:
    """Query source -> folder of one writer set's files: "caller-<n>" for each `writer-<n>/` in `folder`, in
    number order, or "caller" for `folder` itself when it holds the files directly."""
    if any((folder / file).is_file() for file in FILES.values()):
        return {"caller": folder}
    found = [p for p in folder.glob(f"{WRITER_FOLDER}*") if p.is_dir() and p.name[len(WRITER_FOLDER) :].isdigit()]
    found.sort(key=lambda p: int(p.name[len(WRITER_FOLDER) :]))
    return {f"caller-{p.name[len(WRITER_FOLDER) :]}": p for p in found}


def load(name: str, folder: Path = QUERIES_DIR) -> dict[str, str] | None:
    """id -> caller-written query for set `name`, or None when its file is not there."""
    path = folder / FILES[name]
    if not path.is_file():
        return None
    out: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key, query = str(item["id"]), item["query"]
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a {{'id', 'query'}} line ({exc})") from exc
        if not isinstance(query, str) or not query.strip():
            raise SystemExit(f"{path}:{number}: the query of {key} is empty")
        if key in out:
            raise SystemExit(f"{path}:{number}: {key} appears twice")
        out[key] = query
    return out


def load_writers(folders: dict[str, Path], sets: list[str]) -> dict[str, dict[str, dict[str, str] | None]]:
    """Query source -> set -> its queries (None when that writer set has no file for the set)."""
    return {source: {name: load(name, folder) for name in sets} for source, folder in folders.items()}


def query_for(queries: dict[str, str], name: str, key: str, folder: Path = QUERIES_DIR) -> str:
    """The caller's query for question `key`; a question without one stops the run (a partial set would give
    a figure over other questions than the row beside it)."""
    try:
        return queries[key]
    except KeyError:
        raise SystemExit(
            f"no caller-written query for {name} question {key} in {folder / FILES[name]}: complete the file, "
            "or run with --queries asked"
        ) from None
