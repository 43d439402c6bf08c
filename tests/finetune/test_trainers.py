"""The numpy adapter trainer: its hand-written InfoNCE gradient matches finite differences."""

from __future__ import annotations

import numpy as np

from memvault.finetune.trainers import info_nce_adapter_step


def _loss(xq, xc, labels, mask, w, b, tau) -> float:  # type: ignore[no-untyped-def]
    return info_nce_adapter_step(xq, xc, labels, mask, w, b, tau)[0]


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(1)
    dim, batch = 6, 3
    xq = rng.normal(size=(batch, dim))
    xc = rng.normal(size=(batch + 2, dim))
    labels = np.arange(batch, dtype=np.int64)
    mask = np.zeros((batch, batch + 2), dtype=bool)
    mask[0, 4] = True  # candidate 4 duplicates query 0's positive: excluded
    w = np.eye(dim) + 0.1 * rng.normal(size=(dim, dim))
    b = 0.1 * rng.normal(size=dim)
    tau = 0.5
    # float64 throughout so the central differences are accurate.
    _, d_w, d_b = info_nce_adapter_step(xq, xc, labels, mask, w, b, tau)
    eps = 1e-6
    for i, j in [(0, 0), (2, 3), (5, 1), (4, 4)]:
        plus, minus = w.copy(), w.copy()
        plus[i, j] += eps
        minus[i, j] -= eps
        numeric = (
            _loss(xq, xc, labels, mask, plus, b, tau) - _loss(xq, xc, labels, mask, minus, b, tau)
        ) / (2 * eps)
        assert abs(numeric - d_w[i, j]) < 1e-5, (i, j, numeric, d_w[i, j])
    for k in (0, 3):
        plus, minus = b.copy(), b.copy()
        plus[k] += eps
        minus[k] -= eps
        numeric = (
            _loss(xq, xc, labels, mask, w, plus, tau) - _loss(xq, xc, labels, mask, w, minus, tau)
        ) / (2 * eps)
        assert abs(numeric - d_b[k]) < 1e-5


def test_masked_candidate_does_not_change_the_loss() -> None:
    rng = np.random.default_rng(2)
    xq = rng.normal(size=(2, 4))
    xc = rng.normal(size=(3, 4))
    labels = np.arange(2, dtype=np.int64)
    mask = np.zeros((2, 3), dtype=bool)
    mask[:, 2] = True
    w, b = np.eye(4), np.zeros(4)
    masked = info_nce_adapter_step(xq, xc, labels, mask, w, b, 0.1)[0]
    without = info_nce_adapter_step(xq, xc[:2], labels, mask[:, :2], w, b, 0.1)[0]
    assert masked == np.float64(without) or abs(masked - without) < 1e-9
