"""Helpers shared by the benchmark commands in bench/ (not a command itself).

- where the benchmark data and the results live;
- `--set section.key=value` settings overrides, validated by the project's own settings code;
- percentiles, tables, JSON results;
- an MCP stdio client for a real `memory-server serve` subprocess, with its pid (for RSS).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memory_server.settings import Settings, apply_overrides

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DATA_ENV = "MEMORY_BENCH_DATA"
SHARED_ENV = "MEMORY_SERVER_SHARED"  # the data beside the repository, as the tests name it (tests/conftest.py)


# -- locations ----------------------------------------------------------------------------------------


def shared_dir() -> Path:
    """The data beside the repository: $MEMORY_SERVER_SHARED, else <repo>/../shared (as the tests read it)."""
    shared = os.environ.get(SHARED_ENV)
    return Path(shared).expanduser() if shared else Path(__file__).resolve().parents[2] / "shared"


def data_dir() -> Path:
    """The benchmark data folder: $MEMORY_BENCH_DATA, else $MEMORY_SERVER_SHARED/bench, else
    <repo>/../shared/bench."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    return shared_dir() / "bench"


def default_json_out(name: str) -> Path:
    return RESULTS_DIR / f"{name}.json"


def server_command(root: Path, fake: bool = False) -> tuple[str, list[str]]:
    """How to start the server on `root`: the venv's `memory-server serve` (else the one on PATH); with
    `fake`, bench/fake_server.py (the same server code with FakeEmbedder)."""
    if fake:
        return sys.executable, [str(BENCH_DIR / "fake_server.py"), "--root", str(root)]
    candidate = Path(sys.executable).parent / "memory-server"
    return (str(candidate) if candidate.exists() else "memory-server"), ["serve", "--root", str(root)]


def source_state() -> dict[str, Any]:
    """Which code was measured: git HEAD, and a hash of memory_server/**/*.py as it is on disk (others
    may be editing it, uncommitted)."""
    import subprocess

    digest = hashlib.sha256()
    for path in sorted((REPO_DIR / "memory_server").rglob("*.py")):
        digest.update(str(path.relative_to(REPO_DIR)).encode() + b"\0" + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_DIR), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_DIR), "status", "--porcelain", "memory_server"], capture_output=True, text=True
        ).stdout
    except OSError:
        head, dirty = "", ""
    return {"git_head": head, "src_dirty": bool(dirty.strip()), "src_sha256": digest.hexdigest()[:16]}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- settings -----------------------------------------------------------------------------------------


def parse_override(text: str) -> tuple[str, str, Any]:
    """'ranking.rrf_k=30' -> ('ranking', 'rrf_k', 30). The value is read as YAML (numbers, true/false)."""
    if "=" not in text or "." not in text.split("=", 1)[0]:
        raise ValueError(f"override {text!r} must look like section.key=value, e.g. ranking.rrf_k=30")
    name, raw = text.split("=", 1)
    section, key = name.strip().split(".", 1)
    return section, key, yaml.safe_load(raw)


def add_set_option(parser: argparse.ArgumentParser, example: str = "ranking.rrf_k=30", scope: str = "") -> None:
    """The `--set SECTION.KEY=VALUE` option every benchmark takes (read with `parse_override`)."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help=f"settings override{scope}, e.g. {example} (repeatable)",
    )


def overrides_to_mapping(overrides: Sequence[tuple[str, str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for section, key, value in overrides:
        out.setdefault(section, {})[key] = value
    return out


def make_settings(*override_sets: Sequence[tuple[str, str, Any]]) -> Settings:
    """Default settings with each set of overrides applied in order (the project's validation applies)."""
    settings = Settings()
    for overrides in override_sets:
        if overrides:
            apply_overrides(settings, overrides_to_mapping(overrides), source="--set")
    return settings


def flat_overrides(overrides: Sequence[tuple[str, str, Any]]) -> dict[str, Any]:
    return {f"{s}.{k}": v for s, k, v in overrides}


# -- statistics and output ----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """Mean, p50, p95 and max in milliseconds, with the count."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else 0.0,
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "max_ms": round(max(ms), 3) if ms else 0.0,
    }


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """A plain-text table; floats get 3 decimals."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    text_rows = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)))
    lines.append("  ".join("-" * w for w in widths))
    for row in text_rows:
        lines.append("  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths, strict=False)))
    return "\n".join(lines)


def _numeric(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def environment() -> dict[str, Any]:
    """Where the numbers were measured."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg_at_write": list(os.getloadavg()),
        "source": source_state(),
    }


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def log(message: str) -> None:
    """Progress messages go to stderr so stdout stays the tables."""
    print(message, file=sys.stderr, flush=True)


# -- sizes and processes ------------------------------------------------------------------------------


def tree_size(path: Path) -> dict[str, int]:
    """Apparent bytes and allocated bytes (st_blocks) of every file under `path`."""
    apparent = allocated = files = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return {"apparent_bytes": apparent, "allocated_bytes": allocated, "files": files}


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process in bytes, from /proc/<pid>/status."""
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def child_pids(pid: int | None = None) -> set[int]:
    """Direct children of a process (this one by default), from /proc/<pid>/task/*/children."""
    pid = os.getpid() if pid is None else pid
    found: set[int] = set()
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return found
    for task in tasks.iterdir():
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# -- a real server over MCP stdio ---------------------------------------------------------------------


@dataclass
class ServerHandle:
    """A connected `memory-server serve` subprocess: the MCP session, its pid and when it was spawned."""

    session: Any
    pid: int | None
    spawned: float  # time.perf_counter() just before the process was started

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; its structured result, or RuntimeError with the tool's error text."""
        result = await self.session.call_tool(tool, arguments)
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise RuntimeError(f"{tool} failed: {text}")
        if result.structured_content is not None:
            return dict(result.structured_content)
        return dict(json.loads(result.content[0].text))


@asynccontextmanager
async def mcp_server(
    root: Path, *, errlog: Any = None, env: dict[str, str] | None = None, initialize: bool = True, fake: bool = False
) -> AsyncIterator[tuple[ServerHandle, dict[str, float]]]:
    """Start `memory-server serve --root ROOT` (with `fake`: bench/fake_server.py) through the MCP SDK's
    stdio client.

    Yields (handle, marks) where marks holds seconds since spawn for `initialize` (when asked).
    Server logs go to `errlog` (default: /dev/null).
    """
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args = server_command(root, fake)
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(root))
    sink = errlog if errlog is not None else open(os.devnull, "w")
    before = child_pids()
    marks: dict[str, float] = {}
    try:
        spawned = time.perf_counter()
        async with stdio_client(params, errlog=sink) as (read, write):
            new = sorted(child_pids() - before)
            pid = new[0] if len(new) == 1 else next((p for p in new if "serve" in cmdline(p)), None)
            async with ClientSession(read, write) as session:
                if initialize:
                    await session.initialize()
                    marks["initialize"] = time.perf_counter() - spawned
                yield ServerHandle(session, pid, spawned), marks
    finally:
        if errlog is None:
            sink.close()


async def wait_until_idle(
    server: ServerHandle, timeout: float = 3600.0, poll: float = 0.2, settle: float = 1.0
) -> dict[str, Any]:
    """Poll memory_status until background indexing is idle with nothing pending, and stays so for
    `settle` seconds (the server runs a keyword pass, then a vector pass); the last status."""
    import anyio

    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while True:
        status = await server.call("memory_status", {})
        idle = status.get("indexing", {}).get("stage") == "idle"
        fresh = status.get("keyword_index", {}).get("fresh")
        if idle and fresh and not status.get("semantic_index", {}).get("pending_files"):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= settle:
                return status
        else:
            quiet_since = None
        if time.monotonic() > deadline:
            raise TimeoutError(f"server still indexing after {timeout:.0f}s: {status.get('indexing')}")
        await anyio.sleep(poll)


def write_root(root: Path, files: dict[str, str]) -> int:
    """Make `root` hold exactly `files` under topics/ and sessions/ (writing only what differs, so the index
    re-reads only those), and make sure topics/ exists (it marks the folder as a memory root)."""
    written = 0
    for rel, text in files.items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written += 1
    for folder in ("topics", "sessions"):
        if (root / folder).is_dir():
            for stale in (root / folder).rglob("*.md"):
                if stale.relative_to(root).as_posix() not in files:
                    stale.unlink()
    (root / "topics").mkdir(parents=True, exist_ok=True)
    return written
