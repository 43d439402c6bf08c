"""A disk-backed embedding cache for benchmark and tuning runs (not part of the library).

Embedding ~50k benchmark turns takes minutes on two cores; every ranking experiment after the
first reuses the vectors. Keys are the model id and the exact text, so a cache never serves a
vector of another model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memvault.protocols import Embedder


class CachedEmbedder:
    """An :class:`Embedder` that remembers every vector it computed, on disk."""

    def __init__(self, inner: Embedder, directory: str | Path) -> None:
        self._inner = inner
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        tag = hashlib.sha1(inner.model_id.encode()).hexdigest()[:10]
        self._file = self._dir / f"vectors-{tag}.npz"
        self._vectors: dict[str, NDArray[np.float32]] = {}
        self._dirty = 0
        if self._file.exists():
            data = np.load(self._file, allow_pickle=False)
            keys = data["keys"]
            mat = data["vectors"]
            self._vectors = {str(k): mat[i] for i, k in enumerate(keys)}

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        keys = [self._key(t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._vectors]
        if missing:
            fresh = self._inner.embed_documents([texts[i] for i in missing])
            for row, i in enumerate(missing):
                self._vectors[keys[i]] = np.asarray(fresh[row], dtype=np.float32)
            self._dirty += len(missing)
            if self._dirty >= 2000:
                self.save()
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        key = "q:" + self._key(text)
        if key not in self._vectors:
            self._vectors[key] = np.asarray(self._inner.embed_query(text), dtype=np.float32)
            self._dirty += 1
        return self._vectors[key]

    def save(self) -> None:
        """Write the cache file (atomically: a crash leaves the previous file)."""
        if not self._dirty:
            return
        keys = np.array(list(self._vectors), dtype="U64")
        mat = np.stack(list(self._vectors.values())) if self._vectors else np.zeros((0, 0))
        tmp = self._file.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=mat)
        tmp.replace(self._file)
        self._dirty = 0
