"""A static word-embedding view of a text: the second, cheap view of meaning that ranking uses.

MiniLM reads a text through six attention layers and 256 tokens at most. A *static* model has no
layers: a text's vector is the mean of its tokens' vectors from a fixed table, so it costs a
table look-up per token and sees every word of a long turn. Its cosines rank differently from
MiniLM's, and the two disagree usefully: as ranking evidence beside MiniLM's cosine and BM25 it
lifts LongMemEval turn recall@10 by about three points on questions the fit never saw, with
LoCoMo unchanged (``benchmarks/results/ranking.md``, section 0f).

The table is WordLlama's ``l2_supercat`` (MIT licence): Llama 2's 32,000-token vocabulary with
256-dimensional vectors trained for sentence similarity, shipped inside the ``wordllama`` PyPI
package (weights and tokenizer as package files; nothing is downloaded). Its dimensions are
ordered by importance (Matryoshka training), so memvault keeps the first
:data:`STATIC_DIMENSION`, which rank as well as all 256 on both development sets.

Vectors are unit length, float32, and a pure function of the text, like the stemmer's: a table
look-up with no model runtime, which is why this lives with the rest of text analysis in
:mod:`memvault.retrieval`. Stores may keep them beside the memory (SQLite and PostgreSQL do,
so ranking a long turn costs no tokenisation) or not (ranking computes what it lacks, see
:mod:`memvault.retrieval.evidence`). Only the package files are read, once per process;
``wordllama`` itself is never imported.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from memvault.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "STATIC_DIMENSION",
    "STATIC_MODEL_ID",
    "StaticWordEmbedder",
    "static_embedder",
]

STATIC_PACKAGE = "wordllama"
"""Import name of the PyPI package whose files hold the table and its tokenizer."""

STATIC_MODEL_ID = "wordllama/l2_supercat_256:128"
"""The table and how many of its leading dimensions are used (part of what a stored vector
means: vectors of another id are not comparable). Changing either must come with a store
migration that empties the stored vectors (SQLite's ``memory_static``, PostgreSQL's
``memories.static``), which ranking then recomputes."""

STATIC_DIMENSION = 128
"""Leading dimensions of the 256 kept: half the memory and storage, the same ranking (two-fold
cross-validation of the evidence model on both development sets, 128 against 256)."""

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_MAX_TOKENS = 4096
"""Tokens of one text that count: a pathological memory of megabytes costs no more than this."""


def _package_dir() -> Path:
    try:
        spec = importlib.util.find_spec(STATIC_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        msg = (
            f"the static word-embedding table is not installed: `pip install {STATIC_PACKAGE}` "
            "(memvault's ranking reads its weights and tokenizer files)"
        )
        raise EmbedderUnavailableError(msg)
    return Path(next(iter(locations)))


class StaticWordEmbedder:
    """Mean-pooled static token vectors (see the module docstring); thread-safe, lazy."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._dir = None if directory is None else Path(directory)
        self._lock = threading.Lock()
        self._table: NDArray[np.float16] | None = None
        self._tokenizer: Tokenizer | None = None

    @property
    def model_id(self) -> str:
        """What the vectors are (:data:`STATIC_MODEL_ID`)."""
        return STATIC_MODEL_ID

    @property
    def dimension(self) -> int:
        """Length of a vector (:data:`STATIC_DIMENSION`)."""
        return STATIC_DIMENSION

    def load(self) -> None:
        """Read the table and the tokenizer (once; later calls return at once).

        Raises:
            EmbedderUnavailableError: the package or one of its files is missing or unreadable.
        """
        if self._table is not None:
            return
        with self._lock:
            if self._table is not None:
                return
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            root = self._dir or _package_dir()
            weights, tokenizer = root.joinpath(*_WEIGHTS), root.joinpath(*_TOKENIZER)
            try:
                raw = load_file(str(weights))["embedding.weight"]
                tok = Tokenizer.from_file(str(tokenizer))
            except Exception as exc:  # safetensors and tokenizers raise untyped errors
                msg = f"cannot read the static word-embedding table under {root}: {exc}"
                raise EmbedderUnavailableError(msg) from exc
            if raw.ndim != 2 or raw.shape[1] < STATIC_DIMENSION:
                msg = f"unexpected static table shape {raw.shape} in {weights}"
                raise EmbedderUnavailableError(msg)
            tok.no_padding()
            tok.no_truncation()
            self._tokenizer = tok
            # Kept as the package stores it (float16: 8 MB, not 16); rows are widened to float32
            # as they are gathered, so the sums are exact either way.
            self._table = np.ascontiguousarray(raw[:, :STATIC_DIMENSION], dtype=np.float16)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors of ``texts``, shape ``(len(texts), STATIC_DIMENSION)``; a text with no
        token (empty) gets the zero vector, whose cosine with anything is 0."""
        out = np.zeros((len(texts), STATIC_DIMENSION), dtype=np.float32)
        if not texts:
            return out
        self.load()
        table, tok = self._table, self._tokenizer
        assert table is not None and tok is not None  # set by load()
        encodings = tok.encode_batch(list(texts), add_special_tokens=False)
        ids = [np.asarray(e.ids[:_MAX_TOKENS], dtype=np.intp) for e in encodings]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.intp, count=len(ids))
        filled = np.flatnonzero(lengths)
        if len(filled):
            # One gather for the whole batch, summed per text: no Python loop over tokens.
            flat = np.concatenate([ids[k] for k in filled])
            starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
            sums = np.add.reduceat(table[flat].astype(np.float32), starts, axis=0)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            out[filled] = sums / np.maximum(norms, 1e-12)
        return out


_shared: StaticWordEmbedder | None = None
_shared_lock = threading.Lock()


def static_embedder() -> StaticWordEmbedder:
    """The process-wide :class:`StaticWordEmbedder` (one table in memory, shared by every store)."""
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = StaticWordEmbedder()
    return _shared
