"""Huge transcripts: compression streams the file and keeps a bounded head and tail of a huge output.

A transcript of a few hundred megabytes (a session that cat-ed big logs) must compress in memory far below
the file's size, and cutting a huge text must never let a secret or private text through half-redacted.
"""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

from memory_server.files.root import MemoryRoot
from memory_server.parse.frontmatter import read_front_matter
from memory_server.sessions.bounds import LONG_STRING, MARGIN, WINDOW
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.reader import parse_transcript

SESSION = "5f0c2a9e-1b7d-4c3e-9a8f-0d1e2f3a4b5c"
MB = 1024 * 1024


def _record(rtype: str, n: int, content: object, **extra: object) -> dict[str, object]:
    return {
        "type": rtype,
        "sessionId": SESSION,
        "uuid": f"u{n}",
        "timestamp": f"2026-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
        "cwd": "/home/dev/proj",
        "message": {"role": rtype, "content": content},
        **extra,
    }


def _exchange(n: int, command: str, output: str, *, with_result_copy: bool = True) -> list[bytes]:
    """An assistant Bash call and its result, as Claude Code writes them (the output twice: content and
    toolUseResult.stdout)."""
    tid = f"toolu_{n:08d}"
    use = _record("assistant", n, [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}])
    result = _record(
        "user",
        n + 1,
        [{"type": "tool_result", "tool_use_id": tid, "content": output}],
        toolUseResult={"stdout": output if with_result_copy else "", "stderr": "", "interrupted": False},
    )
    return [json.dumps(use).encode() + b"\n", json.dumps(result).encode() + b"\n"]


def write_large_transcript(path: Path, huge_outputs: int, huge_mb: int, normal_mb: int) -> None:
    """A transcript of `huge_outputs` tool outputs of `huge_mb` MB (each stored twice) among `normal_mb` MB
    of ordinary requests, replies and small outputs."""
    log_line = "2026-03-01 10:00:00 INFO worker processed batch ok (items=512, took=31ms)\n"
    huge = log_line * (huge_mb * MB // len(log_line))
    small = "ok: " + "x" * 1500 + "\n"
    with open(path, "wb") as fh:
        fh.write(json.dumps(_record("user", 0, "Find out why the nightly import is slow")).encode() + b"\n")
        n, written = 1, 0
        per_huge = normal_mb * MB // max(1, huge_outputs + 1)
        for i in range(huge_outputs + 1):
            block = 0
            while block < per_huge:
                for line in [
                    json.dumps(_record("user", n, f"check step {n} of the import please")).encode() + b"\n",
                    *_exchange(n + 1, f"./import --step {n}", small),
                    json.dumps(
                        _record("assistant", n + 3, [{"type": "text", "text": f"Step {n} looks fine."}])
                    ).encode()
                    + b"\n",
                ]:
                    fh.write(line)
                    block += len(line)
                n += 4
            written += block
            if i < huge_outputs:
                for line in _exchange(n, f"cat /var/log/import-{i}.log", huge):
                    fh.write(line)
                n += 2
        fh.write(json.dumps(_record("user", n, "Thanks, use the batched writer from now on.")).encode() + b"\n")


_COMPRESS = textwrap.dedent(
    """
    import sys
    from memory_server.files.root import MemoryRoot
    from memory_server.sessions.compress import compress_transcript
    written = compress_transcript(sys.argv[1], MemoryRoot(sys.argv[2]))
    print(len(written))
    # VmHWM is this address space's own peak; ru_maxrss keeps the parent's peak across fork and exec,
    # so it would report the test runner's memory, not the compression's.
    with open("/proc/self/status") as status:
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    """
)


def _peak_rss_mb(transcript: Path, root: Path) -> tuple[float, str]:
    """Compress in a fresh process; return its peak resident memory in MB and its output."""
    run = subprocess.run(
        [sys.executable, "-c", _COMPRESS, str(transcript), str(root)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    written, peak_kb = run.stdout.split()
    return int(peak_kb) / 1024, written


def _memory_root(path: Path) -> Path:
    (path / "topics").mkdir(parents=True)
    (path / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    return path


def test_a_200_mb_transcript_compresses_in_far_less_memory_than_its_size(tmp_path: Path) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    write_large_transcript(transcript, huge_outputs=4, huge_mb=24, normal_mb=8)
    size_mb = transcript.stat().st_size / MB
    assert size_mb > 190
    root = _memory_root(tmp_path / "root")

    peak, written = _peak_rss_mb(transcript, root)
    # Reading the whole file at once peaked at about 700 MB here; streaming holds one line at a time.
    assert peak < 350, f"compressing a {size_mb:.0f} MB transcript peaked at {peak:.0f} MB"
    assert written == "1"
    (summary,) = (root / "sessions" / "compressed").rglob("*.md")
    meta = read_front_matter(summary)
    assert meta["transcript_sha256"] == _sha256_of(transcript)
    text = summary.read_text(encoding="utf-8")
    assert "nightly import is slow" in text and "batched writer" in text
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert children >= peak - 1  # the measurement is the child's own peak


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(MB), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -- cutting a huge text keeps redaction whole --------------------------------------------------------------

SECRET = "ghp_" + "Zq7Rt2Wx9Lk4Mn8Bv3Cx6Hj1Pd5Sf0Gy7Tu2"


def _transcript_with_output(path: Path, output: str) -> Path:
    lines = [json.dumps(_record("user", 0, "run the export")).encode() + b"\n", *_exchange(1, "./export", output)]
    path.write_bytes(b"".join(lines))
    return path


def _result_text(path: Path) -> str:
    t = parse_transcript(path)
    (res,) = t.results.values()
    return res.text


def test_a_huge_output_keeps_a_bounded_head_and_tail(tmp_path: Path) -> None:
    output = "HEAD-LINE first\n" + "filler line\n" * (LONG_STRING // 6) + "TAIL-LINE last\n"
    text = _result_text(_transcript_with_output(tmp_path / "t.jsonl", output))
    assert len(output) > 2 * LONG_STRING
    assert len(text) < 2 * WINDOW
    assert text.startswith("HEAD-LINE first") and text.rstrip().endswith("TAIL-LINE last")
    assert "cut" in text


def test_a_normal_output_is_kept_whole(tmp_path: Path) -> None:
    output = "line\n" * (LONG_STRING // 5 - 10)
    assert _result_text(_transcript_with_output(tmp_path / "t.jsonl", output)) == output


def test_a_secret_across_either_cut_does_not_survive_in_part(tmp_path: Path) -> None:
    filler = "a" * (LONG_STRING * 2)
    for where in (WINDOW, len(filler) - WINDOW):
        for offset in range(-30, 31, 6):
            at = where + offset
            output = filler[:at] + " " + SECRET + " " + filler[at:]
            text = _result_text(_transcript_with_output(tmp_path / "t.jsonl", output))
            for k in range(8, len(SECRET) - 7):  # no 8-character piece of the secret is left
                assert SECRET[k - 8 : k] not in text, (where, offset)


def test_private_text_across_the_cut_stays_hidden(tmp_path: Path) -> None:
    filler = "b" * (LONG_STRING // 2 + WINDOW)
    # Opened in the removed middle, closed in the kept tail: the tail before the close is private.
    after = "c\n" * (MARGIN // 2 + 1000) + "visible-after\n" + "c\n" * 8000
    output = filler + "<private>" + filler + "hidden-codename-Zebra42</private>" + after
    text = _result_text(_transcript_with_output(tmp_path / "t.jsonl", output))
    assert "Zebra42" not in text and "visible-after" in text
    # Opened in the kept head, never closed: the rest is hidden, the mark included, so the text goes whole.
    output = "start <private>" + filler + filler + "Zebra42 at the end\n"
    text = _result_text(_transcript_with_output(tmp_path / "t.jsonl", output))
    assert "Zebra42" not in text and "bbbb" not in text


def test_compression_of_a_transcript_with_a_huge_output_matches_its_summary(tmp_path: Path) -> None:
    output = "Traceback (most recent call last):\n" + "  frame\n" * LONG_STRING + "ValueError: bad row 7\n"
    transcript = _transcript_with_output(tmp_path / f"{SESSION}.jsonl", output)
    root = MemoryRoot(_memory_root(tmp_path / "root"))
    (written,) = compress_transcript(transcript, root)
    meta = read_front_matter(written)
    assert meta["transcript_sha256"] == _sha256_of(transcript)
    assert meta["lines"] == [1, 3]
