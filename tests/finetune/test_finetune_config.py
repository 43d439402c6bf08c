"""EmbeddingFineTuneConfig and FineTunePlan validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memvault.finetune import EmbeddingFineTuneConfig, FineTunePlan


def test_config_is_disabled_by_default() -> None:
    cfg = EmbeddingFineTuneConfig()
    assert cfg.enabled is False
    assert cfg.embedder_spec is None
    assert cfg.runner == "in-process"


def test_enabled_config_needs_checkpoint_path_and_base_model() -> None:
    with pytest.raises(ValidationError, match="checkpoint_path and base_model"):
        EmbeddingFineTuneConfig(enabled=True)
    with pytest.raises(ValidationError, match="base_model"):
        EmbeddingFineTuneConfig(enabled=True, checkpoint_path="/srv/ft")
    cfg = EmbeddingFineTuneConfig(enabled=True, checkpoint_path="/srv/ft", base_model="minilm")
    assert cfg.embedder_spec == "finetuned:/srv/ft"


@pytest.mark.parametrize(
    "path", ["../escape", "/srv/ft/../../etc", "C:/models", "c:\\models", "dir\\sub", "a/.."]
)
def test_unsafe_paths_are_rejected(path: str) -> None:
    with pytest.raises(ValidationError):
        EmbeddingFineTuneConfig(checkpoint_path=path)
    with pytest.raises(ValidationError):
        FineTunePlan(source_dir=path)
    with pytest.raises(ValidationError):
        FineTunePlan(pairs_file="/ok.jsonl", output_dir=path)


def test_safe_paths_are_kept() -> None:
    assert EmbeddingFineTuneConfig(checkpoint_path="/srv/ft..v2/x").checkpoint_path == (
        "/srv/ft..v2/x"
    )
    assert FineTunePlan(source_dir="docs/adr").source_dir == "docs/adr"


def test_plan_defaults_follow_the_design() -> None:
    plan = FineTunePlan(source_dir="/docs")
    assert plan.temperature == 0.02
    assert plan.epochs == 3
    assert plan.learning_rate == 1e-5
    assert (plan.query_max_tokens, plan.passage_max_tokens) == (128, 512)
    assert plan.trainer == "auto"
    assert plan.deploy is True


def test_plan_needs_data_and_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="source_dir"):
        FineTunePlan()
    with pytest.raises(ValidationError):
        FineTunePlan(source_dir="/docs", epoch=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        FineTunePlan(source_dir="/docs", temperature=0)
    with pytest.raises(ValidationError):
        FineTunePlan(source_dir="/docs", trainer="lora")  # type: ignore[arg-type]
