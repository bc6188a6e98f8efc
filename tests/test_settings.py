"""Settings are typed: a bad memory.yaml is refused when it is loaded, naming the key, the value and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_server import ConfigError
from memory_server.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMORY_SERVER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    for name in ("MEMORY_TRANSCRIPTS_DIR", "MEMORY_VECTORS_URL", "MEMORY_VECTORS_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def load(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "memory.yaml").write_text(text, encoding="utf-8")
    return load_settings(tmp_path)


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("search:\n  max_k: 0\n", ["search.max_k", "0", "greater than or equal to 1"]),
        ("search:\n  default_k: 100\n  max_k: 50\n", ["default_k (100)", "max_k (50)"]),
        ("ranking:\n  fusion: bogus\n", ["ranking.fusion", "'bogus'", "'score' or 'rrf'"]),
        ("index:\n  max_chunk_chars: -5\n", ["index.max_chunk_chars", "-5", "greater than or equal to 50"]),
        ("search:\n  defualt_k: 3\n", ["unknown setting search.defualt_k", "default_k"]),
        ("serch:\n  default_k: 3\n", ["unknown section 'serch'", "search"]),
        ("search:\n  default_k: '5'\n", ["search.default_k", "'5'", "integer"]),
        ("search: 5\n", ["section search must be a mapping"]),
        ("- a list\n", ["must be a mapping of sections"]),
    ],
)
def test_bad_values_are_refused_at_load_with_key_value_and_range(
    tmp_path: Path, yaml_text: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, yaml_text)
    message = str(caught.value)
    assert str(tmp_path / "memory.yaml") in message
    for fragment in expected:
        assert fragment in message, message


def test_good_values_are_taken(tmp_path: Path) -> None:
    settings = load(tmp_path, "search:\n  default_k: 3\n  max_k: 20\nranking:\n  fusion: rrf\n")
    assert (settings.search.default_k, settings.search.max_k, settings.ranking.fusion) == (3, 20, "rrf")
    # Sections not named keep their defaults.
    assert settings.index.max_chunk_chars == Settings().index.max_chunk_chars


def test_a_setting_given_as_a_whole_section_keeps_the_other_defaults(tmp_path: Path) -> None:
    settings = load(tmp_path, "search:\n  hit_chars: 300\n")
    assert settings.search.hit_chars == 300
    assert settings.search.default_k == Settings().search.default_k


def test_invalid_yaml_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML.*fix it or delete it"):
        load(tmp_path, "search: [unclosed\n")
