"""The lightweight trainer: a linear adapter on a frozen base embedder, in plain numpy.

The base model's vectors were computed once in the mining stage; training only learns a
``d x d`` map ``W`` (and bias ``b``) so that ``normalise(v @ W + b)`` ranks each training
query's passage above its in-batch and hard negatives. The loss is InfoNCE with temperature
``tau``; gradients (including those through the L2 normalisation) are written out by hand and
applied with Adam. ``W`` starts at the identity, so step zero is exactly the base model, and a
small penalty pulls it back towards the identity so a few hundred pairs cannot drag the whole
space away from what the base model knows.

It needs nothing beyond numpy and trains a few thousand pairs in seconds on a laptop CPU, which
is what lets ``make test`` cover every stage end to end.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings.adapter import CheckpointMeta, write_adapter_checkpoint

if TYPE_CHECKING:
    from memvault.finetune.config import FineTunePlan

__all__ = ["IDENTITY_PENALTY", "ProgressReporter", "info_nce_adapter_step", "train_adapter"]


class ProgressReporter(Protocol):
    """What a trainer needs of its run: progress reports (which also let a cancel land).

    ``memvault.finetune.pipeline.RunContext`` is one; a protocol keeps the trainers free of the
    pipeline module that imports them.
    """

    def report(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` steps; raises FineTuneCancelledError after a cancel."""


Array = NDArray[np.float32]

IDENTITY_PENALTY = 1e-3
"""Weight of ``||W - I||^2`` in the loss (keeps the adapter close to the base model)."""

_NEG_INF = np.float32(-1e9)


def _forward_norm(x: Array, w: Array, b: Array) -> tuple[Array, Array]:
    u = x @ w + b
    n = np.maximum(np.linalg.norm(u, axis=1, keepdims=True), np.float32(1e-12))
    return u / n, n


def _back_norm(grad_y: Array, y: Array, n: Array) -> Array:
    # d(u/|u|)/du applied to grad_y: (g - y (y.g)) / |u|
    out: Array = (grad_y - y * np.sum(grad_y * y, axis=1, keepdims=True)) / n
    return out


def info_nce_adapter_step(
    xq: Array,
    xc: Array,
    labels: NDArray[np.int64],
    mask: NDArray[np.bool_],
    w: Array,
    b: Array,
    tau: float,
) -> tuple[float, Array, Array]:
    """Loss and gradients (``dW``, ``db``) of InfoNCE for one batch.

    ``xq`` are base query vectors ``(B, d)``; ``xc`` candidate passage vectors ``(C, d)``;
    ``labels[i]`` the index of query ``i``'s positive in ``xc``; ``mask[i, j]`` True where
    candidate ``j`` must not count as a negative of query ``i`` (another copy of its positive).
    """
    yq, nq = _forward_norm(xq, w, b)
    yc, nc = _forward_norm(xc, w, b)
    logits = (yq @ yc.T) / np.float32(tau)
    logits = np.where(mask, _NEG_INF, logits)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = float(-np.mean(np.log(np.maximum(probs[rows, labels], 1e-30))))
    d_logits = probs.copy()
    d_logits[rows, labels] -= 1.0
    d_logits /= np.float32(len(labels) * tau)
    d_yq = d_logits @ yc
    d_yc = d_logits.T @ yq
    d_uq = _back_norm(d_yq, yq, nq)
    d_uc = _back_norm(d_yc, yc, nc)
    d_w = xq.T @ d_uq + xc.T @ d_uc
    d_b = d_uq.sum(axis=0) + d_uc.sum(axis=0)
    return loss, d_w.astype(np.float32), d_b.astype(np.float32)


def train_adapter(
    q_vec: Array,
    p_vec: Array,
    examples: Sequence[tuple[int, int, Sequence[int]]],
    *,
    plan: FineTunePlan,
    ctx: ProgressReporter,
    checkpoint_dir: Path,
    meta: CheckpointMeta,
) -> dict[str, Any]:
    """Train the adapter on ``(query index, positive passage index, hard negative indices)``
    examples and write the checkpoint; returns a summary (losses per epoch, steps)."""
    dim = int(p_vec.shape[1])
    w = np.eye(dim, dtype=np.float32)
    b = np.zeros(dim, np.float32)
    eye = np.eye(dim, dtype=np.float32)
    m_w, v_w = np.zeros_like(w), np.zeros_like(w)
    m_b, v_b = np.zeros_like(b), np.zeros_like(b)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    lr = plan.adapter_learning_rate
    rng = np.random.default_rng(plan.seed)
    batch = plan.batch_size
    steps_per_epoch = max(1, -(-len(examples) // batch))
    total = steps_per_epoch * plan.epochs
    step = 0
    epoch_losses: list[float] = []
    for _epoch in range(plan.epochs):
        order = rng.permutation(len(examples))
        losses = []
        for start in range(0, len(order), batch):
            ctx.report(step, total)
            chunk = [examples[i] for i in order[start : start + batch]]
            cand: list[int] = [pos for _, pos, _ in chunk]
            for _, _, negs in chunk:
                cand.extend(negs)
            labels = np.arange(len(chunk), dtype=np.int64)
            cand_arr = np.asarray(cand, dtype=np.int64)
            positives = np.asarray([pos for _, pos, _ in chunk], dtype=np.int64)
            # Another query's positive (or a mined negative) may be this query's own passage.
            mask = cand_arr[None, :] == positives[:, None]
            mask[labels, labels] = False
            xq = q_vec[[q for q, _, _ in chunk]]
            xc = p_vec[cand_arr]
            loss, d_w, d_b = info_nce_adapter_step(xq, xc, labels, mask, w, b, plan.temperature)
            d_w += np.float32(2 * IDENTITY_PENALTY) * (w - eye)
            loss += IDENTITY_PENALTY * float(np.sum((w - eye) ** 2))
            step += 1
            m_w = beta1 * m_w + (1 - beta1) * d_w
            v_w = beta2 * v_w + (1 - beta2) * d_w * d_w
            m_b = beta1 * m_b + (1 - beta1) * d_b
            v_b = beta2 * v_b + (1 - beta2) * d_b * d_b
            correction1, correction2 = 1 - beta1**step, 1 - beta2**step
            w -= (lr * (m_w / correction1) / (np.sqrt(v_w / correction2) + eps)).astype(np.float32)
            b -= (lr * (m_b / correction1) / (np.sqrt(v_b / correction2) + eps)).astype(np.float32)
            losses.append(loss)
        epoch_losses.append(float(np.mean(losses)) if losses else 0.0)
    ctx.report(total, total)
    write_adapter_checkpoint(checkpoint_dir, meta, w, b)
    return {
        "epochs": plan.epochs,
        "steps": step,
        "learning_rate": lr,
        "temperature": plan.temperature,
        "epoch_losses": [round(x, 5) for x in epoch_losses],
    }
