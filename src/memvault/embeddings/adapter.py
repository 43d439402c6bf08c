"""Fine-tuned embedders: checkpoints written by :mod:`memvault.finetune` and how to load them.

A checkpoint is a directory with a ``meta.json`` (:class:`CheckpointMeta`) and one of:

* ``adapter.npz`` (``kind="adapter"``) - a linear map ``W`` (and bias ``b``) trained on top of a
  frozen base embedder: a text's vector is ``normalise(base(text) @ W + b)``. Light enough to
  train on a CPU in seconds with numpy alone.
* ``model/`` (``kind="biencoder"``) - a whole fine-tuned all-MiniLM-L6-v2 in the layout of the
  bundled model (``model.safetensors``, ``tokenizer.json``, ``config.json``), run by the same
  onnxruntime path as the default embedder.

Every checkpoint has its own ``model_id`` (``<base model id>+ft-<checkpoint id>``), so a store
built with another model refuses it with
:class:`~memvault.errors.EmbeddingModelChangedError` until ``memvault reindex`` re-embeds it.

A *registry* directory (where runs put their checkpoints) holds ``active.json`` naming the
deployed checkpoint; :func:`load_checkpoint_embedder` on a registry loads whatever is active (or
the base model after a rollback to it), so configuration can point at the registry once and
deploys and rollbacks take effect on the next start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings._base import QueryCache, check_texts
from memvault.embeddings._specs import spec_for_model_id
from memvault.embeddings.minilm_onnx import OnnxMiniLMEmbedder
from memvault.errors import EmbedderUnavailableError
from memvault.protocols import Embedder

__all__ = [
    "ACTIVE_FILE",
    "ADAPTER_FILE",
    "META_FILE",
    "MODEL_SUBDIR",
    "AdapterEmbedder",
    "CheckpointMeta",
    "FineTunedMiniLMEmbedder",
    "load_checkpoint_embedder",
    "read_active",
    "read_meta",
    "write_adapter_checkpoint",
    "write_meta",
]

META_FILE = "meta.json"
ADAPTER_FILE = "adapter.npz"
MODEL_SUBDIR = "model"
ACTIVE_FILE = "active.json"
CHECKPOINT_FORMAT = "memvault-embedding-checkpoint/1"

CheckpointKind = Literal["adapter", "biencoder"]


@dataclass(frozen=True, slots=True)
class CheckpointMeta:
    """What a checkpoint is: its id and kind, the base it was trained from, and its model id."""

    checkpoint_id: str
    kind: CheckpointKind
    base_model: str
    base_model_id: str
    created_at: str
    run_id: str | None = None

    @property
    def model_id(self) -> str:
        """The model id stores record for vectors of this checkpoint."""
        return f"{self.base_model_id}+ft-{self.checkpoint_id}"

    def to_json(self) -> dict[str, Any]:
        """The ``meta.json`` content."""
        return {"format": CHECKPOINT_FORMAT, "model_id": self.model_id, **asdict(self)}


def write_meta(directory: Path, meta: CheckpointMeta) -> None:
    """Write ``meta.json`` atomically (a reader sees the old file or the whole new one)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta.to_json(), indent=2), encoding="utf-8")
    os.replace(tmp, directory / META_FILE)


def read_meta(directory: str | os.PathLike[str]) -> CheckpointMeta:
    """Read a checkpoint's ``meta.json``.

    Raises:
        EmbedderUnavailableError: the directory holds no readable checkpoint.
    """
    path = Path(directory) / META_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"unknown format {raw.get('format')!r}")
        kind = raw["kind"]
        if kind not in ("adapter", "biencoder"):
            raise ValueError(f"unknown checkpoint kind {kind!r}")
        return CheckpointMeta(
            checkpoint_id=str(raw["checkpoint_id"]),
            kind=kind,
            base_model=str(raw["base_model"]),
            base_model_id=str(raw["base_model_id"]),
            created_at=str(raw["created_at"]),
            run_id=raw.get("run_id"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbedderUnavailableError(
            f"{Path(directory)} is not a readable fine-tuned embedding checkpoint: {exc}"
        ) from exc


def read_active(registry: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The registry's ``active.json`` (``checkpoint_id``, ``checkpoint_dir``, ``base_model``),
    or None when nothing was ever deployed there."""
    path = Path(registry) / ACTIVE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailableError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbedderUnavailableError(f"{path} does not hold a JSON object")
    return data


def _normalise(x: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), np.float32(1e-12))
    return np.asarray(x / norms, dtype=np.float32)


class AdapterEmbedder:
    """A frozen base embedder followed by a trained linear map, renormalised to unit length."""

    def __init__(
        self,
        base: Embedder,
        weight: NDArray[np.float32],
        bias: NDArray[np.float32] | None = None,
        *,
        model_id: str,
    ) -> None:
        """Wrap ``base``; ``weight`` is ``(base.dimension, out_dim)``, ``bias`` ``(out_dim,)``."""
        w = np.asarray(weight, dtype=np.float32)
        if w.ndim != 2 or w.shape[0] != base.dimension:
            raise EmbedderUnavailableError(
                f"adapter weight has shape {w.shape}, expected ({base.dimension}, n)"
            )
        b = np.zeros(w.shape[1], np.float32) if bias is None else np.asarray(bias, np.float32)
        if b.shape != (w.shape[1],):
            raise EmbedderUnavailableError(
                f"adapter bias has shape {b.shape}, expected {w.shape[1]}"
            )
        self._base = base
        self._weight = w
        self._bias = b
        self._model_id = model_id
        self._query_cache: QueryCache[str] = QueryCache()

    @property
    def model_id(self) -> str:
        """The checkpoint's model id (differs from the base's)."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Length of every returned vector (the adapter's output width)."""
        return int(self._weight.shape[1])

    @property
    def base(self) -> Embedder:
        """The frozen embedder under the adapter."""
        return self._base

    def project(self, vectors: NDArray[np.float32]) -> NDArray[np.float32]:
        """Apply the adapter to base vectors (rows or a single vector)."""
        return _normalise(np.asarray(vectors, np.float32) @ self._weight + self._bias)

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages with the base model, then map them through the adapter."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), np.float32)
        return self.project(np.asarray(self._base.embed_documents(items), np.float32))

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query with the base model, then map it through the adapter."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects str, got {type(text).__name__}")
        cached = self._query_cache.get(text)
        if cached is not None:
            return cached
        vector = self.project(np.asarray(self._base.embed_query(text), np.float32))
        self._query_cache.put(text, vector)
        return vector

    def __repr__(self) -> str:
        """Show the model id and the base."""
        return f"AdapterEmbedder(model_id={self._model_id!r}, base={self._base!r})"


def write_adapter_checkpoint(
    directory: Path,
    meta: CheckpointMeta,
    weight: NDArray[np.float32],
    bias: NDArray[np.float32],
) -> None:
    """Write an adapter checkpoint: ``adapter.npz`` first, ``meta.json`` last (so a directory
    with a meta file always holds complete weights)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / "adapter.tmp.npz"
    np.savez(tmp, weight=np.asarray(weight, np.float32), bias=np.asarray(bias, np.float32))
    os.replace(tmp, directory / ADAPTER_FILE)
    write_meta(directory, meta)


class FineTunedMiniLMEmbedder(OnnxMiniLMEmbedder):
    """A fine-tuned all-MiniLM-L6-v2 (a directory in the bundled model's layout) on the default
    onnxruntime path, reporting the checkpoint's model id instead of the base model's."""

    def __init__(self, model_dir: str | os.PathLike[str], model_id: str) -> None:
        """Record the directory and model id; the graph is built (and cached) on first use."""
        super().__init__(model_dir)
        self._checkpoint_model_id = model_id

    @property
    def model_id(self) -> str:
        """The checkpoint's model id."""
        return self._checkpoint_model_id


def load_checkpoint_embedder(
    path: str | os.PathLike[str], *, create_base: Callable[[str], Embedder]
) -> Embedder:
    """Load a checkpoint directory, or the active checkpoint of a registry directory.

    ``create_base`` builds the base model from its spec (``memvault.embeddings.create_embedder``;
    passed in, so that this module does not import the package that imports it).

    Raises:
        EmbedderUnavailableError: nothing loadable there (the message says why).
    """
    create_embedder = create_base
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise EmbedderUnavailableError(f"fine-tuned embedder directory {directory} does not exist")
    if not (directory / META_FILE).is_file():
        active = read_active(directory)
        if active is None:
            raise EmbedderUnavailableError(
                f"{directory} holds neither a checkpoint ({META_FILE}) nor a deployed one "
                f"({ACTIVE_FILE}); run a fine-tune with deploy first"
            )
        target = active.get("checkpoint_dir")
        if not target:
            # Rolled back to the base model.
            # The base the registry was built on, by model id when recorded: "default" named
            # all-MiniLM-L6-v2 before the default changed, and a rollback must keep that model.
            return create_embedder(
                _base_spec(str(active.get("base_model") or "minilm"), active.get("base_model_id"))
            )
        target_path = Path(str(target))
        if not target_path.is_absolute():
            target_path = directory / target_path
        return load_checkpoint_embedder(target_path, create_base=create_base)
    meta = read_meta(directory)
    if meta.kind == "adapter":
        try:
            with np.load(directory / ADAPTER_FILE) as data:
                weight, bias = data["weight"], data["bias"]
        except (OSError, KeyError, ValueError) as exc:
            raise EmbedderUnavailableError(
                f"cannot read the adapter in {directory}: {exc}"
            ) from exc
        return AdapterEmbedder(
            create_base(_base_spec(meta.base_model, meta.base_model_id)),
            weight,
            bias,
            model_id=meta.model_id,
        )
    return FineTunedMiniLMEmbedder(directory / MODEL_SUBDIR, meta.model_id)


def _base_spec(spec: str, base_model_id: object) -> str:
    """The spec that builds a checkpoint's base model: from its recorded model id when memvault
    knows it (an adapter trained on all-MiniLM-L6-v2 with base ``"default"`` keeps L6 should the
    default model change), else the spec as written."""
    if isinstance(base_model_id, str) and base_model_id:
        known = spec_for_model_id(base_model_id)
        if known is not None:
            return known
    if spec.strip().lower() in ("", "default"):
        # Checkpoints record "default" for all-MiniLM-L6-v2 (the default when they were trained).
        return "minilm"
    return spec
