"""The full trainer: contrastive fine-tuning of every all-MiniLM-L6-v2 weight with torch.

Needs the ``finetune`` extra (``pip install 'memvault[finetune]'``, which pins a torch release);
without torch, :func:`train_biencoder` raises
:class:`~memvault.errors.FineTuneDependencyError` with that command.

The encoder is rebuilt here from the bundled ``model.safetensors`` with the same tensor names
(no transformers or sentence-transformers needed), trained with InfoNCE on in-batch plus hard
negatives with AdamW, and saved back in the bundled model's layout, so the default onnxruntime
path serves the checkpoint exactly as it serves the base model.
"""

from __future__ import annotations

import importlib
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.embeddings.adapter import MODEL_SUBDIR, CheckpointMeta, write_meta
from memvault.errors import FineTuneDependencyError

if TYPE_CHECKING:
    from memvault.finetune.config import FineTunePlan
    from memvault.finetune.trainers import ProgressReporter

__all__ = ["FINETUNE_INSTALL_COMMAND", "require_torch", "train_biencoder"]

FINETUNE_INSTALL_COMMAND = "pip install 'memvault[finetune]'"
"""Installs the pinned CPU-capable torch release the bi-encoder trainer needs."""


def require_torch() -> Any:
    """Import torch, or raise :class:`FineTuneDependencyError` naming the install command."""
    try:
        # import_module keeps type checkers from requiring torch's stubs: it is optional.
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise FineTuneDependencyError(
            "the bi-encoder fine-tune trainer needs torch, which is not installed: "
            f"{FINETUNE_INSTALL_COMMAND} (or use trainer: adapter, which needs only numpy)",
            missing="torch",
            install_command=FINETUNE_INSTALL_COMMAND,
        ) from exc
    return torch


def _build_model(torch: Any, weights: dict[str, Any], cfg: Any) -> Any:
    nn: Any = torch.nn
    functional: Any = torch.nn.functional

    class Layer(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            h, inter = cfg.hidden_size, cfg.intermediate_size
            self.q = nn.Linear(h, h)
            self.k = nn.Linear(h, h)
            self.v = nn.Linear(h, h)
            self.o = nn.Linear(h, h)
            self.ln1 = nn.LayerNorm(h, eps=cfg.layer_norm_eps)
            self.ff1 = nn.Linear(h, inter)
            self.ff2 = nn.Linear(inter, h)
            self.ln2 = nn.LayerNorm(h, eps=cfg.layer_norm_eps)

        def forward(self, x: Any, bias: Any) -> Any:
            b, s, h = x.shape
            heads, dh = cfg.num_heads, cfg.head_dim

            def split(t: Any) -> Any:
                return t.view(b, s, heads, dh).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h)
            x = self.ln1(self.o(ctx) + x)
            return self.ln2(self.ff2(functional.gelu(self.ff1(x))) + x)

    class MiniLM(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
            self.position = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
            self.token_type = nn.Embedding(2, cfg.hidden_size)
            self.ln = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg.num_layers))

        def forward(self, ids: Any, mask: Any) -> Any:
            seq = ids.shape[1]
            x = self.word(ids) + self.position.weight[:seq] + self.token_type.weight[0]
            x = self.ln(x)
            bias = (1.0 - mask[:, None, None, :].float()) * -1e9
            for layer in self.layers:
                x = layer(x, bias)
            m = mask[:, :, None].float()
            pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return functional.normalize(pooled, dim=-1)

    model = MiniLM()
    names = _name_map(cfg.num_layers)
    state = {ours: torch.from_numpy(weights[theirs].copy()) for ours, theirs in names.items()}
    model.load_state_dict(state, strict=True)
    return model


def _name_map(num_layers: int) -> dict[str, str]:
    """Our module's parameter names -> the bundled checkpoint's tensor names."""
    names = {
        "word.weight": "embeddings.word_embeddings.weight",
        "position.weight": "embeddings.position_embeddings.weight",
        "token_type.weight": "embeddings.token_type_embeddings.weight",
        "ln.weight": "embeddings.LayerNorm.weight",
        "ln.bias": "embeddings.LayerNorm.bias",
    }
    parts = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "o": "attention.output.dense",
        "ln1": "attention.output.LayerNorm",
        "ff1": "intermediate.dense",
        "ff2": "output.dense",
        "ln2": "output.LayerNorm",
    }
    for i in range(num_layers):
        for ours, theirs in parts.items():
            for p in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    return names


def _batch(torch: Any, tokenizer: Any, texts: Sequence[str]) -> tuple[Any, Any]:
    encodings = tokenizer.encode_batch(list(texts))
    width = max(len(e.ids) for e in encodings)
    ids = torch.zeros((len(texts), width), dtype=torch.long)
    mask = torch.zeros((len(texts), width), dtype=torch.long)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = torch.tensor(enc.ids, dtype=torch.long)
        mask[row, : len(enc.ids)] = 1
    return ids, mask


def train_biencoder(
    queries: Sequence[str],
    passages: Sequence[str],
    examples: Sequence[tuple[int, int, Sequence[int]]],
    *,
    plan: FineTunePlan,
    ctx: ProgressReporter,
    checkpoint_dir: Path,
    meta: CheckpointMeta,
) -> dict[str, Any]:
    """Fine-tune the whole encoder on ``(query, positive, hard negatives)`` index triples (the
    texts already capped to the plan's token limits) and write a ``biencoder`` checkpoint."""
    torch = require_torch()
    from safetensors.torch import save_file

    from memvault.embeddings._model_files import load_model_files, load_tokenizer, load_weights

    files = load_model_files(None)
    tokenizer = load_tokenizer(files)
    weights = load_weights(files)
    torch.manual_seed(plan.seed)
    model = _build_model(torch, weights, files.config)
    model.train()
    # Dropout is off: MiniLM's own fine-tuning used 0.1, but on a few hundred pairs the
    # deterministic run matters more (resumes and tests reproduce the same checkpoint).
    optimizer = torch.optim.AdamW(model.parameters(), lr=plan.learning_rate, weight_decay=0.01)
    generator = torch.Generator().manual_seed(plan.seed)
    batch = plan.batch_size
    steps_per_epoch = max(1, math.ceil(len(examples) / batch))
    total = steps_per_epoch * plan.epochs
    step = 0
    epoch_losses: list[float] = []
    for _epoch in range(plan.epochs):
        order = torch.randperm(len(examples), generator=generator).tolist()
        losses = []
        for start in range(0, len(order), batch):
            ctx.report(step, total)
            chunk = [examples[i] for i in order[start : start + batch]]
            cand = [pos for _, pos, _ in chunk]
            for _, _, negs in chunk:
                cand.extend(negs)
            q_ids, q_mask = _batch(torch, tokenizer, [queries[q] for q, _, _ in chunk])
            c_ids, c_mask = _batch(torch, tokenizer, [passages[c] for c in cand])
            yq = model(q_ids, q_mask)
            yc = model(c_ids, c_mask)
            logits = yq @ yc.T / plan.temperature
            cand_t = torch.tensor(cand)
            pos_t = torch.tensor([pos for _, pos, _ in chunk])
            mask = cand_t[None, :] == pos_t[:, None]
            labels = torch.arange(len(chunk))
            mask[labels, labels] = False
            logits = logits.masked_fill(mask, -1e9)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            step += 1
        epoch_losses.append(sum(losses) / max(1, len(losses)))
    ctx.report(total, total)
    out = checkpoint_dir / MODEL_SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    names = _name_map(files.config.num_layers)
    state = {
        theirs: model.state_dict()[ours].detach().contiguous() for ours, theirs in names.items()
    }
    save_file(state, str(out / "model.safetensors"))
    for name in ("tokenizer.json", "config.json", "sentence_bert_config.json"):
        src = files.directory / name
        if src.is_file():
            shutil.copyfile(src, out / name)
    write_meta(checkpoint_dir, meta)
    return {
        "epochs": plan.epochs,
        "steps": step,
        "learning_rate": plan.learning_rate,
        "temperature": plan.temperature,
        "epoch_losses": [round(x, 5) for x in epoch_losses],
    }
