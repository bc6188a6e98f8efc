"""The running server: handshake before the model loads, live re-indexing by the watcher, no network."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import anyio
import filelock
from conftest import write
from mcp_client import connect, payload

from memory_server import Memory

POLL_SECONDS = 30.0


async def status_of(s) -> dict:
    return payload(await s.call_tool("memory_status", {}))


async def until(predicate, s, what: str, timeout: float = POLL_SECONDS):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await predicate(s)
        if last:
            return last
        await anyio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; status: {await status_of(s)}")


async def settled(s) -> dict | None:
    """Status once both indices hold exactly the files on disk."""
    st = await status_of(s)
    sem = st["semantic_index"]
    # `vectors` is left out while the vector store is not open yet: not settled, ask again
    ok = st["keyword_index"]["fresh"] and sem.get("pending_files") == 0 and sem.get("vectors") == st["chunks"]
    return st if ok else None


def test_handshake_answers_before_the_model_loads(root: Path):
    # Build the keyword index first, then hold the index writer lock as another process would: the server
    # cannot start its vector pass, so nothing loads the model; the handshake and keyword tools must answer.
    m = Memory(root, keyword_only=True)
    m.index()
    m.close()
    lock = filelock.FileLock(str(root / ".memory" / "index.lock"))
    lock.acquire()

    async def main() -> None:
        started = time.monotonic()
        async with connect(root) as s:
            tools = await s.list_tools()
            assert {t.name for t in tools.tools} >= {"search_memory", "search_exact"}
            st = await status_of(s)
            assert st["semantic_index"]["model_loaded"] is False
            hits = payload(await s.call_tool("search_exact", {"query": "SAVE_CONFIG"}))["hits"]
            assert hits
            lock.release()
            st = await until(settled, s, "the vector pass after the lock is released")
            assert st["semantic_index"]["model_loaded"] is True
            got = payload(await s.call_tool("search_memory", {"query": "tighten the belt"}))
            assert got["mode"] == "hybrid" and got["hits"]
        assert time.monotonic() - started < 120

    try:
        anyio.run(main)
    finally:
        if lock.is_locked:
            lock.release()


def test_watcher_follows_create_edit_rename_delete_and_save_by_rename(root: Path):
    async def find(s, token: str) -> list[dict]:
        return payload(await s.call_tool("search_exact", {"query": token, "k": 3}))["hits"]

    async def main() -> None:
        async with connect(root) as s:
            await until(settled, s, "the initial index")

            write(root, "topics/live.md", "# Live\n\nThe canary token is OKAPI_7731.\n")

            async def created(s):
                hits = await find(s, "OKAPI_7731")
                return hits and hits[0]["path"] == "topics/live.md" and await settled(s)

            await until(created, s, "a created file")
            sem = payload(await s.call_tool("search_memory", {"query": "canary token OKAPI_7731", "k": 1}))
            assert sem["hits"][0]["path"] == "topics/live.md" and sem["mode"] == "hybrid"

            write(root, "topics/live.md", "# Live\n\nThe canary token is now NARWHAL_5512.\n")

            async def edited(s):
                return await find(s, "NARWHAL_5512") and not await find(s, "OKAPI_7731") and await settled(s)

            await until(edited, s, "an edited file")

            os.rename(root / "topics/live.md", root / "topics/moved.md")

            async def renamed(s):
                hits = await find(s, "NARWHAL_5512")
                return hits and hits[0]["path"] == "topics/moved.md" and len(hits) == 1 and await settled(s)

            await until(renamed, s, "a renamed file")

            # an editor's save: write a temp file, then rename it over the original
            tmp = root / "topics" / ".moved.md.swp"
            tmp.write_text("# Live\n\nSaved by rename: QUOKKA_9001.\n")
            os.replace(tmp, root / "topics/moved.md")

            async def saved(s):
                return await find(s, "QUOKKA_9001") and not await find(s, "NARWHAL_5512") and await settled(s)

            await until(saved, s, "a save-by-rename")

            (root / "topics/moved.md").unlink()

            async def deleted(s):
                return not await find(s, "QUOKKA_9001") and await settled(s)

            st = await until(deleted, s, "a deleted file")
            assert st["files_by_layer"] == {"topic": 4, "session": 1}

            # a new session folder appearing later is watched too
            write(root, "sessions/compressed/2027/2027-01-02-ffff0000-new-year.md", "# New year\n\nWALRUS_4242\n")

            async def new_folder(s):
                return await find(s, "WALRUS_4242") and await settled(s)

            await until(new_folder, s, "a file in a new folder")

    anyio.run(main)


def test_server_works_with_no_network_at_all(root: Path):
    """Under `unshare -rn` the process has no network interface but loopback-less isolation; it must work."""
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is needed for the no-network test: apt-get install util-linux"
    home = root.parent / "home"
    home.mkdir()

    async def main() -> None:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import stdio_client
        from mcp_client import server_params

        params = server_params(root, env={"HOME": str(home), "HF_HUB_OFFLINE": "0"})
        params.args = ["-rn", params.command, *params.args]
        params.command = unshare
        async with stdio_client(params) as (read, write_):
            async with ClientSession(read, write_) as s:
                await s.initialize()
                await until(settled, s, "indexing without network")
                got = payload(await s.call_tool("search_memory", {"query": "how tight is the X belt?"}))
                assert got["mode"] == "hybrid" and got["hits"][0]["path"] == "topics/printer.md"
                assert payload(await s.call_tool("search_exact", {"query": "E-1042"}))["hits"]

    anyio.run(main)
