"""Does a long-running server keep its resources flat? RSS, open files and threads over 20,000 searches.

A real `memory-server serve` (the real model; `--fake` for bench/fake_server.py) on a generated root of
`--topics` topic files answers `--searches` tool calls over MCP stdio: search_memory and search_exact with
varied questions and literals, with some read_memory, list_topics and memory_status, `--concurrency` at a
time, while the files change (a topic rewritten every `--edit-every` calls, one created and one deleted
every 500). Every `--idle-every` calls the client is idle for `--idle-seconds` (longer than the 10 s after
which the SDK's worker threads retire, so threads come and go as in a real session). At each checkpoint,
after such an idle spell and one call (anyio retires idle workers when a call comes in), it prints the
server's RSS (VmRSS), its open file descriptors and its threads.

Goal: the same fd and thread counts at 5,000 and at 20,000 calls, and RSS growth between them under 5 %.

    python bench/server_resources.py                     # 20,000 calls, the real model (about 25 minutes)
    python bench/server_resources.py --fake --searches 2000 --idle-every 500 --topics 40     # smoke
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio  # noqa: E402
from benchlib import (  # noqa: E402
    default_json_out,
    environment,
    format_table,
    log,
    mcp_server,
    proc_status,
    wait_until_idle,
    write_json,
)

from memory_server.files.scaffold import init_root  # noqa: E402

WORDS = (
    "retry upload queue printer belt firmware cache token index vector sqlite chroma watcher session topic "
    "dream proposal review budget parser redaction secret lock backoff worker thread socket timeout config"
).split()
CHECKPOINTS = (1_000, 5_000, 10_000, 15_000, 20_000)


def topic(i: int, rng: random.Random, version: int = 0) -> str:
    words = [rng.choice(WORDS) for _ in range(400)]
    body = "\n\n".join(" ".join(words[j : j + 40]) + "." for j in range(0, 400, 40))
    return f"# Topic {i} v{version}\n\nmarker{i}v{version} {body}\n\n## Notes\n\nCODE_{i:04d} and 10.0.{i % 250}.1\n"


def make_root(folder: Path, topics: int, seed: int) -> Path:
    root = folder / "root"
    init_root(root)
    rng = random.Random(seed)
    for i in range(topics):
        (root / "topics" / f"t{i:04d}.md").write_text(topic(i, rng), encoding="utf-8")
    return root


def server_resources(pid: int | None, root: Path | None = None) -> dict[str, Any]:
    """RSS (and its anonymous and file-backed parts), open fds and threads of the server, with what they are:
    threads by name (Python's are all `python`; Chroma's Rust core names its own, `sqlx-sqlite-wor` being one
    per connection of its SQLite pool) and fds by what they point at; and the size of the Chroma store."""
    if pid is None:
        return {}
    out: dict[str, Any] = {"rss_bytes": proc_status(pid).get("VmRSS", 0)}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key == "Threads":
                out["threads"] = int(value.split()[0])
            elif key in ("RssAnon", "RssFile"):
                out[key.lower().replace("rss", "rss_") + "_bytes"] = int(value.split()[0]) * 1024
        fds = [_fd_kind(p, root) for p in Path(f"/proc/{pid}/fd").iterdir()]
        out["fds"] = len(fds)
        out["fds_by_target"] = dict(sorted(Counter(fds).items()))
        names = [_comm(t) for t in Path(f"/proc/{pid}/task").iterdir()]
        out["threads_by_name"] = dict(sorted(Counter(names).items()))
    except OSError:
        pass
    if root is not None:
        chroma = root / ".memory" / "chroma"
        out["chroma_bytes"] = sum(p.stat().st_size for p in chroma.rglob("*") if p.is_file()) if chroma.is_dir() else 0
    return out


def chroma_pool(sample: dict[str, Any]) -> int:
    """Connections of Chroma's SQLite pool (its Rust core runs a thread per connection, named after sqlx)."""
    return int(sample.get("threads_by_name", {}).get("sqlx-sqlite-wor", 0))


def _fd_kind(fd: Path, root: Path | None) -> str:
    try:
        target = os.readlink(fd)
    except OSError:
        return "gone"
    if root is not None and target.startswith(str(root)):
        target = target[len(str(root)) + 1 :]
        parts = target.split("/")
        return "/".join(p if len(p) != 36 else "<segment>" for p in parts)  # Chroma's segment folders (uuids)
    return target.split(":")[0] if ":" in target else target


def _comm(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return "gone"


def call_for(n: int, rng: random.Random, topics: int) -> tuple[str, dict[str, Any]]:
    """The n-th call: mostly searches, sometimes a read, a listing or a status."""
    kind = n % 20
    if kind == 0:
        return "memory_status", {}
    if kind == 1:
        return "list_topics", {}
    if kind == 2:
        return "read_memory", {"path": f"topics/t{rng.randrange(topics):04d}.md", "start_line": 1, "end_line": 20}
    if kind % 2:
        return "search_exact", {"query": rng.choice([f"CODE_{rng.randrange(topics):04d}", rng.choice(WORDS)])}
    question = " ".join(rng.sample(WORDS, 4))
    return "search_memory", {"query": f"what did we decide about {question}?"}


class Changer:
    """Changes the files while the searches run: a rewrite every `every` calls, a create and a delete every 500."""

    def __init__(self, root: Path, topics: int, every: int, seed: int) -> None:
        self.root, self.topics, self.every = root, topics, every
        self.rng = random.Random(seed + 1)
        self.version = 0

    def after(self, n: int) -> None:
        if n % self.every == 0:
            self.version += 1
            i = self.rng.randrange(self.topics)
            (self.root / "topics" / f"t{i:04d}.md").write_text(topic(i, self.rng, self.version), encoding="utf-8")
        if n % 500 == 0:
            extra = self.root / "topics" / f"extra{n}.md"
            extra.write_text(topic(9000 + n, self.rng), encoding="utf-8")
            old = self.root / "topics" / f"extra{n - 500}.md"
            if old.exists():
                old.unlink()


async def settle(server: Any) -> None:
    """One call after an idle spell, then a moment's rest: the SDK (anyio) retires idle worker threads only
    when a call comes in, so this leaves one worker, and a checkpoint reads the same state every time."""
    await server.call("search_exact", {"query": "CODE_0001"})
    await anyio.sleep(1.0)


async def drive(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    changer = Changer(root, args.topics, args.edit_every, args.seed)
    samples: list[dict[str, Any]] = []
    errors = 0
    async with mcp_server(root, fake=args.fake) as (server, _marks):
        await wait_until_idle(server, timeout=1800)
        await anyio.sleep(args.idle_seconds)
        await settle(server)
        samples.append({"calls": 0, **server_resources(server.pid, root)})
        n = 0
        started = time.monotonic()
        while n < args.searches:
            batch = [call_for(n + i, rng, args.topics) for i in range(args.concurrency)]
            failed = 0

            async def one(tool: str, arguments: dict[str, Any]) -> None:
                nonlocal failed
                try:
                    await server.call(tool, arguments)
                except RuntimeError:
                    failed += 1

            async with anyio.create_task_group() as group:
                for tool, arguments in batch:
                    group.start_soon(one, tool, arguments)
            errors += failed
            for _ in batch:
                n += 1
                changer.after(n)
            if n % args.idle_every < args.concurrency or n in CHECKPOINTS:
                await anyio.sleep(args.idle_seconds)  # the SDK's idle worker threads retire
            if any(n - args.concurrency < c <= n for c in CHECKPOINTS if c <= args.searches):
                await anyio.sleep(args.idle_seconds)
                await settle(server)
                samples.append(
                    {"calls": n, "seconds": round(time.monotonic() - started), **server_resources(server.pid, root)}
                )
                log(f"{n} calls: {samples[-1]}")
    return {"samples": samples, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=20_000, help="tool calls in all (default 20,000)")
    parser.add_argument("--topics", type=int, default=200, help="topic files in the generated root")
    parser.add_argument("--concurrency", type=int, default=4, help="calls in flight at once")
    parser.add_argument("--edit-every", type=int, default=50, help="rewrite a topic every this many calls")
    parser.add_argument("--idle-every", type=int, default=2_500, help="an idle spell every this many calls")
    parser.add_argument("--idle-seconds", type=float, default=12.0, help="how long the client is idle then")
    parser.add_argument("--fake", action="store_true", help="bench/fake_server.py (FakeEmbedder), not the model")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, default=default_json_out("server_resources"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), args.topics, args.seed)
        result = anyio.run(drive, args, root)
    samples = result["samples"]
    rows = [
        (
            s["calls"],
            f"{s.get('rss_bytes', 0) / 2**20:.1f}",
            f"{s.get('rss_anon_bytes', 0) / 2**20:.1f}",
            s.get("fds"),
            s.get("threads"),
            chroma_pool(s),
            f"{s.get('chroma_bytes', 0) / 2**20:.1f}",
            s.get("seconds", ""),
        )
        for s in samples
    ]
    head = ("calls", "RSS MiB", "anon MiB", "fds", "threads", "Chroma pool", "Chroma MiB", "s")
    print(format_table(head, rows, "Server resources"))
    by_calls = {s["calls"]: s for s in samples}
    verdict: dict[str, Any] = {"errors": result["errors"]}
    if 5_000 in by_calls and 20_000 in by_calls:
        a, b = by_calls[5_000], by_calls[20_000]
        growth = (b["rss_bytes"] - a["rss_bytes"]) / a["rss_bytes"]
        own = {k: a.get(k, 0) - chroma_pool(a) for k in ("fds", "threads")}
        own_b = {k: b.get(k, 0) - chroma_pool(b) for k in ("fds", "threads")}
        verdict.update(
            rss_growth_5k_to_20k=growth,
            fds_same=a.get("fds") == b.get("fds"),
            threads_same=a.get("threads") == b.get("threads"),
            own_fds_same=own["fds"] == own_b["fds"],
            own_threads_same=own["threads"] == own_b["threads"],
        )
        print(
            f"\n5,000 -> 20,000 calls: RSS {100 * growth:+.2f} % (goal < 5 %), fds {a.get('fds')} -> {b.get('fds')}, "
            f"threads {a.get('threads')} -> {b.get('threads')} (goal: the same)"
        )
        print(
            f"without Chroma's SQLite pool (a thread and an fd per connection): fds {own['fds']} -> {own_b['fds']}, "
            f"threads {own['threads']} -> {own_b['threads']}"
        )
    print(f"tool errors: {result['errors']}")
    write_json(
        args.json, {"environment": environment(), "args": vars(args) | {"json": str(args.json)}, **result, **verdict}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
