"""Deploy, second deploy, rollback to the earlier checkpoint and to the base model (audited)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memvault.embeddings import MINILM_MODEL_ID, OnnxMiniLMEmbedder, create_embedder
from memvault.errors import EmbedderUnavailableError, MemoryNotFoundError, MemoryValidationError
from memvault.finetune import EmbeddingFineTuneConfig, FineTuneManager, FineTunePlan


async def test_rollback_between_checkpoints_and_to_base(pairs_file: Path, registry: Path) -> None:
    config = EmbeddingFineTuneConfig(
        enabled=True, checkpoint_path=str(registry), base_model="minilm"
    )
    manager = FineTuneManager(config)
    assert manager.registry == registry
    plan = FineTunePlan(pairs_file=str(pairs_file), trainer="adapter")
    first = await manager.start(plan, wait=True)
    second = await manager.start(plan.model_copy(update={"seed": 1, "epochs": 2}), wait=True)
    assert first.deployed and second.deployed
    assert first.checkpoint_id != second.checkpoint_id
    spec = config.embedder_spec
    assert spec == f"finetuned:{registry}"
    probe = "how often are zeta credentials changed"
    v_second = create_embedder(spec).embed_query(probe)
    assert create_embedder(spec).model_id.endswith(str(second.checkpoint_id))

    checkpoints = await manager.list_checkpoints()
    assert [c.checkpoint_id for c in checkpoints] == [second.checkpoint_id, first.checkpoint_id]
    assert [c.active for c in checkpoints] == [True, False]

    # The guardrail triple is required.
    for kwargs in (
        {"actor": "ops", "confirm": False, "reason": "regressed"},
        {"actor": "ops", "confirm": True, "reason": ""},
        {"actor": "", "confirm": True, "reason": "regressed"},
        {"actor": "ops", "confirm": "yes", "reason": "regressed"},
    ):
        with pytest.raises(MemoryValidationError):
            await manager.rollback_checkpoint(str(first.checkpoint_id), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(MemoryNotFoundError):
        await manager.rollback_checkpoint("ckpt-nope", actor="ops", confirm=True, reason="x")
    assert (await manager.get_active_embedder()).checkpoint_id == second.checkpoint_id

    record = await manager.rollback_checkpoint(
        str(first.checkpoint_id), actor="ops", confirm=True, reason="second one regressed"
    )
    assert record.checkpoint_id == first.checkpoint_id and record.active
    rolled = create_embedder(spec)
    assert rolled.model_id == f"{MINILM_MODEL_ID}+ft-{first.checkpoint_id}"
    assert not np.allclose(rolled.embed_query(probe), v_second)
    assert (await manager.get_active_embedder()).checkpoint_id == first.checkpoint_id

    base = await manager.rollback_checkpoint("base", actor="ops", confirm=True, reason="revert")
    assert (base.checkpoint_id, base.model_id) == ("base", MINILM_MODEL_ID)
    assert isinstance(create_embedder(spec), OnnxMiniLMEmbedder)
    active = await manager.get_active_embedder()
    assert (active.checkpoint_id, active.model_id) == (None, None)

    audit = [json.loads(x) for x in (registry / "audit.jsonl").read_text().splitlines()]
    assert [(a["operation"], a["target_id"]) for a in audit] == [
        ("deploy", first.checkpoint_id),
        ("deploy", second.checkpoint_id),
        ("rollback", first.checkpoint_id),
        ("rollback", "base"),
    ]
    assert audit[2]["actor"] == "ops" and audit[2]["reason"] == "second one regressed"
    assert audit[2]["previous_id"] == second.checkpoint_id
    history = json.loads((registry / "active.json").read_text())["history"]
    assert [h["checkpoint_id"] for h in history] == [
        first.checkpoint_id,
        second.checkpoint_id,
        first.checkpoint_id,
    ]


def test_finetuned_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="does not exist"):
        create_embedder(f"finetuned:{tmp_path / 'missing'}")
    with pytest.raises(EmbedderUnavailableError, match="run a fine-tune with deploy"):
        create_embedder(f"finetuned:{tmp_path}")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "meta.json").write_text('{"format": "something-else"}')
    with pytest.raises(EmbedderUnavailableError, match="not a readable"):
        create_embedder(f"minilm+adapter:{bad}")
