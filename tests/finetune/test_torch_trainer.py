"""The full bi-encoder trainer (torch, the ``finetune`` extra): runs where torch is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from memvault.embeddings import MINILM_MODEL_ID, create_embedder
from memvault.embeddings.adapter import FineTunedMiniLMEmbedder
from memvault.finetune import FineTuneManager, FineTunePlan, RunStatus, Stage

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (pip install 'memvault[finetune]' to test the bi-encoder)",
)


def test_torch_model_matches_the_numpy_reference() -> None:
    import torch

    from memvault.embeddings import NumpyMiniLMEmbedder
    from memvault.embeddings._model_files import load_model_files, load_tokenizer, load_weights
    from memvault.finetune.torch_trainer import _batch, _build_model

    files = load_model_files(None)
    model = _build_model(torch, load_weights(files), files.config)
    texts = ["The kelp token rotates every 7 cycles.", "how long does zeta hold its lock"]
    with torch.no_grad():
        ids, mask = _batch(torch, load_tokenizer(files), texts)
        ours = model(ids, mask).numpy()
    reference = NumpyMiniLMEmbedder().embed_documents(texts)
    assert np.abs(ours - reference).max() < 1e-4


async def test_biencoder_run_end_to_end(pairs_file: Path, registry: Path) -> None:
    plan = FineTunePlan(
        pairs_file=str(pairs_file),
        trainer="biencoder",
        epochs=1,
        batch_size=16,
        hard_negatives=2,
        learning_rate=2e-5,
        require_improvement=False,
    )
    manager = FineTuneManager(registry=registry)
    run = await manager.start(plan, wait=True)
    assert run.status is RunStatus.COMPLETED
    assert run.trainer == "biencoder"
    assert run.stage(Stage.TRAIN).summary["steps"] == 5  # ceil(76 / 16)
    assert run.metrics is not None and run.metrics.queries == 20
    ckpt = registry / "checkpoints" / str(run.checkpoint_id) / "model"
    assert (ckpt / "model.safetensors").is_file() and (ckpt / "tokenizer.json").is_file()
    embedder = create_embedder(f"finetuned:{registry}")
    assert isinstance(embedder, FineTunedMiniLMEmbedder)
    assert embedder.model_id == f"{MINILM_MODEL_ID}+ft-{run.checkpoint_id}"
    base = create_embedder("minilm").embed_query("lock timeout of wren")
    tuned = embedder.embed_query("lock timeout of wren")
    assert 0.9 < float(base @ tuned) < 0.99999  # moved, but still the same model family
