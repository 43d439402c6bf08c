"""Shared machinery of the local MiniLM embedders: lazy loading, query cache, length bucketing.

The numpy and ONNX runtimes differ only in how one padded batch of token ids becomes sentence
vectors; everything around that (validation, tokenisation, sorting by length so batches carry
little padding, restoring input order, the query LRU cache, thread-safe lazy loading) lives here
so both behave identically.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings._model_files import (
    MINILM_DIMENSION,
    MINILM_MODEL_ID,
    ModelFiles,
    load_model_files,
    load_tokenizer,
)
from memvault.errors import MemoryConfigError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "DEFAULT_QUERY_CACHE_SIZE",
    "MiniLMEmbedderBase",
    "QueryCache",
    "check_texts",
]

logger = logging.getLogger(__name__)

DEFAULT_QUERY_CACHE_SIZE = 256
"""How many distinct query strings an embedder remembers by default."""

DEFAULT_MAX_BATCH_TOKENS = 2048
"""Cap on ``rows * padded width`` of one batch.

Attention scores take ``rows * 12 * width**2`` floats, so 64 texts of 256 tokens would need
~200 MB for them alone, and onnxruntime's memory arena keeps the largest batch's buffers for
the life of the process (each server worker included). At 2,048 tokens a batch of long texts
holds 8 rows: resident memory after embedding long turns is about 390 MiB instead of 780 at
8,192, and throughput on two cores is about 8% higher (the activations stay in cache; see
``benchmarks/results/serving.md``, section 2). Batches of short texts (up to 32 tokens) still fill
``batch_size`` rows.
"""

_K = TypeVar("_K", bound=Hashable)


class QueryCache(Generic[_K]):
    """A small thread-safe LRU of query vectors that hands out independent copies.

    Copies on the way in and out mean a caller that scales or normalises a returned vector in
    place cannot corrupt what the next caller of the same query receives.
    """

    def __init__(self, maxsize: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if maxsize < 0:
            raise MemoryConfigError(f"query cache size must be >= 0, got {maxsize}")
        self._maxsize = maxsize
        self._data: OrderedDict[_K, NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _K) -> NDArray[np.float32] | None:
        """Return a copy of the cached vector for ``key``, or None."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit.copy()

    def put(self, key: _K, value: NDArray[np.float32]) -> None:
        """Remember a copy of ``value`` for ``key``, evicting the least recently used entry."""
        if self._maxsize == 0:
            return
        stored = value.copy()
        stored.flags.writeable = False
        with self._lock:
            self._data[key] = stored
            self._data.move_to_end(key)
            while len(self._data) > self._maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        """Number of cached entries."""
        with self._lock:
            return len(self._data)


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate the argument of ``embed_documents`` and return it as a list.

    A bare string is a ``Sequence[str]`` too; embedding it character by character is never what
    the caller meant, so it is rejected loudly.
    """
    if isinstance(texts, str):
        raise TypeError("embed_documents expects a sequence of strings, not a single string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
    return items


class MiniLMEmbedderBase(ABC):
    """Common behaviour of the all-MiniLM-L6-v2 embedders (see module docstring)."""

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        if batch_size < 1:
            raise MemoryConfigError(f"batch_size must be >= 1, got {batch_size}")
        if max_batch_tokens < 1:
            raise MemoryConfigError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        self._max_batch_tokens = max_batch_tokens
        # Construction only records settings: loading weights and building graphs takes seconds,
        # and stores are often created (e.g. by a CLI listing them) without embedding anything.
        self._model_dir = model_dir
        self._batch_size = batch_size
        self._query_cache: QueryCache[str] = QueryCache(query_cache_size)
        self._load_lock = threading.Lock()
        self._loaded = threading.Event()
        self._tokenizer: Tokenizer | None = None
        self._files: ModelFiles | None = None

    @property
    def model_id(self) -> str:
        """The Hugging Face id of the model; the same for every runtime of it."""
        return MINILM_MODEL_ID

    @property
    def dimension(self) -> int:
        """Length of every returned vector (384)."""
        return MINILM_DIMENSION

    @property
    def batch_size(self) -> int:
        """Maximum number of texts run through the encoder at once."""
        return self._batch_size

    @property
    def is_loaded(self) -> bool:
        """True once the model has been loaded (by :meth:`load` or a first embed call)."""
        return self._loaded.is_set()

    @property
    @abstractmethod
    def runtime(self) -> str:
        """Short name of the inference runtime (for logs and benchmarks)."""

    def load(self) -> None:
        """Load the model now instead of on first use (idempotent and thread-safe)."""
        if self._loaded.is_set():
            return
        with self._load_lock:
            if self._loaded.is_set():
                return
            started = time.perf_counter()
            files = load_model_files(self._model_dir)
            tokenizer = self._load_tokenizer(files)
            self._load_runtime(files)
            self._files = files
            self._tokenizer = tokenizer
            self._loaded.set()
            elapsed = time.perf_counter() - started
            logger.info(
                "embedder.loaded model_id=%s runtime=%s load_seconds=%.3f model_dir=%s",
                self.model_id,
                self.runtime,
                elapsed,
                files.directory,
                extra={
                    "event": "embedder.loaded",
                    "model_id": self.model_id,
                    "runtime": self.runtime,
                    "load_seconds": elapsed,
                },
            )

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages; returns L2-normalised float32 vectors of shape ``(len(texts), 384)``.

        Texts longer than the model's 256-token window are truncated (as sentence-transformers
        does). Inputs are grouped by token length so each batch is padded as little as possible;
        the result rows are in input order.
        """
        items = check_texts(texts)
        out = np.zeros((len(items), self.dimension), dtype=np.float32)
        if not items:
            return out
        self.load()
        tokenizer = self._tokenizer
        assert tokenizer is not None  # set by load()
        encodings = tokenizer.encode_batch(items)
        ids_list = [enc.ids for enc in encodings]
        lengths = np.fromiter((len(ids) for ids in ids_list), dtype=np.int64, count=len(ids_list))
        # Longest first: the biggest batch is allocated up front, later ones reuse smaller shapes,
        # and the first row of each chunk gives its padded width.
        order = np.argsort(-lengths, kind="stable")
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            rows = min(self._batch_size, max(1, self._max_batch_tokens // width))
            chunk = order[start : start + rows]
            start += rows
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            attention_mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, index in enumerate(chunk):
                ids = ids_list[index]
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            out[chunk] = self._encode_batch(input_ids, attention_mask)
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one search query; returns an L2-normalised float32 vector of shape ``(384,)``.

        Recent queries are answered from a small LRU cache; every call returns a fresh copy.
        """
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects str, got {type(text).__name__}")
        cached = self._query_cache.get(text)
        if cached is not None:
            return cached
        vector: NDArray[np.float32] = self.embed_documents([text])[0]
        self._query_cache.put(text, vector)
        return vector

    def __repr__(self) -> str:
        """Show the runtime and whether the model is loaded."""
        state = "loaded" if self._loaded.is_set() else "not loaded"
        return f"{type(self).__name__}(runtime={self.runtime!r}, {state})"

    def _load_tokenizer(self, files: ModelFiles) -> Tokenizer:
        """The tokenizer, truncating at the model's window (a subclass may narrow it)."""
        return load_tokenizer(files)

    @abstractmethod
    def _load_runtime(self, files: ModelFiles) -> None:
        """Prepare the inference runtime; called once, under the load lock."""

    @abstractmethod
    def _encode_batch(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        """Turn one padded batch into mean-pooled, L2-normalised float32 vectors."""
