"""Model ids back to the specs that build them (no embedder imported: a leaf of the package)."""

from __future__ import annotations

from memvault.embeddings._model_files import MINILM_MODEL_ID
from memvault.embeddings.minilm_l3_onnx import MINILM_L3_MODEL_ID

__all__ = ["spec_for_model_id"]


def spec_for_model_id(model_id: str) -> str | None:
    """The :func:`create_embedder` spec that builds the model ``model_id`` locally, or None.

    A store records the model id of its vectors; this maps it back to a spec memvault can build
    offline: ``sentence-transformers/all-MiniLM-L6-v2`` -> ``"minilm"``,
    ``sentence-transformers/paraphrase-MiniLM-L3-v2`` -> ``"minilm-l3"``, ``hashing-v1-<dim>``
    -> ``"hashing:<dim>"``. Remote models and fine-tuned checkpoints give None (building them
    needs configuration a model id does not carry).
    """
    if model_id == MINILM_MODEL_ID:
        return "minilm"
    if model_id == MINILM_L3_MODEL_ID:
        return "minilm-l3"
    prefix = "hashing-v1-"
    if model_id.startswith(prefix) and model_id[len(prefix) :].isdigit():
        return f"hashing:{int(model_id[len(prefix) :])}"
    return None
