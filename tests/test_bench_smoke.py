"""Smoke runs of the benchmark harnesses in bench/: each command runs end to end in seconds and writes JSON
with the expected shape and sane values. They check the harnesses, not the numbers (FakeEmbedder where the
real model is not the point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import SHARED, require_shared

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
LOCOMO_METRICS = [f"turn_recall@{k}" for k in (1, 3, 5, 10)] + [f"session_recall@{k}" for k in (1, 3, 5)]


def _data_dir(env: dict[str, str]) -> Path:
    """The data folder a benchmark process started with `env` reads."""
    code = "import benchlib; print(benchlib.data_dir())"
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCH, env=env, capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def _locomo_data() -> Path:
    return _data_dir(dict(os.environ)) / "locomo10.json"


def test_the_benchmarks_read_the_data_the_tests_are_pointed_at(tmp_path: Path) -> None:
    """MEMORY_SERVER_SHARED moves the tests' data (tests/conftest.py); the benchmark processes the smoke tests
    start read the same folder (they ignored it, and read ../shared whatever it said)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_BENCH_DATA"}
    assert _data_dir({**env, "MEMORY_SERVER_SHARED": str(tmp_path / "data")}) == tmp_path / "data" / "bench"
    assert _data_dir({**env, "MEMORY_SERVER_SHARED": str(tmp_path / "data"), "MEMORY_BENCH_DATA": "/x"}) == Path("/x")


def _run(script: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _load(path: Path) -> dict[str, Any]:
    assert path.is_file(), f"no JSON written at {path}"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _check_latency(lat: dict[str, Any]) -> None:
    assert lat["n"] > 0
    assert lat["mean_ms"] > 0 and lat["p50_ms"] > 0 and lat["p95_ms"] >= lat["p50_ms"]


def test_locomo_smoke(tmp_path: Path) -> None:
    data = _locomo_data()
    require_shared(data)
    out = tmp_path / "locomo.json"
    proc = _run(
        "locomo.py",
        "--conversations",
        "0",
        "--max-questions",
        "12",
        "--fake",
        "--roots",
        str(tmp_path / "roots"),
        "--json-out",
        str(out),
        "--sweep",
        "--grid",
        "ranking.rrf_k=30,60",
    )
    assert "turn" in proc.stdout.lower() and "FAKE" in proc.stdout
    result = _load(out)
    assert result["benchmark"] == "locomo"
    assert result["config"]["fake_embedder"] is True
    assert result["splits"]["tune"] == [0] and result["splits"]["held_out"] == []
    corpus = result["corpus"][0]
    assert corpus["sample_id"] == "conv-26" and corpus["turns"] == 419 and corpus["chunks"] >= corpus["turns"]
    assert set(result["results"]) == {"exact", "semantic", "default"}
    for mode, res in result["results"].items():
        overall = res["splits"]["all"]["overall"]
        assert overall["n"] == 12, mode
        for metric in LOCOMO_METRICS:
            assert 0.0 <= overall[metric] <= 1.0, (mode, metric)
        assert overall["turn_recall@1"] <= overall["turn_recall@10"]
        assert overall["session_recall@1"] <= overall["session_recall@5"]
        assert set(res["splits"]["tune"]["by_category"]) <= {"1", "2", "3", "4", "5"}
        _check_latency(res["latency"])
    # exact search finds something for these questions even with a fake embedder
    assert result["results"]["exact"]["splits"]["all"]["overall"]["turn_recall@10"] > 0
    sweep = result["sweep"]
    assert sweep["split"] == "tune" and len(sweep["rows"]) == 2
    assert {r["overrides"]["ranking.rrf_k"] for r in sweep["rows"]} == {30, 60}


def _caller_queries(folder: Path, ids: dict[str, list[str]], word: str = "callerword") -> dict[str, str]:
    """Caller-written query files for the smoke run: each query is its id with a marker word."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    for name, keys in ids.items():
        lines = []
        for key in keys:
            written[f"{name}/{key}"] = f"{word} {key}"
            lines.append(json.dumps({"id": key, "query": written[f"{name}/{key}"]}))
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def test_run_all_sets_smoke(tmp_path: Path) -> None:
    """bench/run.py: the three development sets in one command, one row per set, tool, query source and
    unit; search_memory asked with the questions as the sets word them and with each writer set's queries,
    which reach the search unedited and are scored against the same gold, then a row of the writer sets'
    mean."""
    data = _locomo_data().parent
    for needed in ("locomo10.json", "beam_100K", "coding-probe"):
        require_shared(data / needed)
    out = tmp_path / "run.json"
    ids = {
        "locomo.jsonl": [f"0:{i}" for i in range(4)],
        "beam.jsonl": [f"1:{i}" for i in range(4)],
        "coding-probe.jsonl": [f"p0{i}" for i in range(1, 5)],
    }
    written = {
        "caller-1": _caller_queries(tmp_path / "queries" / "writer-1", ids),
        "caller-2": _caller_queries(tmp_path / "queries" / "writer-2", ids, "otherword"),
    }
    common = ["--fake", "--locomo", "0", "--beam", "1", "--max-questions", "4", "--roots", str(tmp_path / "roots")]
    proc = _run(
        "run.py",
        *common,
        "--queries-dir",
        str(tmp_path / "queries"),
        "--details",
        str(tmp_path / "details"),
        "--json-out",
        str(out),
    )
    assert "FAKE" in proc.stdout and "caller" in proc.stdout
    result = _load(out)
    rows = {(r["set"], r["tool"], r["queries"], r["kind"]): r for r in result["results"]}
    for tool in ("search_memory", "search_exact"):
        assert ("locomo", tool, "asked", "turn, all") in rows and ("beam", tool, "asked", "message, all") in rows
        assert ("coding", tool, "asked", "paragraph, paraphrase") in rows
    writers = ("caller-1", "caller-2", "caller, mean of 2")
    for name, unit in (("locomo", "turn, all"), ("beam", "message, all"), ("coding", "paragraph, paraphrase")):
        sources = [q for s, t, q, k in rows if s == name and k == unit and t == "search_memory"]
        assert sources == ["asked", *writers], (name, sources)
        mean = rows[name, "search_memory", writers[2], unit]
        for k in (1, 3, 5, 10):
            pair = [rows[name, "search_memory", source, unit][f"R@{k}"] for source in writers[:2]]
            assert mean[f"R@{k}"] == round((pair[0] + pair[1]) / 2, 6), (name, k)
        assert not [key for key in rows if key[1] == "search_exact" and key[2] != "asked"], "caller: search_memory"
    for row in rows.values():
        assert row["n"] > 0 and 0.0 <= row["R@1"] <= row["R@10"] <= 1.0, row
        assert 0 < row["p50_ms"] <= row["p95_ms"], row
    for name, file in (("locomo", "locomo.jsonl"), ("beam", "beam.jsonl"), ("coding", "coding-probe.jsonl")):
        asked = _load(tmp_path / "details" / f"{name}.json")["questions"]
        for source in writers[:2]:
            caller = [q for q in asked if q["queries"] == source]
            assert len(caller) == 4, caller
            assert all(q["query"] == written[source][f"{file}/{q['id']}"] for q in caller), caller
        assert all("word" not in q["query"] for q in asked if q["queries"] == "asked")

    # A question without a caller-written query stops the run, saying which (a partial row would mislead).
    _caller_queries(tmp_path / "queries", ids)  # a folder with the files themselves: one writer set, "caller"
    (tmp_path / "queries" / "beam.jsonl").write_text('{"id": "1:0", "query": "x"}\n', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), *common, "--sets", "beam", "--queries-dir", str(tmp_path / "queries")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode != 0 and "no caller-written query for beam question 1:1" in proc.stderr, proc.stderr


def test_variants_smoke(tmp_path: Path) -> None:
    """bench/variants.py: every variant asked on the same open roots, per set, subset and query source; a
    variant whose settings are the reference's answers every question as the reference does (same process, same
    Chroma answers), and each line counts the questions that moved against the first variant."""
    data = _locomo_data().parent
    for needed in ("locomo10.json", "beam_100K", "coding-probe"):
        require_shared(data / needed)
    out = tmp_path / "variants.json"
    _caller_queries(
        tmp_path / "queries",
        {
            "locomo.jsonl": [f"0:{i}" for i in range(3)],
            "beam.jsonl": [f"1:{i}" for i in range(3)],
            "coding-probe.jsonl": [f"p0{i}" for i in range(1, 4)],
        },
    )
    proc = _run(
        "variants.py",
        *("--fake", "--locomo", "0", "--beam", "1", "--max-questions", "3", "--roots", str(tmp_path / "roots")),
        *("--queries-dir", str(tmp_path / "queries"), "--json-out", str(out)),
        *("--also-queries", f"again={tmp_path / 'queries'}"),
        *(
            "--variant",
            "base",
            "--variant",
            "same:ranking.file_weight=0.7",
            "--variant",
            "nofile:ranking.file_weight=0",
        ),
    )
    assert "FAKE" in proc.stdout
    result = _load(out)
    lines = {(r["set"], r["subset"], r["queries"], r["variant"]): r for r in result["results"]}
    for name, subset in (("locomo", "all"), ("beam", "all"), ("coding", "paraphrase")):
        for source in ("asked", "caller"):
            assert {v for s, u, q, v in lines if (s, u, q) == (name, subset, source)} == {"base", "same", "nofile"}
            base, same = lines[name, subset, source, "base"], lines[name, subset, source, "same"]
            assert base["up@5"] == base["down@5"] == 0 and base["n"] == 3
            assert same["up@5"] == same["down@5"] == 0
            assert [same[f"R@{k}"] for k in (1, 3, 5, 10)] == [base[f"R@{k}"] for k in (1, 3, 5, 10)]
            key = f"{name}|{subset}|{source}"
            assert result["questions"][f"{key}|same"] == result["questions"][f"{key}|base"]
    assert result["config"]["variants"]["nofile"] == {"ranking.file_weight": 0}
    # --also-queries: another folder of caller-written queries, asked in the same process as source caller-NAME
    # (here the same files: the same answers)
    for name, subset in (("locomo", "all"), ("beam", "all"), ("coding", "paraphrase")):
        key = f"{name}|{subset}"
        assert result["questions"][f"{key}|caller-again|base"] == result["questions"][f"{key}|caller|base"]


def test_the_committed_caller_queries_cover_every_question() -> None:
    """bench/queries/ holds three writer sets for the published description and three for the first one
    (first-description/), each with one caller-written query for each question of each development set, by the
    ids the harnesses give them, and nothing else."""
    data = _locomo_data().parent
    for needed in ("locomo10.json", "beam_100K", "coding-probe"):
        require_shared(data / needed)
    sys.path.insert(0, str(BENCH))
    try:
        import beam
        import caller_queries
        import locomo
    finally:
        sys.path.remove(str(BENCH))
    conversations = locomo.load_conversations(data / locomo.DATA_FILE, None, None)
    chats = beam.load_chats(data)
    probe = json.loads((data / "coding-probe" / "queries.json").read_text(encoding="utf-8"))
    wanted = {
        "locomo": {f"{c.index}:{q.index}" for c in conversations for q in c.questions},
        "beam": {f"{c.number}:{q.index}" for c in chats for q in c.questions},
        "coding": {q["id"] for q in probe},
    }
    assert [len(ids) for ids in wanted.values()] == [1982, 354, 60]
    for folder in (caller_queries.QUERIES_DIR, caller_queries.QUERIES_DIR / "first-description"):
        writers = caller_queries.writer_folders(folder)
        assert list(writers) == ["caller-1", "caller-2", "caller-3"], folder
        for source, files in writers.items():
            for name, ids in wanted.items():
                found = caller_queries.load(name, files)
                assert found is not None and set(found) == ids, (source, name)


def test_locomo_evidence_normalisation() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import locomo
    finally:
        sys.path.remove(str(BENCH))
    assert locomo.normalise_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert locomo.normalise_evidence(["D:11:26", "D30:05", "D"]) == ["D11:26", "D30:5"]
    assert locomo.normalise_evidence(["D9:1 D4:4 D4:6"]) == ["D9:1", "D4:4", "D4:6"]
    assert locomo.parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00"


def test_scale_smoke(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    proc = _run(
        "scale.py",
        "--sizes",
        "300",
        "--fake",
        "--queries",
        "20",
        "--edits",
        "1",
        "--roots",
        str(tmp_path / "roots"),
        "--json-out",
        str(out),
    )
    assert "FAKE" in proc.stdout
    result = _load(out)
    assert result["benchmark"] == "scale"
    (r,) = result["results"]
    assert 300 <= r["chunks"] < 400 and r["vectors_fake"] is True
    assert r["index_keyword_only"]["seconds"] > 0 and r["index_keyword_only"]["chunks"] == r["chunks"]
    assert r["index_full"]["seconds"] > 0 and r["index_full"]["chunks_embedded"] == r["chunks"]
    assert r["reindex"]["reindex_noop_changed"] is False
    assert r["edit"]["keyword_only_median_ms"] > 0 and r["edit"]["with_vectors_median_ms"] > 0
    _check_latency(r["search"]["search_exact"])
    _check_latency(r["search"]["search_memory"])
    assert r["search"]["literal_top1_contains_query"] >= 0.9
    assert r["disk"]["total"]["apparent_bytes"] > 0
    server = r["server"]
    assert server["edit_to_searchable_median_ms"] > 0
    assert server["rss_bytes"] and server["rss_bytes"] > 10_000_000
    _check_latency(server["search_exact"])
    with_model = r["server_with_model"]  # the real server, model loaded, on the fake vectors
    assert with_model["peak_rss_bytes"] > server["rss_bytes"], "the model's memory shows"
    _check_latency(with_model["search_memory"])
    import sqlite3

    db = sqlite3.connect(Path(r["root"]) / ".memory" / "index.sqlite3")
    try:
        recipe = db.execute("SELECT value FROM meta WHERE key = 'vector_recipe'").fetchone()[0]
    finally:
        db.close()
    assert recipe.startswith("fake-hash-384"), "the root's vector label is put back after the model phase"


def test_coldstart_smoke(tmp_path: Path) -> None:
    out = tmp_path / "coldstart.json"
    _run(
        "coldstart.py",
        "--runs",
        "1",
        "--chunks",
        "300",
        "--fake",
        "--no-baseline",
        "--root",
        str(_make_root(tmp_path)),
        "--json-out",
        str(out),
    )
    result = _load(out)
    assert result["benchmark"] == "coldstart"
    assert result["root"]["chunks"] > 0
    for order in ("exact_first", "memory_first"):
        data = result["results"][order]
        assert data["runs"] == 1
        assert 0 < data["initialize"]["median"] <= data["tools_list"]["median"] <= data["search_memory"]["median"]
    first = result["results"]["exact_first"]
    assert first["tools_list"]["median"] <= first["search_exact"]["median"] <= first["search_memory"]["median"]


def _make_root(tmp_path: Path) -> Path:
    """A small generated root (the same generator the scale benchmark uses)."""
    sys.path.insert(0, str(BENCH))
    try:
        import corpus
    finally:
        sys.path.remove(str(BENCH))
    root = tmp_path / "coldroot"
    for rel, text in corpus.generate(300, seed=3).files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_redaction_timing_smoke(tmp_path: Path) -> None:
    out = tmp_path / "timing.json"
    _run("redaction_timing.py", "--family", "old backtrackers", "--repeat", "1", "--json", str(out))
    result = _load(out)
    [family] = result["families"]
    assert family["family"] == "old backtrackers" and family["large_s"] > family["small_s"] > 0
    assert result["worst_ratio"] == family["ratio"] and result["budget_fired"] == 0


def test_redaction_corpus_smoke(tmp_path: Path) -> None:
    out = tmp_path / "corpus.json"
    _run("redaction_corpus.py", "--direct", "--json", str(out))
    result = _load(out)
    leaks, fp = result["leaks"], result["false_positives"]
    assert result["gitleaks_rules"] >= 210 and leaks["placements"] == 18 * result["samples_per_draw"]
    assert 0 <= leaks["leak_rate"] < 1 and fp["hash_like_lines"] > 300 and fp["code_lines"] > 20_000


def test_server_resources_smoke(tmp_path: Path) -> None:
    out = tmp_path / "resources.json"
    args = ("--fake", "--searches", "12", "--topics", "5", "--idle-every", "8", "--idle-seconds", "0.2")
    _run("server_resources.py", *args, "--json", str(out))
    result = _load(out)
    assert result["errors"] == 0
    [start] = result["samples"]  # no checkpoint within 12 calls: the state before the first one
    assert start["calls"] == 0 and start["rss_bytes"] > 0 and start["fds"] > 3 and start["threads"] > 1


def test_kept_size_smoke(tmp_path: Path) -> None:
    require_shared(SHARED / "transcripts")
    out = tmp_path / "kept.json"
    proc = _run("kept_size.py", "--quick", "--json", str(out))
    assert "Kept transcripts, bytes per session" in proc.stdout
    data = _load(out)
    default, tight = data["summaries"]
    assert default["sessions"] == tight["sessions"] == 10
    assert 0 < default["median_bytes"] <= default["p95_bytes"] <= default["max_bytes"] <= default["budget"]
    assert default["same_messages"] == default["sessions"] and tight["same_line_count"] == tight["sessions"]
    assert data["compress_seconds"]["keep_on"] > 0


def test_failure_replay_on_the_hand_written_sessions(tmp_path: Path) -> None:
    """bench/failure_replay.py on the hand-written sessions alone (no shared data needed): the earlier fixes it
    would inject are the recorded judged set (every verdict found, so precision is printed from them), and the
    session-start brief stays within its bound."""
    shared = tmp_path / "shared"
    (shared / "transcripts").mkdir(parents=True)
    out = tmp_path / "replay.json"
    proc = _run("failure_replay.py", "--shared", str(shared), "--hand-written", "--json-out", str(out))
    data = _load(out)
    injections = sum(p["injections"] for p in data["projects"])
    assert injections >= 20 and data["unjudged"] == 0, proc.stdout
    assert data["precision"] >= 0.9, proc.stdout
    briefs = [b["chars"] for p in data["projects"] for b in p["briefs"]]
    assert briefs and max(briefs) <= 1200 and any(briefs)
    assert "injections" in proc.stdout and "precision" in proc.stdout
