"""Settings that reach outside the root come only from the user, never from a repository's memory.yaml.

Anyone who can commit to a repository can change its memory.yaml: it may not make another project's
transcripts searchable, nor send the index (embeddings and file paths) to a server. The same settings from
the user's own config file or environment are taken.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from memory_server import ConfigError, Memory
from memory_server.files.scaffold import init_root
from memory_server.settings import claude_project_dir, load_settings


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_SERVER_CONFIG", str(tmp_path / "user.yaml"))
    (tmp_path / "user.yaml").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for name in ("MEMORY_TRANSCRIPTS_DIR", "MEMORY_VECTORS_URL", "MEMORY_VECTORS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "repo"
    init_root(root)
    return root


def other_project(tmp_path: Path) -> Path:
    folder = tmp_path / "claude" / "projects" / "-home-dev-other-project"
    folder.mkdir(parents=True)
    (folder / "0000.jsonl").write_text('{"type":"user","message":{"role":"user","content":"other"}}\n')
    return folder


def test_a_repository_may_not_point_transcripts_at_another_project(repo: Path, tmp_path: Path) -> None:
    other = other_project(tmp_path)
    (repo / "memory.yaml").write_text(f"transcripts:\n  dir: {other}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="transcripts.dir") as err:
        load_settings(repo)
    assert "user config" in str(err.value) and "MEMORY_TRANSCRIPTS_DIR" in str(err.value)
    (repo / "memory.yaml").write_text("transcripts:\n  dir: ../../..\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="transcripts.dir"):
        load_settings(repo)


def test_a_repository_may_name_its_own_transcript_folder(repo: Path) -> None:
    own = claude_project_dir(repo)
    (repo / "memory.yaml").write_text(f"transcripts:\n  dir: {own}\n", encoding="utf-8")
    assert load_settings(repo).transcripts.dir == str(own)


def test_the_user_may_point_transcripts_anywhere(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = other_project(tmp_path)
    (tmp_path / "user.yaml").write_text(f"transcripts:\n  dir: {other}\n", encoding="utf-8")
    assert load_settings(repo).transcripts.dir == str(other)
    (tmp_path / "user.yaml").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(other))
    assert load_settings(repo).transcripts.dir == str(other)


@pytest.mark.parametrize(
    "yaml_text",
    [
        "vectors:\n  backend: http\n  url: http://127.0.0.1:{port}\n",
        "vectors:\n  url: http://127.0.0.1:{port}\n",
        "vectors:\n  token: abc\n",
    ],
)
def test_a_repository_may_not_send_the_index_to_a_server(repo: Path, yaml_text: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        (repo / "memory.yaml").write_text(yaml_text.format(port=port), encoding="utf-8")
        with pytest.raises(ConfigError, match="may not send the index to a server") as err:
            Memory(repo, keyword_only=True)
        assert "MEMORY_VECTORS_URL" in str(err.value)
        lenient = Memory.open_lenient(repo, keyword_only=True)
        try:
            assert "may not send" in str(lenient.status().config_error)
        finally:
            lenient.close()
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing connected to the "server"
    finally:
        listener.close()


def test_the_user_may_choose_the_http_backend(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "user.yaml").write_text("vectors:\n  backend: http\n  url: http://127.0.0.1:9\n", encoding="utf-8")
    settings = load_settings(repo)
    assert settings.vectors.backend == "http" and settings.vectors.url == "http://127.0.0.1:9"
    (tmp_path / "user.yaml").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("MEMORY_VECTORS_URL", "http://127.0.0.1:9")
    assert load_settings(repo).vectors.backend == "http"
