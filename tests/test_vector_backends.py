"""The same vector-index suite against the embedded persistent Chroma and a real `chroma run` server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import write

from memory_server import Memory, VectorStoreError
from memory_server.index.embedder import MiniLMEmbedder
from memory_server.settings import Settings
from memory_server.testing import FakeEmbedder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """A real Chroma server on loopback, started with `chroma run --path TMP --port FREE`."""
    chroma = shutil.which("chroma", path=os.path.dirname(sys.executable)) or shutil.which("chroma")
    assert chroma, "the `chroma` command (installed with chromadb) is needed for this test"
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "wb")
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
            break
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"chroma run did not start: {(data / 'server.log').read_text()[-2000:]}") from exc
            time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


@pytest.fixture(params=["persistent", "http"])
def settings(request) -> Settings:
    s = Settings()
    s.vectors.collection = "t" + uuid.uuid4().hex[:12]  # tests share one server: one collection each
    if request.param == "http":
        s.vectors.backend = "http"
        s.vectors.url = request.getfixturevalue("chroma_server")
    return s


def ids_match(m: Memory) -> bool:
    assert m.vectors is not None
    return m.vectors.ids() == {cid for cid, _ in m.fts.iter_chunk_ids()}


def test_incremental_changes_reach_the_vector_index(root: Path, settings: Settings):
    m = Memory(root, settings=settings, embedder=FakeEmbedder())
    m.index()
    assert ids_match(m)
    write(root, "topics/new.md", "# New\n\nPelicans nest on the harbour wall.\n")
    m.index()
    assert ids_match(m)
    hits, mode = m.search_memory("pelicans harbour", k=1)
    assert mode == "hybrid" and hits[0].path == "topics/new.md"
    write(root, "topics/new.md", "# New\n\nCormorants dry their wings on the pier.\n")
    m.index()
    assert ids_match(m)
    os.rename(root / "topics/new.md", root / "topics/birds.md")
    m.index()
    assert ids_match(m)
    assert m.search_memory("cormorants pier", k=1)[0][0].path == "topics/birds.md"
    (root / "topics/birds.md").unlink()
    m.index()
    assert ids_match(m)
    m.index(rebuild=True)
    assert ids_match(m)
    m.close()


def test_paraphrase_and_precedence_with_the_real_model(root: Path, settings: Settings):
    write(root, "topics/deploy.md", "---\ntitle: Deploy\n---\n# Deploy\n\nStaging is deployed every Friday at noon.\n")
    write(
        root,
        "sessions/compressed/2026/2026-11-01-bbbb2222-deploy.md",
        "---\nstarted: 2026-11-01\n---\n# Deploy\n\nStaging is deployed every Friday at noon.\n",
    )
    m = Memory(root, settings=settings, embedder=MiniLMEmbedder())
    m.index()
    hits, mode = m.search_memory("on which weekday does the pre-production environment go out?", k=3)
    assert mode == "hybrid" and hits[0].path == "topics/deploy.md"
    hits, _ = m.search_memory("how taut is the X axis strap?", k=1, layers=["topic"])
    assert hits[0].path == "topics/printer.md"
    m.close()


def test_unreachable_server_is_a_clear_error_and_search_falls_back(root: Path):
    s = Settings()
    s.vectors.backend = "http"
    s.vectors.url = f"http://127.0.0.1:{free_port()}"
    m = Memory(root, settings=s, embedder=FakeEmbedder())
    with pytest.raises(VectorStoreError, match="check it is running"):
        m.index()
    m.index(vectors=False)
    hits, mode = m.search_memory("SAVE_CONFIG")
    assert mode == "keyword" and hits
    assert "check it is running" in str(m.status().semantic_index.error)
    m.close()
