"""Hostile input: any unicode (NUL, lone surrogates), FTS5 syntax, 100 KB queries, bad k, layers and dates to
both search tools, in process and over MCP; paths that try to leave the root for read_memory.

Every call answers (a list of hits, the text of a file inside the root) or fails with a MemoryServerError (a
tool error over MCP) whose message says what to do; the index stays intact and the server keeps serving."""

from __future__ import annotations

import functools
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_client import RawClient, connect, payload, wait_until_indexed

from memory_server import Memory, NotFoundError, PathRefusedError
from memory_server.errors import MemoryServerError
from memory_server.search.query import Hit
from memory_server.tool_results import ReadResult

HOSTILE = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
HUGE_RUNS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

LAYER_NAMES = ["topic", "session", "transcript"]
FTS_SYNTAX = [
    '"',
    '""',
    "'",
    "*",
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "NEAR(",
    "NEAR",
    "^",
    ":",
    "-",
    "{",
    "}",
    ",",
    "+",
    ".",
    "col:",
    "text:",
    "title:",
    " ",
    "\x00",
    "\ud800",
    "\udfff",
    "\udcff",
    "SAVE_CONFIG",
    "printer",
    "E-1042",
    "日本語",
    "🙂",
    "\u200b",
    "\ufeff",
    "%",
    "_",
    "\\",
    "';--",
]

any_char = st.characters(codec=None)  # every code point: NUL, controls, lone surrogates, unassigned
any_text = st.text(any_char, max_size=40)
fragments = st.lists(st.one_of(st.sampled_from(FTS_SYNTAX), any_text), min_size=1, max_size=12)
queries = st.one_of(any_text, fragments.map("".join), fragments.map(" ".join))


def _to_100_kb(text: str) -> str:
    """`text` repeated to at least 100,000 characters."""
    return (text or "x") * (100_000 // max(1, len(text)) + 1)


def _random_text(seed: int, size: int = 100_000) -> str:
    """`size` code points drawn from the whole range (surrogates included), from a seed hypothesis picks."""
    return "".join(map(chr, random.Random(seed).choices(range(0x110000), k=size)))


huge_queries = st.one_of(
    st.integers(0, 2**32).map(_random_text),
    fragments.map(" ".join).map(_to_100_kb),
    st.just("NEAR( " * 20_000),
    st.just('"' * 100_000),
)
ks = st.one_of(
    st.none(),
    st.integers(1, 50),
    st.sampled_from([0, -1, 51, -(2**63), 2**63, 10**100, 10**5000, -(10**5000)]),
    st.integers(),
    st.booleans(),
    st.floats(),
    st.text(max_size=3),
)
layers_args = st.one_of(
    st.none(),
    st.just([]),
    st.lists(st.sampled_from(LAYER_NAMES), max_size=4),
    st.lists(
        st.one_of(st.sampled_from(LAYER_NAMES), st.text(any_char, max_size=8), st.integers(), st.none()), max_size=4
    ),
    st.sampled_from(LAYER_NAMES),
    st.text(any_char, max_size=10),
    st.integers(),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
dates = st.one_of(
    st.none(),
    st.dates().map(str),
    st.sampled_from(
        ["2026-03-02", "2026-02-30", "0000-01-01", "9999-12-31", "2026-1-1", "", "2026-03-02\n", "२०२६-०१-०१"]
    ),
    st.text(any_char, max_size=20),
    st.integers(),
)


def answers_or_refuses(call, k: Any, layers: Any) -> list[Hit] | None:
    """Run one search: hits (a list of Hit that the JSON answer can carry), or a clear MemoryServerError."""
    try:
        hits = call()
    except MemoryServerError as exc:
        assert str(exc).strip(), f"{type(exc).__name__} with an empty message"
        return None
    if isinstance(hits, tuple):  # search_memory: (hits, mode)
        hits, mode = hits
        assert mode in ("hybrid", "semantic", "keyword")
    assert isinstance(hits, list) and all(isinstance(h, Hit) for h in hits)
    assert len(hits) <= (k if isinstance(k, int) and not isinstance(k, bool) else 50)
    if isinstance(layers, str):
        layers = [layers] if layers else None
    wanted = set(layers) if layers else {"topic", "session"}  # no layers: the default ones
    for h in hits:
        assert h.layer in wanted and not h.path.startswith("/") and ".." not in h.path.split("/")
        json.dumps(h.to_dict(), ensure_ascii=False).encode("utf-8")  # the answer must be valid UTF-8
    return hits


def assert_index_intact(m: Memory, chunks_before: int) -> None:
    assert m.fts.counts()["chunks"] == chunks_before
    hit = m.search_exact("E-1042", k=3)[0]
    assert (hit.path, hit.start_line, hit.match) == ("topics/printer.md", 14, "phrase")
    assert m.search_exact("SAVE_CONFIG", k=5, layers=["session"])[0].layer == "session"


# -- in process ---------------------------------------------------------------------------------------------


def test_search_exact_answers_any_input(memory: Memory):
    chunks = memory.fts.counts()["chunks"]

    @HOSTILE
    @given(query=queries, k=ks, layers=layers_args, after=dates, before=dates)
    def hostile(query, k, layers, after, before):
        answers_or_refuses(lambda: memory.search_exact(query, k, layers, after, before), k, layers)

    hostile()
    assert_index_intact(memory, chunks)


def test_search_memory_answers_any_input(fake_memory: Memory):
    chunks = fake_memory.fts.counts()["chunks"]

    @HOSTILE
    @given(query=queries, k=ks, layers=layers_args, after=dates, before=dates)
    def hostile(query, k, layers, after, before):
        answers_or_refuses(lambda: fake_memory.search_memory(query, k, layers, after, before), k, layers)

    hostile()
    assert_index_intact(fake_memory, chunks)
    hits, mode = fake_memory.search_memory("belt tension", k=3)
    assert mode == "hybrid" and hits


def test_100_kb_queries_answer_quickly(fake_memory: Memory):
    chunks = fake_memory.fts.counts()["chunks"]

    @HUGE_RUNS
    @given(query=huge_queries, k=st.sampled_from([1, 6, 50]))
    def hostile(query, k):
        assert len(query) >= 100_000
        for call in (fake_memory.search_exact, fake_memory.search_memory):
            started = time.monotonic()
            answers_or_refuses(lambda call=call: call(query, k), k, None)
            assert time.monotonic() - started < 10, f"{call.__name__} took too long on a 100 KB query"

    hostile()
    assert_index_intact(fake_memory, chunks)


def test_queries_that_look_like_fts5_syntax_still_find_the_literal(memory: Memory):
    operators = ['"', "*", "(", ")", "AND", "OR", "NOT", "NEAR(", "NEAR", "^", ":", "-", "{", "}", ",", "+"]
    noise = st.lists(st.sampled_from(operators), max_size=6)

    @HOSTILE
    @given(before=noise, after=noise)
    def hostile(before, after):
        # the literal inside operators: they are plain text, and the line that holds the literal is found
        hits = memory.search_exact(" ".join([*before, "E-1042", *after]), k=5)
        assert any((h.path, h.start_line) == ("topics/printer.md", 14) for h in hits), (before, after)
        if not before and not after:
            assert hits[0].match == "phrase"

    hostile()
    assert memory.search_exact('"E-1042"')[0].start_line == 14


# -- over MCP: one server for many examples -----------------------------------------------------------------


class Served:
    """A `memory-server serve` subprocess and an MCP session with it, callable from synchronous code."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, session: Any) -> None:
        self.portal, self.session = portal, session

    async def _call(self, name: str, args: dict[str, Any], timeout: float) -> Any:
        with anyio.fail_after(timeout):
            return await self.session.call_tool(name, args)

    def call(self, name: str, args: dict[str, Any], timeout: float = 60) -> Any:
        return self.portal.call(self._call, name, args, timeout)

    def wait_indexed(self, timeout: float = 60) -> dict:
        return self.portal.call(functools.partial(wait_until_indexed, self.session, semantic=False, timeout=timeout))


@contextmanager
def served(root: Path, errlog: Path) -> Iterator[Served]:
    # leaving the block closes the session, which ends the server (stdin closed, then terminated if need be)
    with open(errlog, "w") as err, anyio.from_thread.start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(connect(root, errlog=err)) as session:
            yield Served(portal, session)


OMIT = object()
utf8_char = st.characters(codec="utf-8")  # what a JSON client can send: everything but lone surrogates
utf8_text = st.text(utf8_char, max_size=40)
utf8_fragments = st.lists(
    st.one_of(st.sampled_from([f for f in FTS_SYNTAX if not 0xD800 <= ord(f[0]) <= 0xDFFF]), utf8_text),
    min_size=1,
    max_size=12,
)
mcp_queries = st.one_of(
    utf8_text,
    utf8_fragments.map("".join),
    utf8_fragments.map(" ".join),
    utf8_fragments.map(" ".join).map(_to_100_kb),
    st.one_of(st.integers(), st.none(), st.lists(st.integers(), max_size=2)),  # not a string at all
)
mcp_ks = st.one_of(
    st.just(OMIT),
    st.integers(1, 50),
    st.sampled_from([0, -1, 51, 2**63, 10**30, -(10**30)]),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.none(),
)
mcp_layers = st.one_of(
    st.just(OMIT),
    st.none(),
    st.lists(st.sampled_from(LAYER_NAMES), max_size=3),
    st.lists(st.one_of(st.sampled_from(LAYER_NAMES), utf8_text, st.integers()), max_size=3),
    utf8_text,
    st.integers(),
)
mcp_dates = st.one_of(st.just(OMIT), st.none(), st.dates().map(str), utf8_text, st.integers())


def tool_answers(result: Any, tool: str) -> None:
    """A result with hits, or a tool error whose message a model can read; never an internal error."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        assert text.strip(), f"{tool}: a tool error with no message"
        assert "internal error" not in text, f"{tool}: {text}"
        return
    got = payload(result)
    assert isinstance(got["hits"], list)
    for hit in got["hits"]:
        assert {"path", "start_line", "end_line", "layer", "text"} <= set(hit)


def test_search_tools_over_mcp_answer_any_input_and_keep_serving(root: Path, tmp_path: Path):
    errlog = tmp_path / "server.stderr"
    with served(root, errlog) as server:
        server.wait_indexed()

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
        @given(
            tool=st.sampled_from(["search_exact", "search_memory"]),
            query=mcp_queries,
            k=mcp_ks,
            layers=mcp_layers,
            after=mcp_dates,
            before=mcp_dates,
        )
        def hostile(tool, query, k, layers, after, before):
            args = {"query": query, "k": k, "layers": layers, "after": after, "before": before}
            tool_answers(server.call(tool, {key: v for key, v in args.items() if v is not OMIT}), tool)

        try:
            hostile()
        except BaseException:
            print(errlog.read_text()[-4000:], file=sys.stderr)
            raise
        status = payload(server.call("memory_status", {}))
        assert status["files"] > 0 and status["keyword_index"]["fresh"]
        hits = payload(server.call("search_exact", {"query": "E-1042", "k": 3}))["hits"]
        assert hits[0]["path"] == "topics/printer.md" and hits[0]["match"] == "phrase"
        got = payload(server.call("search_memory", {"query": "tightening the drive belt", "k": 3}))
        assert got["hits"] and got["mode"] in ("hybrid", "keyword")


# -- raw JSON-RPC: what an SDK client cannot even send ---------------------------------------------------


def tools_call(rid: int, tool: str, arguments_json: str) -> str:
    """A tools/call line with `arguments_json` inserted verbatim (so "\\ud800" stays an escape)."""
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
        f'"params":{{"name":"{tool}","arguments":{arguments_json}}}}}'
    )


RAW_CALLS = [
    ("search_exact", r'{"query":"bad \ud800 surrogate","k":3}'),
    ("search_exact", r'{"query":"\udc00\ud800 reversed pair","k":3}'),
    ("search_exact", r'{"query":"\udfff"}'),
    ("search_memory", r'{"query":"belt \ud800 tension","k":3}'),
    ("search_exact", r'{"query":"SAVE\u0000CONFIG","k":3}'),
    ("search_memory", r'{"query":"\u0000\u0000","k":3}'),
    ("search_exact", r'{"query":"x","layers":["\ud800"]}'),
    ("search_exact", r'{"query":"x","after":"\ud800"}'),
    ("read_memory", r'{"path":"topics/\ud800.md"}'),
    ("read_memory", r'{"path":"topics/\u0000printer.md"}'),
    ("search_exact", '{"query":"x","k":' + "9" * 5000 + "}"),
    ("search_exact", '{"query":"x","k":1e308}'),
    ("search_exact", '{"query":"' + "A" * 100_000 + '"}'),
]


def test_raw_json_rpc_with_nul_and_lone_surrogates_gets_answers(root: Path, tmp_path: Path):
    with open(tmp_path / "server.stderr", "wb") as errlog:
        server = RawClient(root, errlog)  # initialize answered, initialized sent
        try:
            server.wait_until_indexed()
            # Lines that are not valid requests get a JSON-RPC error answer (id null when it cannot be read)
            server.send("this line is not JSON at all")
            server.send('{"jsonrpc":"2.0","id":')
            server.send("[]")
            server.send('{"jsonrpc":"2.0","id":77}')
            server.send('{"jsonrpc":"2.0","id":78,"method":5}')
            assert not server.wait_for({77, 78}, 30), "no answer to an invalid request with an id"
            assert [server.responses[i]["error"]["code"] for i in (77, 78)] == [-32600, -32600]
            assert "invalid request" in server.responses[77]["error"]["message"]
            assert [e["error"]["code"] for e in server.errors_without_id] == [-32700, -32700, -32600]
            assert "not valid JSON" in server.errors_without_id[0]["error"]["message"]
            ids = set()
            for n, (tool, arguments) in enumerate(RAW_CALLS, start=100):
                server.send(tools_call(n, tool, arguments))
                ids.add(n)
            server.send_request("tools/call", {"name": "memory_status", "arguments": {}}, rid=999)
            assert not server.wait_for({999}, 60), "memory_status got no answer after the hostile lines"
            unanswered = server.wait_for(ids, 20)
            assert not unanswered, "no response to: " + "; ".join(
                f"{RAW_CALLS[i - 100][0]} {RAW_CALLS[i - 100][1][:60]}" for i in sorted(unanswered)
            )
            for n in ids:
                message = server.responses[n]
                if "error" in message:
                    assert message["error"].get("message"), message
                elif message["result"].get("isError"):
                    text = "".join(c.get("text", "") for c in message["result"]["content"])
                    assert text.strip() and "internal error" not in text, (RAW_CALLS[n - 100], text)
            found = server.responses[104]["result"]
            assert not found.get("isError") and "topics/printer.md" in json.dumps(found)  # NUL read as a space
            assert server.proc.poll() is None, "the server exited"
            server.send_request("tools/call", {"name": "search_exact", "arguments": {"query": "E-1042"}}, rid=1000)
            assert not server.wait_for({1000}, 30)
            assert "topics/printer.md" in json.dumps(server.responses[1000]["result"])
            assert server.proc.stdin is not None
            server.proc.stdin.close()  # the client goes away: the server ends by itself
            assert server.proc.wait(30) == 0
        finally:
            server.kill()


# -- read_memory: paths ----------------------------------------------------------------------------------


SECRET = "SECRET_OUTSIDE_THE_ROOT"


@pytest.fixture
def hostile_root(root: Path, tmp_path: Path) -> Path:
    """The root, plus ways out of it: symlinks (file, folder, chain, to the parent), a hard link, a device,
    a FIFO and a folder named like a file; and secrets next to the root."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n")
    (tmp_path / "secret.md").write_text(f"# Secret\n\n{SECRET}\n")
    topics = root / "topics"
    os.symlink(outside / "secret.md", topics / "link.md")
    os.symlink("link.md", topics / "chain.md")
    os.symlink(outside, topics / "dirlink")
    os.symlink("../..", topics / "up")
    os.link(outside / "secret.md", topics / "hard.md")
    os.symlink("/dev/null", topics / "null.md")
    os.symlink("/dev/zero", topics / "zero.md")
    os.mkfifo(topics / "fifo.md")
    (topics / "dir.md").mkdir()
    return root


SEGMENTS = [
    "..",
    ".",
    "",
    "topics",
    "printer.md",
    "link.md",
    "chain.md",
    "dirlink",
    "up",
    "hard.md",
    "null.md",
    "zero.md",
    "fifo.md",
    "dir.md",
    "secret.md",
    "outside",
    ".memory",
    "index.sqlite3",
    "sessions",
    "MEMORY.md",
    "~",
    "~root",
    "etc",
    "passwd",
    "\x00",
    "\ud800",
    "\udcff",
    "a" * 300,
    "transcript:",
    "\\..",
    "%2e%2e",
    "..\u2215..",
    "\uff0e\uff0e",
]
paths = st.one_of(
    st.text(any_char, max_size=40),
    st.lists(st.one_of(st.sampled_from(SEGMENTS), st.text(any_char, max_size=6)), min_size=1, max_size=8).map("/".join),
    st.tuples(
        st.sampled_from(["/", "~/", "transcript:", "./", "//", "topics/../"]),
        st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map("/".join),
    ).map("".join),
    st.sampled_from(
        ["/etc/passwd", "/dev/null", "/proc/self/environ", "//etc/passwd", "\\etc\\passwd", "file:///etc/passwd"]
    ),
    st.integers(250, 5000).map(lambda n: "a" * n),
    st.integers(1, 3000).map(lambda n: "/".join(["a"] * n)),
    st.integers(1, 60).map(lambda n: "../" * n + "etc/passwd"),
    st.integers(1, 60).map(lambda n: "topics/" + "../" * n + "secret.md"),
)
lines = st.one_of(st.none(), st.integers(-3, 30), st.sampled_from([2**63, 10**30]))


def read_or_refuse(m: Memory, path: Any, start: Any = None, end: Any = None) -> ReadResult | None:
    """read_memory's contract: text of a file inside the root, or PathRefusedError / NotFoundError."""
    try:
        out = m.read(path, start, end)
    except (PathRefusedError, NotFoundError) as exc:
        assert str(exc).strip()
        return None
    real = (m.root.path / out.path).resolve()
    assert m.root.path in real.parents, f"{path!r} read {real}, outside the root"
    assert SECRET not in out.text, f"{path!r} returned text from outside the root"
    expected = real.read_bytes().decode("utf-8", "replace").splitlines()
    assert out.text == "\n".join(expected[out.start_line - 1 : out.end_line])
    return out


def test_read_memory_any_path_stays_inside_the_root(hostile_root: Path):
    m = Memory(hostile_root, keyword_only=True)
    m.index()

    @HOSTILE
    @given(path=paths, start=lines, end=lines)
    def hostile(path, start, end):
        done = threading.Event()
        result: dict = {}

        def target() -> None:
            try:
                result["out"] = read_or_refuse(m, path, start, end)
            except BaseException as exc:
                result["error"] = exc
            done.set()

        t = threading.Thread(target=target, daemon=True)
        t.start()
        if not done.wait(20):  # a read stuck on the FIFO: let it go, then fail
            fd = os.open(hostile_root / "topics" / "fifo.md", os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            raise AssertionError(f"read_memory({path!r}) hung")
        if "error" in result:
            raise result["error"]

    try:
        hostile()
    finally:
        m.close()


@pytest.mark.parametrize(
    "path,error",
    [
        # (a direct symlink out, a symlinked folder, a hard link, /dev/zero and a folder: test_read_confinement.py)
        ("topics/chain.md", "outside"),  # a symlink to a symlink that leads out
        ("topics/up/secret.md", "outside"),  # a symlink to the root's parent
        ("topics/link.md/..", "outside"),  # through a symlink, then up
        ("topics/null.md", "outside"),  # /dev/null through a symlink inside the root
        ("topics/fifo.md", "not a regular file"),  # a FIFO: refused without being opened (no hang)
        ("topics/dir.md", "not a regular file"),  # a folder named like a Markdown file
    ],
)
def test_more_ways_out_of_the_root_are_refused(hostile_root: Path, path: str, error: str):
    m = Memory(hostile_root, keyword_only=True)
    try:
        done = threading.Event()
        caught: list[BaseException] = []

        def target() -> None:
            try:
                m.read(path)
            except BaseException as exc:
                caught.append(exc)
            done.set()

        threading.Thread(target=target, daemon=True).start()
        if not done.wait(20):
            os.close(os.open(hostile_root / "topics" / "fifo.md", os.O_WRONLY | os.O_NONBLOCK))
            raise AssertionError(f"read_memory({path!r}) hung")
        assert caught and isinstance(caught[0], PathRefusedError), caught
        assert error in str(caught[0])
    finally:
        m.close()


# -- bounded work: query length, list_topics and memory_status sizes -------------------------------------------


def test_a_10_mb_query_is_refused_at_once(fake_memory: Memory):
    query = "belt tension " * 800_000
    for call in (fake_memory.search_exact, fake_memory.search_memory):
        started = time.monotonic()
        with pytest.raises(MemoryServerError, match="characters, over the 10,000-character limit"):
            call(query, 3)
        assert time.monotonic() - started < 2, call.__name__
    assert fake_memory.search_exact("belt tension " * 700, 3) is not None  # under the limit: answered


def many_topics(root: Path, n: int) -> None:
    for i in range(n):
        (root / "topics" / f"t{i:05d}.md").write_text(f"# Topic {i}\n\nmanytopic{i} body\n", encoding="utf-8")
    for i in range(60):
        (root / "topics" / f"bin{i:02d}.md").write_bytes(b"\x00binary")


def test_memory_status_and_list_topics_are_bounded(root: Path, tmp_path: Path):
    many_topics(root, 1500)
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        status = m.status()
        assert status.problem_count == 60 and len(status.problem_files) == 20
        index = status.memory_index
        assert index is not None and index.get("unlisted_count", 0) >= 1500 and len(index["unlisted_topics"]) == 20
        assert len(status.notes) <= 21
        assert len(status.model_dump_json(exclude_none=True)) < 20_000
        assert len(m.list_topics(limit=200)) == 200 and m.topic_count() >= 1560
    finally:
        m.close()
    with served(root, tmp_path / "server.stderr") as server:
        server.wait_indexed()
        topics = payload(server.call("list_topics", {}))
        assert len(topics["topics"]) == 200 and topics["total"] >= 1560 and "search_memory" in topics["note"]
        assert len(json.dumps(topics)) < 40_000
        served_status = payload(server.call("memory_status", {}))
        assert served_status["problem_count"] == 60 and len(json.dumps(served_status)) < 20_000


@pytest.mark.parametrize("hook", ["session-start", "session-end", "pre-compact"])
def test_deeply_nested_hook_json_is_ignored_with_a_message(root: Path, hook: str):
    from conftest import run_cli

    for deep in ("[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000):
        done = run_cli("hook", hook, "--root", str(root), input=deep)
        assert done.returncode == 0, done.stderr[-2000:]  # a hook never fails the session
        assert "Traceback" not in done.stderr and "unreadable hook input" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
