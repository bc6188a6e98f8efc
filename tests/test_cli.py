"""The command line: one command tree (`memory-server` and `python -m memory_server`), the root from --root,
MEMORY_ROOT or the current folder, progress bars on a terminal only, and errors as one line with exit 2."""

from __future__ import annotations

import errno
import json
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CLI, REPO, SHARED_TRANSCRIPTS, require_shared, run_cli, write

from memory_server import __version__
from memory_server.cli import main
from memory_server.files.scaffold import init_root

COMMANDS = ["compress", "dream", "hook", "hooks", "index", "init", "keep", "plugin", "search", "serve", "status"]


def test_init_never_overwrites(tmp_path: Path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "MEMORY.md").write_text("mine\n")
    created = init_root(root)
    assert "MEMORY.md" not in created and (root / "MEMORY.md").read_text() == "mine\n"
    assert (root / "CLAUDE.md").read_text().count("Wins") == 1
    assert (root / "topics").is_dir() and (root / "sessions/compressed").is_dir()
    assert ".memory/" in (root / ".gitignore").read_text()
    assert init_root(root) == []


def test_cli_init_index_search_status(root: Path, tmp_path: Path):
    r = run_cli("init", "--root", str(tmp_path / "fresh"))
    assert r.returncode == 0 and "created in" in r.stdout and (tmp_path / "fresh" / "MEMORY.md").is_file()
    r = run_cli("index", "--keyword-only", "--root", str(root))
    assert r.returncode == 0, r.stderr
    assert "added" in r.stdout
    r = run_cli("search", "--exact", "192.168.1.50", "--json", "--root", str(root))
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert hits[0]["path"] == "topics/printer.md" and hits[0]["start_line"] == 9
    r = run_cli("status", "--json", env={"MEMORY_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["keyword_index"]["fresh"] is True
    r = run_cli("search", "--exact", "E-1042", cwd=root)
    assert "topics/printer.md:14-14" in r.stdout
    r = run_cli("--root", str(root), "search", "--exact", "E-1042", "--layer", "topic", "--layer", "session")
    assert "topics/printer.md:14-14" in r.stdout, r.stderr  # --root before the command works too
    r = run_cli("search", "--exact", "printer", "-k", "1", "--json", "--root", str(root))
    assert r.returncode == 0 and len(json.loads(r.stdout)["hits"]) == 1, r.stderr  # -k is --k


def test_a_command_run_inside_a_root_works_on_that_root(root: Path, tmp_path: Path):
    # Run from the root's topics/ folder, a command finds the root above it, as git finds its repository, and
    # says so; before, it refused the folder and advised `init` there, which would nest a root in topics/.
    assert run_cli("index", "--keyword-only", "--root", str(root)).returncode == 0
    inside = run_cli("search", "--exact", "E-1042", cwd=root / "topics")
    assert inside.returncode == 0 and "topics/printer.md:14-14" in inside.stdout, inside.stderr
    assert f"using the memory root {root}" in inside.stderr
    assert not (root / "topics" / ".memory").exists() and not (root / "topics" / "MEMORY.md").exists()
    # init still makes the folder it is run in a root; a folder under no root is refused as before
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = run_cli("dream", "status", cwd=elsewhere)
    assert refused.returncode == 2 and "is not a memory root" in refused.stderr
    assert list(elsewhere.iterdir()) == []


def test_search_says_why_it_found_nothing(root: Path):
    """A root that was never indexed: not just "no hits", but why, and what to run."""
    r = run_cli("search", "--exact", "SAVE_CONFIG", "--root", str(root))
    assert r.returncode == 0 and r.stdout == "no hits\n", r.stdout
    assert "not been indexed yet (5 files waiting)" in r.stderr and "memory-server index" in r.stderr, r.stderr
    # nothing indexes it while no server runs: no "try again in a few seconds", but what to run
    assert f"run `memory-server index --root {root}`" in r.stderr and "few seconds" not in r.stderr, r.stderr
    r = run_cli("search", "--exact", "SAVE_CONFIG", "--json", "--root", str(root))
    assert "not been indexed yet" in json.loads(r.stdout)["note"]
    assert run_cli("index", "--keyword-only", "--root", str(root)).returncode == 0
    r = run_cli("search", "--exact", "SAVE_CONFIG", "--root", str(root))
    assert "topics/printer.md" in r.stdout and r.stderr == "", r.stderr


def test_status_of_a_root_never_indexed_counts_its_files_pending_in_both_indices(root: Path):
    """Before the first index every file waits for both indices, not only for the keyword index."""
    status = json.loads(run_cli("status", "--json", "--root", str(root)).stdout)
    assert status["keyword_index"]["pending_count"] == 5
    assert status["semantic_index"]["pending_files"] == 5, status["semantic_index"]
    assert run_cli("index", "--keyword-only", "--root", str(root)).returncode == 0
    status = json.loads(run_cli("status", "--json", "--root", str(root)).stdout)
    assert status["keyword_index"]["pending_count"] == 0 and status["semantic_index"]["pending_files"] == 5
    files_line = run_cli("status", "--root", str(root)).stdout.splitlines()[1]
    assert re.fullmatch(r"files: 5 \(topic \d+(, \w+ \d+)*\)  chunks: \d+", files_line), files_line


def test_one_command_tree_with_a_version(tmp_path: Path):
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"memory-server {__version__}"
    r = run_cli("--help")
    listed = re.findall(r"^  (\w+)\s", r.stdout.split("Commands:")[1], re.M)
    assert r.returncode == 0 and listed == COMMANDS
    dream = re.findall(r"^  (\w+)\s", run_cli("dream", "--help").stdout.split("Commands:")[1], re.M)
    assert {"apply", "reject", "run", "show", "status"} <= set(dream)
    script = Path(sys.executable).with_name("memory-server")
    if script.exists():  # the installed console script is the same command
        done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == f"memory-server {__version__}"


def test_no_other_entry_points():
    """`python -m memory_server` (__main__.py) is the only module that runs as a program."""
    runnable = [
        str(path.relative_to(REPO))
        for path in (REPO / "memory_server").rglob("*.py")
        if path.name != "__main__.py" and re.search(r"^if __name__ == .__main__.:", path.read_text(), re.M)
    ]
    assert runnable == []
    assert not (REPO / "memory_server" / "dream" / "cli.py").exists()
    done = subprocess.run([*CLI[:-1], "memory_server.dream.cli"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "No module named" in done.stderr


def test_cli_errors_are_one_line_with_exit_2(tmp_path: Path, root: Path):
    r = run_cli("status", "--root", str(tmp_path / "missing"))
    assert r.returncode == 2 and "memory-server init" in r.stderr
    r = run_cli("search", "--exact", "x", "--k", "0", "--root", str(root))
    assert r.returncode == 2 and "k is 0" in r.stderr
    r = run_cli("frobnicate")
    assert r.returncode == 2 and "No such command" in r.stderr
    write(root, "memory.yaml", "search:\n  max_k: 0\n")
    r = run_cli("status", "--root", str(root))
    assert r.returncode == 2 and "search.max_k: 0 is not allowed" in r.stderr
    assert "greater than or equal to 1" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_hints_name_the_program_the_person_ran_unless_path_runs_that_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A hint says "run `memory-server init ...`": written as the path of the program that ran when PATH has no
    `memory-server`, or another one (mcp-memory-service installs one too); bare when PATH runs this very file."""
    ran = _program(tmp_path / "home" / "venvs" / "memory server" / "bin" / "memory-server")
    other = _program(tmp_path / "other-bin" / "memory-server")
    monkeypatch.setattr(sys, "argv", [str(ran), "search"])
    plain = tmp_path / "plain"
    plain.mkdir()
    typed = shlex.quote(str(ran))  # as a shell takes it: the folder has a space
    elsewhere = str(tmp_path / "elsewhere")  # a HOME the program is not under
    cases = [
        ("/usr/bin:/bin", elsewhere, f"`{typed} init --root {plain}`"),  # not on PATH
        (f"{other.parent}:/usr/bin", elsewhere, f"`{typed} init --root {plain}`"),  # another one first
        (f"{other.parent}:/usr/bin", str(tmp_path / "home"), "`~/'venvs/memory server/bin/memory-server' init"),
        (f"{ran.parent}:{other.parent}", elsewhere, f"`memory-server init --root {plain}`"),  # PATH runs it
    ]
    for path, home, hint in cases:
        done = run_cli("search", "belts", "--root", str(plain), env={"PATH": path, "HOME": home})
        assert done.returncode == 2 and hint in done.stderr, (path, home, done.stderr)
    assert not list(plain.iterdir())


def test_a_full_disk_is_one_line_and_exit_2(root: Path):
    """/dev/full refuses every write with ENOSPC, as a full disk does."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*CLI, "status", "--root", str(root)], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "No space left on device" in done.stderr and "free some space" in done.stderr


@pytest.mark.parametrize("disk_state, advice", [("read-only", "read-only"), ("full", "free some space")])
def test_file_system_errors_are_one_line_and_exit_2(tmp_path: Path, capsys, disk_state: str, advice: str):
    """`init` on a real read-only or full file system (a small tmpfs): one line saying what to do, status 2."""
    from test_failures import fill, small_disk

    with small_disk(tmp_path, "1m") as disk:
        if disk_state == "full":
            fill(disk)
        else:
            remounted = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True)
            if remounted.returncode != 0:
                pytest.skip(f"cannot make the tmpfs read-only here: {remounted.stderr.strip()}")
        assert main(["init", "--root", str(disk / "memory")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memory-server: ") and advice in err and str(disk / "memory") in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_permission_error_says_to_check_permissions() -> None:
    from memory_server.commands.common import describe_os_error

    said = describe_os_error(PermissionError(errno.EACCES, "Permission denied", "/mnt/locked/MEMORY.md"))
    assert said == "Permission denied: /mnt/locked/MEMORY.md; " + said.split("; ", 1)[1] and "permissions" in said


def test_a_closed_pipe_ends_quietly(root: Path):
    """`memory-server ... | head`: the reader goes away before the output is written; no traceback."""
    write(root, "topics/many.md", "# Many\n\n" + "\n\n".join(f"widget line {i}" for i in range(300)) + "\n")
    for args in (["status"], ["search", "--exact", "widget", "--k", "50"], ["dream", "status"]):
        proc = subprocess.Popen([*CLI, *args, "--root", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(120)
        assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    shell = subprocess.run(
        f"{' '.join(CLI)} search --exact widget --k 50 --root {root} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.stdout.count("\n") == 1 and "Traceback" not in shell.stderr


REPEATED_ERROR_SESSION = """\
---
session_id: a1b2c3d{n}-0000-4000-8000-000000000000
started: 2026-01-0{n}T09:00:00Z
ended: 2026-01-0{n}T10:30:00Z
---
# Fix the tests

## Requests

- Fix the failing tests

## Errors and fixes

- ModuleNotFoundError: No module named 'yaml' — fixed: ran `.venv/bin/pytest` instead of the system pytest
"""


def test_dream_show_into_head_ends_quietly(tmp_path: Path):
    """`memory-server dream show | head -2`: the proposal is longer than what head reads; no traceback."""
    root = tmp_path / "memory"
    init_root(root)
    for n in (3, 7):  # an error met in two sessions: `dream run` proposes a lesson
        write(root, f"sessions/compressed/2026/2026-01-0{n}-a1b2c3d{n}-fix.md", REPEATED_ERROR_SESSION.format(n=n))
    done = run_cli("dream", "run", "--root", str(root))
    assert done.returncode == 0 and "1 hunk proposed" in done.stdout, done.stdout + done.stderr
    # The reader is gone before anything is written (what `| head` does to a longer output), every time.
    proc = subprocess.Popen(
        [*CLI, "dream", "show", "--root", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(120)
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    shell = subprocess.run(
        f"{' '.join(CLI)} dream show --root {root} | head -1", shell=True, capture_output=True, text=True, timeout=120
    )
    assert shell.stdout.startswith("proposal ") and shell.stdout.count("\n") == 1, shell.stdout
    assert "Traceback" not in shell.stderr, shell.stderr


def _stopped(pid: int) -> bool:
    """The process stopped itself (SIGSTOP at a MEMORY_SERVER_PAUSE_AT point)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    return stat[stat.rindex(")") + 2] == "T"


def _stderr_on_a_terminal(args: list[str], pause_at: str | None = None) -> tuple[int, str]:
    """Run `args` with stderr on a terminal; with `pause_at`, press Ctrl-C (SIGINT) once the process reaches
    that point (where it stops itself, so the key lands exactly there however loaded the machine is)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "MEMORY_SERVER_PAUSE_AT": pause_at} if pause_at else None
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        if pause_at and not select.select([leader], [], [], 0.1)[0]:
            if _stopped(proc.pid):
                proc.send_signal(signal.SIGINT)
                proc.send_signal(signal.SIGCONT)
                pause_at = None
            continue
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.stdout is not None
    out = proc.stdout.read().decode(errors="replace")
    proc.stdout.close()
    return proc.wait(120), b"".join(chunks).decode(errors="replace") + out


STAGES = ["opening the index", "reading files", "opening the vector index", "embedding", "writing"]


def test_index_shows_each_stage_from_the_start_on_a_terminal_only(root: Path):
    """On a terminal, `index` says what it is doing before it loads its heavy libraries (a few seconds), then
    each stage with its count: reading, embedding, writing. Elsewhere (a pipe, a log) it prints none of that.
    `-X importtime` writes each import to the same stderr, so the order shows what came first."""
    for i in range(30):
        write(root, f"topics/note{i}.md", f"# Note {i}\n\nGears and belts {i}.\n")
    code, err = _stderr_on_a_terminal(
        [sys.executable, "-X", "importtime", "-m", "memory_server", "index", "--root", str(root)]
    )
    assert code == 0, err
    first_heavy = min(err.index(f" {name}") for name in ("chromadb", "onnxruntime") if f" {name}" in err)
    assert err.index("\ropening the index") < first_heavy, err[:3000]
    shown = [err.index(f"\r{stage}") for stage in STAGES]  # each status line starts with a carriage return
    assert shown == sorted(shown), [s for _, s in sorted(zip(shown, STAGES, strict=True))]
    assert re.search(r"reading files 35/35", err) and re.search(r"embedding \d+/\d+", err), err[-2000:]
    done = run_cli("index", "--rebuild", "--keyword-only", "--root", str(root))
    assert done.returncode == 0 and not any(stage in done.stderr for stage in STAGES), done.stderr


def test_ctrl_c_during_index_says_what_was_kept(root: Path):
    """Ctrl-C while `index` embeds: it stops, says what it kept (committed files, stored vectors, cached
    embeddings) and how to go on, and exits 130; the next run embeds only what was not cached."""
    for i in range(150):  # several slices of chunks to embed: the interrupt lands after the first
        body = "\n\n".join(
            f"Paragraph {j} of note {i}: belts, gears and pulleys number {i * 10 + j}." for j in range(4)
        )
        write(root, f"topics/note{i}.md", f"# Note {i}\n\n{body}\n")
    code, err = _stderr_on_a_terminal([*CLI, "index", "--root", str(root)], pause_at="index-embedding-between-slices")
    assert code == 130, err
    kept = re.search(
        r"interrupted: the keyword index is up to date for (\d+) of \1 files; vectors of (\d+) of (\d+) "
        r"chunks are stored; ([\d,]+) chunks embedded now are cached",
        err,
    )
    assert kept, err[-1500:]
    # the program as this process was started (`python -m memory_server`): this installation's script
    assert re.search(r"Run `\S*memory-server index` again", err) and "Traceback" not in err, err[-1500:]
    total, cached = int(kept.group(3)), int(kept.group(4).replace(",", ""))
    assert cached >= 64
    again = run_cli("index", "--root", str(root))
    assert again.returncode == 0, again.stderr
    embedded = int(re.search(r"(\d+) chunks embedded", again.stdout).group(1))  # type: ignore[union-attr]
    assert embedded <= total - cached, again.stdout


def test_compress_all_outside_a_memory_root_is_one_message_and_exit_2(tmp_path: Path):
    folder = tmp_path / "not-a-root"
    transcripts = folder / "transcripts"
    transcripts.mkdir(parents=True)
    for n in range(3):
        (transcripts / f"s{n}.jsonl").write_text('{"type": "user"}\n', encoding="utf-8")
    done = run_cli("compress", "--all", str(transcripts), cwd=folder, env={"MEMORY_ROOT": ""})
    assert done.returncode == 2, done
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "not a memory root" in done.stderr and "memory-server init" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["transcripts"], "nothing was written"


def test_compress_command_and_the_session_end_hook(tmp_path: Path, root: Path):
    name = "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    transcript = tmp_path / name
    shutil.copy(require_shared(SHARED_TRANSCRIPTS / name), transcript)
    r = run_cli("compress", "--root", str(root), str(tmp_path / "missing.jsonl"), str(transcript))
    assert r.returncode == 2 and "missing.jsonl" in r.stderr  # one bad transcript does not stop the others
    assert r.stdout.startswith("sessions/compressed/")
    r = run_cli("compress", "--root", str(root), str(transcript))
    assert r.returncode == 0 and r.stdout == "" and "nothing new" in r.stderr
    r = run_cli("compress", "--root", str(root))
    assert r.returncode == 2 and "give a transcript" in r.stderr

    # The SessionEnd hook starts `python -m memory_server compress` in the background, logging its work.
    other = tmp_path / "other-root"
    init_root(other)
    hook_input = json.dumps(
        {
            "session_id": "x",
            "transcript_path": str(transcript),
            "cwd": str(other),
            "hook_event_name": "SessionEnd",
            "reason": "exit",
        }
    )
    started = time.monotonic()
    r = run_cli("hook", "session-end", input=hook_input, env={"MEMORY_ROOT": ""})
    assert r.returncode == 0 and time.monotonic() - started < 5, r.stderr
    log = other / ".memory" / "logs" / "compress.log"
    deadline = time.monotonic() + 60
    while not list((other / "sessions" / "compressed").rglob("*.md")) or "compressed" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no compress.log"
        time.sleep(0.2)


@pytest.mark.parametrize("event", ["session-start", "session-end", "pre-compact"])
def test_hooks_never_fail_the_session(root: Path, event: str):
    for bad in ("this is not json", "[1, 2]", "[" * 100_000 + "]" * 100_000, ""):
        r = run_cli("hook", event, "--root", str(root), input=bad)
        assert r.returncode == 0 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
