"""`kill -9` at the worst moments: during `dream apply`, during compression, during `index --rebuild`.

Each test runs the real command in a subprocess and kills it with SIGKILL at a precise point (the process
kills itself where `crash_point(...)` names the point given in MEMORY_SERVER_CRASH_AT; see crashpoints.py)
or after a delay, then checks that nothing is half written and that the next ordinary run recovers by itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SHARED_TRANSCRIPTS as TRANSCRIPTS
from conftest import require_shared
from test_dream import NOW, dream, make_root

from memory_server import Memory, cli
from memory_server.dream.review import apply_proposal
from memory_server.files.crashpoints import ENV as CRASH_ENV
from memory_server.files.crashpoints import PAUSE_ENV
from memory_server.files.root import MemoryRoot, layer_of
from memory_server.files.scaffold import init_root
from memory_server.parse.frontmatter import read_front_matter
from memory_server.parse.markdown import parse_document
from memory_server.sessions.compress import compress_all, compress_transcript

SRC = str(Path(__file__).resolve().parents[1])  # the repository: `memory_server` lies at its top
KILLED = -signal.SIGKILL


def run(root: Path, *args: str, crash: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`memory-server ARGS --root ROOT` in a fresh process, killed at `crash` when given."""
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop(CRASH_ENV, None)
    if crash:
        env[CRASH_ENV] = crash
    return subprocess.run(
        [sys.executable, "-m", "memory_server", *args, "--root", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def temp_files(root: Path) -> list[Path]:
    """Temp files under the root, but for a kept copy's member in the making (`.memory/keep/`: derived state; the
    next keeping into the root removes it once it is old, as compression does with its own litter)."""
    return sorted(p for p in root.rglob("*.tmp") if p.parent != root / ".memory" / "keep")


# -- dream apply ------------------------------------------------------------------------------------------


def scripted_root(tmp_path: Path, kind: str) -> Path:
    """test_dream's root; `new-topic`: without topics/lessons.md, so the proposal also creates a file."""
    root = make_root(tmp_path)
    if kind == "new-topic":
        (root / "topics" / "lessons.md").unlink()
        text = (
            (root / "MEMORY.md")
            .read_text()
            .replace("- [Lessons](topics/lessons.md): mistakes made more than once, and their fixes\n", "")
        )
        (root / "MEMORY.md").write_text(text)
    return root


def proposal(root: Path, tmp_path: Path) -> tuple[str, dict[str, bytes], dict]:
    """Make a proposal; return its id, the bytes each target has after an uninterrupted apply, and the meta."""
    result = dream(root)
    assert result.id is not None, result.message
    reference = tmp_path / "reference"
    shutil.copytree(root, reference)
    applied = apply_proposal(reference, result.id, clock=lambda: NOW)
    assert len(applied["files"]) >= 2, applied
    expected = {rel: (reference / rel).read_bytes() for rel in applied["files"]}
    meta = json.loads((reference / "dreams" / result.id / "proposal.json").read_text())
    return result.id, expected, meta


def meta_of(root: Path, pid: str) -> dict:
    return json.loads((root / "dreams" / pid / "proposal.json").read_text())


def assert_fully_applied(root: Path, pid: str, expected: dict[str, bytes], reference_meta: dict) -> None:
    for rel, data in expected.items():
        assert (root / rel).read_bytes() == data, f"{rel} does not hold the proposal's new content"
    meta = meta_of(root, pid)
    assert meta["status"] == "done"
    assert [h["status"] for h in meta["hunks"]] == ["applied"] * len(meta["hunks"])
    assert meta["current"] == reference_meta["current"]
    state = json.loads((root / ".memory" / "dream-state.json").read_text())
    applied = {fp for h in reference_meta["hunks"] for fp in h["fingerprints"]}
    assert applied <= set(state["applied"]), "the dream state does not record the applied changes"
    assert not (root / "dreams" / pid / "apply-journal.json").exists()
    assert temp_files(root) == []
    again = run(root, "dream", "apply", pid)
    assert again.returncode == 2 and "no hunk left to review" in again.stderr, again.stderr


@pytest.mark.parametrize(
    "point, kind, recover_with",
    [
        ("dream-apply-after-journal", "plain", "status"),
        ("dream-apply-after-first-rename", "plain", "status"),
        ("dream-apply-after-first-rename", "plain", "apply"),
        ("dream-apply-after-first-rename", "new-topic", "show"),
        ("dream-apply-before-meta", "plain", "show"),
        ("dream-apply-before-journal-removed", "new-topic", "apply"),
    ],
)
def test_a_killed_apply_is_finished_by_the_next_dream_command(
    tmp_path: Path, point: str, kind: str, recover_with: str
) -> None:
    root = scripted_root(tmp_path / "live", kind)
    pid, expected, reference_meta = proposal(root, tmp_path)
    old = {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in expected}

    killed = run(root, "dream", "apply", pid, crash=point)
    assert killed.returncode == KILLED, killed.stderr

    # the kill landed where intended: after the first rename, one target is new and the others old
    changed = [rel for rel in expected if (root / rel).exists() and (root / rel).read_bytes() == expected[rel]]
    renamed = {"dream-apply-after-journal": 0, "dream-apply-after-first-rename": 1}.get(point, len(expected))
    assert changed == sorted(expected)[:renamed]
    assert meta_of(root, pid)["status"] == ("done" if point == "dream-apply-before-journal-removed" else "pending")
    assert (root / "dreams" / pid / "apply-journal.json").exists()

    args = {"status": ["dream", "status"], "show": ["dream", "show"], "apply": ["dream", "apply", pid]}[recover_with]
    after = run(root, *args)
    assert f"completed an interrupted `dream apply {pid}`" in after.stderr
    if recover_with == "apply":
        assert after.returncode == 2 and "no hunk left to review" in after.stderr, after.stderr
    else:
        assert after.returncode == 0, after.stderr
    assert_fully_applied(root, pid, expected, reference_meta)
    assert old != expected


def test_an_apply_killed_before_its_journal_changes_nothing_and_a_fresh_apply_works(tmp_path: Path) -> None:
    root = scripted_root(tmp_path / "live", "plain")
    pid, expected, reference_meta = proposal(root, tmp_path)
    before = {p: p.read_bytes() for p in [root / "MEMORY.md", *(root / "topics").rglob("*.md")]}
    meta_before = (root / "dreams" / pid / "proposal.json").read_bytes()

    killed = run(root, "dream", "apply", pid, crash="dream-apply-before-journal")
    assert killed.returncode == KILLED, killed.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert (root / "dreams" / pid / "proposal.json").read_bytes() == meta_before
    assert not (root / "dreams" / pid / "apply-journal.json").exists()
    litter = temp_files(root)
    assert len(litter) == len(expected) and all(p.name.startswith(".") for p in litter)
    assert all(layer_of(p.relative_to(root).as_posix()) is None for p in litter)  # never indexed

    status = run(root, "dream", "status")  # reads only: no lock, no cleanup, no change
    assert status.returncode == 0 and "completed an interrupted" not in status.stderr
    fresh = run(root, "dream", "apply", pid)
    assert fresh.returncode == 0, fresh.stderr
    assert_fully_applied(root, pid, expected, reference_meta)


def test_a_file_edited_after_the_kill_is_left_alone_and_named(tmp_path: Path) -> None:
    root = scripted_root(tmp_path / "live", "plain")
    pid, expected, _reference_meta = proposal(root, tmp_path)
    first, second = sorted(expected)
    killed = run(root, "dream", "apply", pid, crash="dream-apply-after-first-rename")
    assert killed.returncode == KILLED, killed.stderr
    edited = (root / second).read_text() + "- Someone edited this by hand after the crash.\n"
    (root / second).write_text(edited)

    after = run(root, "dream", "status")
    assert after.returncode == 2
    assert f"could not change {second}" in after.stderr and "changed by someone" in after.stderr
    assert f"memory-server dream run --redo {pid}" in after.stderr  # what to do
    assert (root / second).read_text() == edited  # the person's edit is kept
    assert (root / first).read_bytes() == expected[first]
    meta = meta_of(root, pid)
    assert meta["status"] == "pending"
    assert {h["path"]: h["status"] for h in meta["hunks"]} == {first: "applied", second: "pending"}
    assert not (root / "dreams" / pid / "apply-journal.json").exists() and temp_files(root) == []
    # reported once; then the proposal says what it says for any file edited by hand
    again = run(root, "dream", "status")
    assert again.returncode == 0, again.stderr
    show = run(root, "dream", "show", pid)
    assert show.returncode == 0 and f"{second} changed since proposal {pid}" in show.stdout


def paused_apply(root: Path, pid: str, point: str) -> subprocess.Popen[str]:
    """`memory-server dream apply PID` in a fresh process that stops itself at `point` (see `_stopped`)."""
    env = {**os.environ, "PYTHONPATH": SRC, PAUSE_ENV: point}
    env.pop(CRASH_ENV, None)
    return subprocess.Popen(
        [sys.executable, "-m", "memory_server", "dream", "apply", pid, "--root", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stopped(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the apply never reached its pause point"
        time.sleep(0.02)


@pytest.mark.parametrize("save", ["in place", "by rename"])
def test_a_save_that_lands_between_the_check_and_the_rename_is_kept(tmp_path: Path, save: str) -> None:
    """An editor takes no lock: a person's save can land after `dream apply` checked the file and before it
    renames its version into place. Here it lands exactly there (the apply is paused after its last check,
    with its journal written): the person's version stays, nothing of the apply remains, and it says so."""
    root = scripted_root(tmp_path / "live", "plain")
    pid, expected, _reference_meta = proposal(root, tmp_path)
    target = sorted(expected)[-1]
    apply = paused_apply(root, pid, "dream-apply-after-journal")
    try:
        _stopped(apply.pid)
        before = {rel: (root / rel).read_bytes() for rel in expected}
        saved = (root / target).read_text(encoding="utf-8") + "- A line the person saved during the apply.\n"
        if save == "in place":
            with open(root / target, "r+", encoding="utf-8") as fh:
                fh.write(saved)
        else:  # as editors that write a copy and rename it over the file do
            (root / "topics" / ".saving.tmp").write_text(saved, encoding="utf-8")
            os.replace(root / "topics" / ".saving.tmp", root / target)
    finally:
        os.kill(apply.pid, signal.SIGCONT)
    out, err = apply.communicate(timeout=120)
    assert apply.returncode == 2, (out, err)
    assert f"{target} was saved by someone while the proposal was being applied" in err
    assert (root / target).read_text(encoding="utf-8") == saved  # the person's save, whole
    assert {rel: (root / rel).read_bytes() for rel in expected if rel != target} == {
        rel: data for rel, data in before.items() if rel != target
    }  # nothing of the apply remains in the other files either
    meta = meta_of(root, pid)
    assert meta["status"] == "pending" and {h["status"] for h in meta["hunks"]} == {"pending"}
    assert not (root / "dreams" / pid / "apply-journal.json").exists() and temp_files(root) == []


def test_an_apply_undone_midway_keeps_a_save_made_to_a_file_it_had_already_replaced(tmp_path: Path) -> None:
    """The apply is paused after its first rename; the person saves that file (over the apply's version) and
    the last one (so the apply stops there and undoes the first): the undo keeps the person's save."""
    root = scripted_root(tmp_path / "live", "plain")
    pid, expected, _reference_meta = proposal(root, tmp_path)
    first, last = sorted(expected)[0], sorted(expected)[-1]
    assert first != last
    apply = paused_apply(root, pid, "dream-apply-after-first-rename")
    try:
        _stopped(apply.pid)
        assert (root / first).read_bytes() == expected[first]  # renamed into place already
        saved = {
            rel: (root / rel).read_text(encoding="utf-8") + "- A line the person saved during the apply.\n"
            for rel in (first, last)
        }
        for rel, text in saved.items():
            (root / rel).write_text(text, encoding="utf-8")
    finally:
        os.kill(apply.pid, signal.SIGCONT)
    out, err = apply.communicate(timeout=120)
    assert apply.returncode == 2 and f"{last} was saved by someone" in err, (out, err)
    assert {rel: (root / rel).read_text(encoding="utf-8") for rel in saved} == saved  # both saves, whole


def test_an_interrupted_reject_is_recorded_in_the_proposal_and_the_state_together(tmp_path: Path) -> None:
    root = scripted_root(tmp_path / "live", "plain")
    pid = dream(root).id
    assert pid is not None
    killed = run(root, "dream", "reject", pid, "--hunks", "1", crash="dream-apply-before-meta")
    assert killed.returncode == KILLED, killed.stderr
    assert meta_of(root, pid)["hunks"][0]["status"] == "pending"
    after = run(root, "dream", "show", pid)
    assert after.returncode == 0 and f"completed an interrupted `dream reject {pid}`" in after.stderr
    meta = meta_of(root, pid)
    state = json.loads((root / ".memory" / "dream-state.json").read_text())
    assert meta["hunks"][0]["status"] == "rejected"
    assert set(meta["hunks"][0]["fingerprints"]) <= set(state["rejected"])


# -- compression ------------------------------------------------------------------------------------------


def real_transcripts() -> list[Path]:
    """The shared real transcripts that hold at least one request (the test skips when they are absent)."""
    require_shared(TRANSCRIPTS)
    real = [f for f in sorted(TRANSCRIPTS.glob("*.jsonl")) if b'"type":"user"' in f.read_bytes().replace(b" ", b"")]
    assert len(real) >= 2, f"the shared transcripts are missing from {TRANSCRIPTS}: restore that folder"
    return real


def session_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "sessions" / "compressed").rglob("*.md") if not p.name.startswith("."))


def assert_complete(files: list[Path], reference: Path) -> None:
    """Every compressed file present parses, and is byte for byte what an uninterrupted run wrote."""
    for path in files:
        meta = read_front_matter(path)
        assert meta.get("session_id") and meta.get("lines"), f"{path} is not a complete session file"
        twin = reference / path.relative_to(path.parents[3])
        assert path.read_bytes() == twin.read_bytes(), f"{path} differs from an uninterrupted compression"


def test_compress_killed_before_its_rename_leaves_no_partial_file_and_the_next_run_writes_it(tmp_path: Path) -> None:
    transcript = tmp_path / "projects" / real_transcripts()[0].name
    transcript.parent.mkdir()
    shutil.copy(real_transcripts()[0], transcript)
    reference = tmp_path / "reference"
    init_root(reference)
    [want] = compress_transcript(transcript, MemoryRoot(reference))
    root = tmp_path / "root"
    init_root(root)

    killed = run(root, "compress", str(transcript), crash="atomic-write-before-rename")
    assert killed.returncode == KILLED, killed.stderr
    assert session_files(root) == []  # no partial .md, and no whole one either
    [leftover] = temp_files(root)
    assert leftover.name.startswith(f".{want.name}.") and leftover.parent.name == want.parent.name
    rel = leftover.relative_to(root).as_posix()
    assert layer_of(rel) is None and rel not in dict(MemoryRoot(root).memory_files())
    memory = Memory(root, keyword_only=True)
    try:
        memory.index()
        assert memory.status().files_by_layer.get("session", 0) == 0  # the indexer ignores the dot-file
    finally:
        memory.close()

    # a temp file old enough to be litter is removed by the next compression into that folder; a young one
    # (another writer's, in progress) is not
    young = leftover.with_name(f".{want.name}.young123.tmp")
    shutil.copy(leftover, young)
    ten_minutes_ago = time.time() - 600
    os.utime(leftover, (ten_minutes_ago, ten_minutes_ago))

    again = run(root, "compress", str(transcript))
    assert again.returncode == 0, again.stderr
    assert [p.name for p in session_files(root)] == [want.name]
    assert_complete(session_files(root), reference)
    assert not leftover.exists() and young.exists()
    assert "removed 1 temporary file(s)" in again.stderr

    noop = run(root, "compress", str(transcript))
    assert noop.returncode == 0 and "nothing new to compress" in noop.stderr
    assert [p.name for p in session_files(root)] == [want.name]


def test_compress_all_killed_between_transcripts_finishes_on_the_next_run(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    for f in real_transcripts()[:3]:
        shutil.copy(f, folder / f.name)
    reference = tmp_path / "reference"
    init_root(reference)
    want = compress_all(folder, MemoryRoot(reference))
    assert len(want) >= 2
    root = tmp_path / "root"
    init_root(root)

    killed = run(root, "compress", "--all", str(folder), crash="compress-between-files")
    assert killed.returncode == KILLED, killed.stderr
    assert 1 <= len(session_files(root)) < len(want)
    assert_complete(session_files(root), reference)

    again = run(root, "compress", "--all", str(folder))
    assert again.returncode == 0, again.stderr
    assert [p.name for p in session_files(root)] == sorted(p.name for p in want)
    assert_complete(session_files(root), reference)
    assert temp_files(root) == []
    noop = run(root, "compress", "--all", str(folder))
    assert noop.returncode == 0 and "nothing new to compress" in noop.stderr


# -- index --rebuild --------------------------------------------------------------------------------------

TOPICS = 40  # about 500 chunks: two vector batches in one group, so every crash point is reached


def probe_topic(i: int, version: int) -> str:
    """A topic with a dozen chunks; four of them name the file's token (its number and version)."""
    token = f"crashprobe{i}v{version}"
    filler = "".join(f"Filler paragraph {j} of probe {i}, about indexing and nothing else.\n\n" for j in range(8))
    return (
        f"---\ntitle: Probe {i}\ndescription: a file for the kill -9 test\nupdated: 2026-01-01\n---\n"
        f"# Probe {i}\n\n"
        f"The first paragraph names {token} and some filler words about indexing.\n\n"
        f"## Details\n\n{filler}"
        f"- A list item that also names {token}.\n"
        f"- Another item naming {token} again, on its own line.\n\n"
        f"A closing paragraph with {token} in it.\n"
    )


def expected_chunks(root: Path, i: int, version: int) -> set[tuple[str, int, int]]:
    rel = f"topics/probe-{i:03d}.md"
    doc = parse_document(rel, "topic", (root / rel).read_text())
    return {(c.path, c.start_line, c.end_line) for c in doc.chunks if f"crashprobe{i}v{version}" in c.text}


def exact_hits(capsys, root: Path, token: str) -> list[tuple[str, int, int]]:
    assert cli.main(["search", token, "--exact", "--json", "--k", "20", "--root", str(root)]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    return [(h["path"], h["start_line"], h["end_line"]) for h in hits]


@pytest.fixture(scope="module")
def indexed_probes(tmp_path_factory) -> Path:
    """A root of probe topics indexed once with the real model (later rebuilds take vectors from its cache)."""
    root = tmp_path_factory.mktemp("probes") / "root"
    (root / "topics").mkdir(parents=True)
    for i in range(TOPICS):
        (root / "topics" / f"probe-{i:03d}.md").write_text(probe_topic(i, 0))
    first = run(root, "index", timeout=600)
    assert first.returncode == 0, first.stderr
    return root


@pytest.mark.parametrize(
    "point",
    [
        "index-rebuild-mid-keyword",
        "index-rebuild-after-keyword",
        "index-vectors-between-batches",
        "index-vectors-before-manifest",
    ],
)
def test_index_rebuild_killed_recovers_on_the_next_index(
    indexed_probes: Path, tmp_path: Path, point: str, capsys
) -> None:
    root = tmp_path / "root"
    shutil.copytree(indexed_probes, root)
    killed = run(root, "index", "--rebuild", crash=point, timeout=600)
    assert killed.returncode == KILLED, f"the rebuild never reached {point}: {killed.stderr}"
    # While the index is down, a file changes: the next index must finish the repair and see the edit.
    changed = 7
    (root / "topics" / f"probe-{changed:03d}.md").write_text(probe_topic(changed, 1))

    again = run(root, "index", timeout=600)
    assert again.returncode == 0, again.stderr
    versions = {i: (1 if i == changed else 0) for i in range(TOPICS)}
    memory = Memory(root)
    try:
        total = 0
        for i in range(TOPICS):  # every chunk of every file exactly once, and the edit seen
            token = f"crashprobe{i}v{versions[i]}"
            got = [(h.path, h.start_line, h.end_line) for h in memory.search_exact(token, 20)]
            assert len(got) == len(set(got)) and set(got) == expected_chunks(root, i, versions[i]), (i, got)
            rel = f"topics/probe-{i:03d}.md"
            total += len(parse_document(rel, "topic", (root / rel).read_text()).chunks)
        assert memory.search_exact(f"crashprobe{changed}v0") == []  # the edited file's old text is gone
        chunk_ids = {cid for cid, _ in memory.fts.iter_chunk_ids()}
        assert len(chunk_ids) == total, "duplicate or missing chunks in the keyword index"
        assert memory.vectors is not None and memory.vectors.ids() == chunk_ids, "the vectors disagree"
        hits, mode = memory.search_memory(f"the paragraph that names crashprobe{changed}v1", k=3)
        assert mode == "hybrid" and hits[0].path == f"topics/probe-{changed:03d}.md"
    finally:
        memory.close()
    assert set(exact_hits(capsys, root, f"crashprobe{changed}v1")) == expected_chunks(root, changed, 1)  # the CLI too
