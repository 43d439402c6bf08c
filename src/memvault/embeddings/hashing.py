"""A deterministic feature-hashing embedder with no model and no dependencies beyond numpy.

It captures lexical overlap only (no synonyms, no paraphrases), which is exactly what a plugin
author's unit test or a tiny environment without the MiniLM package needs: instant, identical on
every machine and Python version (blake2b, not the salted built-in ``hash``), and unit-length like
every memvault vector.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings._base import check_texts
from memvault.errors import MemoryConfigError

__all__ = ["HashingEmbedder"]

_TOKEN_RE = re.compile(r"\w+")
# Key for blake2b so these hashes differ from any other use of blake2b on the same strings;
# changing it (or the features below) changes every vector and needs a new model_id version.
_PERSON = b"memvault-hash-v1"
_BIGRAM_WEIGHT = 0.5
# Feature used for texts without any word character, so they still get a unit-length vector
# (cosine with a zero vector is undefined for callers that do not guard against it).
_EMPTY_FEATURE = "\x00empty"


class HashingEmbedder:
    """Embeds text by hashing word unigrams and bigrams into signed buckets, L2-normalised.

    Text is case-folded and split on word characters; each unigram adds ±1 and each bigram ±0.5
    to one of ``dimension`` buckets chosen by blake2b, the sign by another bit of the same
    hash so that collisions tend to cancel instead of piling up. Deterministic across processes,
    platforms and releases of the same ``model_id`` (``hashing-v1-{dimension}``).
    """

    def __init__(self, dimension: int = 256) -> None:
        """Create an embedder producing ``dimension``-long vectors."""
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 2:
            raise MemoryConfigError(f"hashing dimension must be an integer >= 2, got {dimension!r}")
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        """The model id, ``hashing-v1-{dimension}`` (each dimension is a different model)."""
        return f"hashing-v1-{self._dimension}"

    @property
    def dimension(self) -> int:
        """Length of every returned vector."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages; returns unit-length float32 vectors of shape ``(len(texts), dim)``."""
        items = check_texts(texts)
        out = np.zeros((len(items), self._dimension), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = self._embed_one(text)
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query; returns a unit-length float32 vector of shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects str, got {type(text).__name__}")
        return self._embed_one(text)

    def __repr__(self) -> str:
        """Show the dimension."""
        return f"HashingEmbedder(dimension={self._dimension})"

    def _embed_one(self, text: str) -> NDArray[np.float32]:
        tokens = _TOKEN_RE.findall(text.casefold())
        features: list[tuple[str, float]] = [(tok, 1.0) for tok in tokens]
        features.extend((f"{a} {b}", _BIGRAM_WEIGHT) for a, b in itertools.pairwise(tokens))
        if not features:
            features.append((_EMPTY_FEATURE, 1.0))
        vec = np.zeros(self._dimension, dtype=np.float64)
        for feature, weight in features:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, person=_PERSON)
            h = int.from_bytes(digest.digest(), "little")
            # Low bits pick the bucket, the top bit the sign: independent bits of one hash.
            sign = -1.0 if h >> 63 else 1.0
            vec[h % self._dimension] += sign * weight
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            # Every feature cancelled out (possible but rare); fall back to the empty marker so
            # the result is still a unit vector. "" hashes one feature, so this cannot recurse.
            return self._embed_one("")
        return (vec / norm).astype(np.float32)
