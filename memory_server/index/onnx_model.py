"""Opening the ONNX embedding model: the onnxruntime session and the tokenizer, which inputs the graph
wants, and which output to pool. onnxruntime and tokenizers are imported only when the model is opened
(the first ``embed()``), so the MCP handshake never pays for them."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_server.errors import ModelError
from memory_server.index.model_files import ModelFiles

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped, unused-ignore]
    import tokenizers

_log = logging.getLogger("memory_server.index.embedder")


@dataclass
class LoadedModel:
    """What opening the model builds: the session, the tokenizer, and how to drive them."""

    session: onnxruntime.InferenceSession
    tokenizer: tokenizers.Tokenizer
    input_names: frozenset[str]
    input_dtype: type[np.signedinteger[Any]]
    output_name: str
    pooled: bool  # the output is already one vector per text (sentence_embedding)


def open_model(files: ModelFiles, *, name: str, dim: int, max_tokens: int, threads: int) -> LoadedModel:
    """Import onnxruntime and tokenizers, open the model and tokenizer, check their shape."""
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
    tokenizer.enable_truncation(max_length=max_tokens)

    _quiet_onnxruntime(ort)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
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

    loaded = _inspect(session, tokenizer, files, dim)
    _log.info(
        "loaded embedding model %s from %s in %.2f s (%d threads)",
        name,
        files.model,
        time.perf_counter() - started,
        threads,
    )
    return loaded


def _inspect(
    session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer, files: ModelFiles, dim: int
) -> LoadedModel:
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
    if isinstance(width, int) and width != dim:
        raise ModelError(
            f"{files.model} gives {width}-dimensional vectors, but this embedder is for "
            f"all-MiniLM-L6-v2 ({dim} dimensions); {files.fix}"
        )
    return LoadedModel(
        session=session,
        tokenizer=tokenizer,
        input_names=frozenset(inputs),
        input_dtype=dtype,
        output_name=name,
        pooled=pooled,
    )


def default_threads() -> int:
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


__all__ = ["LoadedModel", "default_threads", "open_model"]
