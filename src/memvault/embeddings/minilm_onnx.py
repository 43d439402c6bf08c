"""all-MiniLM-L6-v2 on onnxruntime: memvault's default embedder.

No ``.onnx`` file ships with the model package, so the encoder graph is written here with
``onnx.helper`` from the same safetensors weights the numpy reference reads, quantised to int8
with onnxruntime's dynamic quantiser (about 3x faster than float32 on CPU, with the same retrieval
quality) and cached on disk. Later processes load the cached file in a fraction of a second.

Cache file names carry a fingerprint of the weights file and :data:`GRAPH_VERSION`, so a new
checkpoint or a changed graph never reuses a stale file. Files are written to a temporary name
and moved into place with :func:`os.replace`, so a concurrent process sees either no file or a
complete one; a file that fails to load anyway (disk corruption, manual edits) is rebuilt.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings._base import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_QUERY_CACHE_SIZE,
    MiniLMEmbedderBase,
)
from memvault.embeddings._model_files import (
    BertConfig,
    ModelFiles,
    load_weights,
)
from memvault.embeddings.minilm_numpy import ATTENTION_MASK_BIAS
from memvault.errors import EmbedderUnavailableError, MemoryConfigError

if TYPE_CHECKING:
    import onnx
    import onnxruntime

__all__ = [
    "CACHE_DIR_ENV",
    "GRAPH_VERSION",
    "OnnxMiniLMEmbedder",
    "build_minilm_graph",
    "default_cache_dir",
]

logger = logging.getLogger(__name__)

GRAPH_VERSION = 1
"""Part of every cache file name; bump it whenever the graph or the quantisation recipe changes."""

CACHE_DIR_ENV = "MEMVAULT_CACHE_DIR"
"""Environment variable naming the directory where built ONNX graphs are cached."""

_OPSET = 17
# IR version 8 pairs with opset 17 and loads on every onnxruntime memvault supports (>= 1.18);
# the onnx package would otherwise stamp its own newest IR version.
_IR_VERSION = 8
_META_PREFIX = "memvault."
# The metadata key onnxruntime's quantiser looks for to know the graph needs no pre-processing.
# The graph written here is already fully shape-inferable with no redundant nodes, so without it
# the quantiser only logs a warning on the *root* logger (configuring logging behind the
# application's back).
_PRE_PROCESSED_KEY = "onnx.quant.pre_process"
_PRE_PROCESSED_VALUE = "onnxruntime.quant"


def default_cache_dir() -> Path:
    """Directory for cached graphs: ``$MEMVAULT_CACHE_DIR`` or ``~/.cache/memvault/models``.

    ``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set, following the XDG convention.
    """
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "memvault" / "models"


def _fallback_cache_dir() -> Path:
    # Per-user name so two users on one machine do not fight over permissions in /tmp.
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"memvault-models-{uid}"


class _GraphBuilder:
    """Collects nodes and initializers with generated, unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counter = 0

    def _name(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def const(self, name: str, value: NDArray[Any]) -> str:
        """Add an initializer and return its name."""
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "", **attrs: Any) -> str:
        """Add a single-output node and return the name of its output."""
        out = self._name(hint or op_type.lower())
        self.nodes.append(
            self._helper.make_node(op_type, inputs, [out], name=f"{out}_node", **attrs)
        )
        return out

    def ops(self, op_type: str, inputs: list[str], n_out: int, **attrs: Any) -> list[str]:
        """Add a node with ``n_out`` outputs and return their names."""
        outs = [self._name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(
            self._helper.make_node(op_type, inputs, outs, name=f"{outs[0]}_node", **attrs)
        )
        return outs


def build_minilm_graph(
    weights: dict[str, NDArray[np.float32]],
    config: BertConfig,
    *,
    metadata: dict[str, str] | None = None,
) -> onnx.ModelProto:
    """Write the BERT encoder plus mean pooling and L2 normalisation as an ONNX float32 graph.

    Inputs are ``input_ids`` and ``attention_mask`` (int64, ``[batch, seq]``); the output
    ``sentence_embedding`` (float32, ``[batch, hidden]``) holds unit-length sentence vectors, so
    one ``run`` call does all the work. The node layout (MatMul + Add, Erf-based GELU,
    LayerNormalization) is what onnxruntime's optimiser fuses and its quantiser recognises.
    """
    from onnx import TensorProto, helper

    try:
        return _build_graph(weights, config, metadata or {}, helper, TensorProto)
    except KeyError as exc:
        raise EmbedderUnavailableError(
            f"the model weights lack tensor {exc.args[0]!r}; is this a BERT checkpoint?"
        ) from exc


def _build_graph(
    w: dict[str, NDArray[np.float32]],
    cfg: BertConfig,
    metadata: dict[str, str],
    helper: Any,
    tensor_proto: Any,
) -> onnx.ModelProto:
    g = _GraphBuilder()
    hidden, heads, head_dim = cfg.hidden_size, cfg.num_heads, cfg.head_dim
    eps = cfg.layer_norm_eps

    def i64(*values: int) -> NDArray[np.int64]:
        return np.array(values, dtype=np.int64)

    def f32(value: float) -> NDArray[np.float32]:
        return np.array(value, dtype=np.float32)

    axes_1 = g.const("axes_1", i64(1))
    axes_2 = g.const("axes_2", i64(2))
    axes_12 = g.const("axes_1_2", i64(1, 2))
    zero_1d = g.const("zero_1d", i64(0))
    split_qkv = g.const("split_qkv", i64(hidden, hidden, hidden))
    heads_shape = g.const("heads_shape", i64(0, 0, heads, head_dim))
    merged_shape = g.const("merged_shape", i64(0, 0, hidden))
    one = g.const("one", f32(1.0))
    half = g.const("half", f32(0.5))
    sqrt2 = g.const("sqrt2", f32(math.sqrt(2.0)))
    mask_scale = g.const("mask_scale", f32(-ATTENTION_MASK_BIAS))
    tiny_count = g.const("tiny_count", f32(1e-9))
    tiny_norm = g.const("tiny_norm", f32(1e-12))

    def linear(x: str, weight: NDArray[np.float32], bias: NDArray[np.float32], name: str) -> str:
        # torch Linear stores (out, in); ONNX MatMul wants (in, out) as the constant B input,
        # which is the form the dynamic quantiser turns into an int8 MatMulInteger.
        w_name = g.const(f"{name}.weight_t", np.ascontiguousarray(weight.T))
        b_name = g.const(f"{name}.bias", bias)
        return g.op("Add", [g.op("MatMul", [x, w_name]), b_name])

    def layer_norm(x: str, prefix: str) -> str:
        gamma = g.const(f"{prefix}.weight", w[f"{prefix}.weight"])
        beta = g.const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)

    # Embeddings. Inputs are single-segment, so token type 0's vector is folded into the
    # position table instead of being gathered per call.
    word = g.const("embeddings.word", w["embeddings.word_embeddings.weight"])
    position = g.const(
        "embeddings.position_plus_type0",
        w["embeddings.position_embeddings.weight"]
        + w["embeddings.token_type_embeddings.weight"][0],
    )
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    positions = g.op("Slice", [position, zero_1d, seq_len, zero_1d])
    x = g.op("Add", [g.op("Gather", [word, "input_ids"]), positions])
    x = layer_norm(x, "embeddings.LayerNorm")

    # Additive attention bias: 0 for real tokens, a huge negative number for padding.
    mask_f = g.op("Cast", ["attention_mask"], to=tensor_proto.FLOAT)
    mask_bias = g.op("Mul", [g.op("Sub", [mask_f, one]), mask_scale])
    mask_bias = g.op("Unsqueeze", [mask_bias, axes_12])  # [batch, 1, 1, seq]

    scale = np.float32(1.0 / math.sqrt(head_dim))
    for i in range(cfg.num_layers):
        p = f"encoder.layer.{i}."
        # Q, K and V in one product (one int8 kernel instead of three); the 1/sqrt(d) score
        # scale is folded into the query weights, which is exact up to float rounding.
        qkv_w = np.concatenate(
            [
                w[p + "attention.self.query.weight"] * scale,
                w[p + "attention.self.key.weight"],
                w[p + "attention.self.value.weight"],
            ],
            axis=0,
        )
        qkv_b = np.concatenate(
            [
                w[p + "attention.self.query.bias"] * scale,
                w[p + "attention.self.key.bias"],
                w[p + "attention.self.value.bias"],
            ]
        )
        qkv = linear(x, qkv_w, qkv_b, f"{p}attention.qkv")
        q, k, v = g.ops("Split", [qkv, split_qkv], 3, axis=-1)
        q = g.op("Transpose", [g.op("Reshape", [q, heads_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, heads_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, heads_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("MatMul", [q, k]), mask_bias])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merged_shape])
        attn = linear(
            ctx,
            w[p + "attention.output.dense.weight"],
            w[p + "attention.output.dense.bias"],
            f"{p}attention.output.dense",
        )
        x = layer_norm(g.op("Add", [attn, x]), f"{p}attention.output.LayerNorm")
        ff = linear(
            x,
            w[p + "intermediate.dense.weight"],
            w[p + "intermediate.dense.bias"],
            f"{p}intermediate.dense",
        )
        # Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), in the node pattern onnxruntime fuses.
        erf = g.op("Erf", [g.op("Div", [ff, sqrt2])])
        ff = g.op("Mul", [g.op("Mul", [ff, g.op("Add", [erf, one])]), half])
        ff = linear(
            ff, w[p + "output.dense.weight"], w[p + "output.dense.bias"], f"{p}output.dense"
        )
        x = layer_norm(g.op("Add", [ff, x]), f"{p}output.LayerNorm")

    # Mean pooling over real tokens, then L2 normalisation.
    mask_3d = g.op("Unsqueeze", [mask_f, axes_2])
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask_3d]), axes_1], keepdims=0)
    counts = g.op("ReduceSum", [mask_f, axes_1], keepdims=1)
    pooled = g.op("Div", [summed, g.op("Max", [counts, tiny_count])])
    norm = g.op("ReduceL2", [pooled], axes=[1], keepdims=1)
    g.nodes.append(
        helper.make_node(
            "Div", [pooled, g.op("Max", [norm, tiny_norm])], ["sentence_embedding"], name="output"
        )
    )

    graph = helper.make_graph(
        g.nodes,
        "all_minilm_l6_v2",
        [
            helper.make_tensor_value_info("input_ids", tensor_proto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", tensor_proto.INT64, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info(
                "sentence_embedding", tensor_proto.FLOAT, ["batch", hidden]
            )
        ],
        initializer=g.initializers,
    )
    model: onnx.ModelProto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="memvault",
        ir_version=_IR_VERSION,
    )
    for key, value in {**metadata, _PRE_PROCESSED_KEY: _PRE_PROCESSED_VALUE}.items():
        entry = model.metadata_props.add()
        entry.key = key
        entry.value = value
    return model


THREADS_ENV = "MEMVAULT_EMBEDDER_THREADS"


def _default_threads() -> int:
    """``$MEMVAULT_EMBEDDER_THREADS``, else ``min(4, cores)`` (``serve --workers`` sets the
    variable so that its processes share the cores instead of each claiming all of them)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise MemoryConfigError(f"{THREADS_ENV} must be a positive integer, got {raw!r}")
        return value
    return min(4, os.cpu_count() or 1)


class OnnxMiniLMEmbedder(MiniLMEmbedderBase):
    """all-MiniLM-L6-v2 on onnxruntime, int8-quantised by default; memvault's default embedder.

    Vectors match :class:`NumpyMiniLMEmbedder` (cosine ~0.99 on typical sentences quantised,
    ~0.97 on one-word inputs, >= 0.9999 with ``quantize=False``) and the ``model_id`` is the
    same, so stores built with either runtime are interchangeable. Quantised activations are
    scaled per batch, so a text's vector moves very slightly (cosine > 0.98) with its batch
    mates; use ``quantize=False`` where bit-for-bit batch independence matters.

    The graph is built from the safetensors weights on first use and cached in ``cache_dir``
    (default :func:`default_cache_dir`); an unwritable cache directory falls back to a per-user
    temporary directory with a warning.

    Instances are thread-safe; share one per process (see
    :func:`memvault.embeddings.default_embedder`) since each holds its own copy of the model.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        quantize: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        intra_op_threads: int | None = None,
    ) -> None:
        """Record settings; nothing is read or built until the first embed call or :meth:`load`.

        ``intra_op_threads`` defaults to ``$MEMVAULT_EMBEDDER_THREADS``, else
        ``min(4, os.cpu_count())``: MiniLM's matrices are too small for more threads to pay for
        their synchronisation.
        """
        super().__init__(
            model_dir=model_dir,
            batch_size=batch_size,
            query_cache_size=query_cache_size,
            max_batch_tokens=max_batch_tokens,
        )
        if intra_op_threads is not None and intra_op_threads < 1:
            raise MemoryConfigError(f"intra_op_threads must be >= 1, got {intra_op_threads}")
        self._quantize = quantize
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self._threads = intra_op_threads or _default_threads()
        self._session: onnxruntime.InferenceSession | None = None
        self._model_path: Path | None = None

    @property
    def runtime(self) -> str:
        """The runtime name: ``onnx-int8`` or ``onnx-float32``."""
        return "onnx-int8" if self._quantize else "onnx-float32"

    @property
    def quantized(self) -> bool:
        """True if the int8-quantised graph is used."""
        return self._quantize

    @property
    def model_path(self) -> Path | None:
        """The cached ``.onnx`` file in use, or None before the model is loaded."""
        return self._model_path

    # Prefix of the cached file names; subclasses serving another model change it.
    _cache_stem = "all-minilm-l6-v2"

    def _source_fingerprint(self, files: ModelFiles) -> str:
        """Fingerprint of the file the graph is built from (part of the cache file name)."""
        return files.fingerprint()

    def _build_float_graph(self, files: ModelFiles, metadata: dict[str, str]) -> onnx.ModelProto:
        """The float32 graph (inputs ``input_ids``/``attention_mask``, output
        ``sentence_embedding`` of unit vectors) that is then quantised and cached."""
        weights = load_weights(files)
        return build_minilm_graph(weights, files.config, metadata=metadata)

    def _load_runtime(self, files: ModelFiles) -> None:
        fingerprint = self._source_fingerprint(files)
        kind = "int8" if self._quantize else "fp32"
        file_name = f"{self._cache_stem}-{fingerprint}-g{GRAPH_VERSION}-{kind}.onnx"
        metadata = {
            f"{_META_PREFIX}model_id": self.model_id,
            f"{_META_PREFIX}weights_fingerprint": fingerprint,
            f"{_META_PREFIX}graph_version": str(GRAPH_VERSION),
            f"{_META_PREFIX}kind": kind,
        }
        primary = self._cache_dir if self._cache_dir is not None else default_cache_dir()
        candidates = [primary]
        fallback = _fallback_cache_dir()
        if fallback != primary:
            candidates.append(fallback)

        built: list[bytes] = []

        def model_bytes() -> bytes:
            # Built at most once, and only when no usable cached file turns up.
            if not built:
                built.append(self._build(files, metadata))
            return built[0]

        # The temporary directory is only a fallback for a cache directory that cannot be
        # written; a writable one always gets the (re)built file, so a corrupt entry is replaced.
        last_error: OSError | None = None
        for directory in candidates:
            path = directory / file_name
            if path.is_file():
                # A read-only cache (e.g. baked into a container image) is fine for reading.
                session = self._try_session(path, metadata)
                if session is not None:
                    self._session, self._model_path = session, path
                    return
            try:
                # Check the directory before building, so an unwritable cache whose fallback
                # already holds the file costs no build.
                directory.mkdir(parents=True, exist_ok=True)
                if not os.access(directory, os.W_OK | os.X_OK):
                    raise PermissionError(f"no write permission on {directory}")
                path = _write_atomically(directory, file_name, model_bytes())
            except OSError as exc:
                last_error = exc
                logger.warning("embedder.cache_unwritable dir=%s error=%s", directory, exc)
                continue
            session = self._try_session(path, metadata)
            if session is None:
                raise EmbedderUnavailableError(
                    f"onnxruntime cannot load the graph it has just built ({path})"
                )
            self._session, self._model_path = session, path
            return
        # Nowhere to cache: still work, from memory, at the cost of rebuilding in every process.
        logger.warning(
            "embedder.cache_disabled error=%s; the graph will be rebuilt in every process",
            last_error,
        )
        self._session = self._make_session(model_bytes())
        self._model_path = None

    def _build(self, files: ModelFiles, metadata: dict[str, str]) -> bytes:
        import onnx

        logger.info("embedder.building_graph runtime=%s (one-off, cached afterwards)", self.runtime)
        model = self._build_float_graph(files, metadata)
        if not self._quantize:
            return bytes(model.SerializeToString())
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # quantize_dynamic only writes to a path; use a private temporary directory so a crash
        # never leaves a half-written file in the shared cache.
        try:
            with (
                _quiet_root_logging(),
                tempfile.TemporaryDirectory(prefix="memvault-quant-") as tmp,
            ):
                out = Path(tmp) / "model.int8.onnx"
                quantize_dynamic(
                    model,
                    out,
                    op_types_to_quantize=["MatMul"],
                    weight_type=QuantType.QInt8,
                    # One scale per output column instead of one per matrix: BERT's weight
                    # columns differ a lot in range (and the query block is pre-scaled by
                    # 1/sqrt(d)); per-tensor scales cost ~4 points of cosine to the float model
                    # on typical sentences, per-channel ones under 1.
                    per_channel=True,
                    extra_options={"MatMulConstBOnly": True},
                )
                quantized = onnx.load_model(str(out))
        except OSError as exc:
            # Not a cache problem (the caller treats OSError as "cache unwritable").
            raise EmbedderUnavailableError(
                f"cannot quantise the model in a temporary directory: {exc}"
            ) from exc
        # The quantiser may not carry our metadata over; restore it for the load-time check.
        present = {p.key for p in quantized.metadata_props}
        for key, value in metadata.items():
            if key not in present:
                entry = quantized.metadata_props.add()
                entry.key, entry.value = key, value
        return bytes(quantized.SerializeToString())

    def _make_session(self, model: Path | bytes) -> onnxruntime.InferenceSession:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: ORT's info/warning lines go to stderr
        # Idle worker threads sleep instead of spinning: a server embeds one short query at a
        # time between other work (SQLite, ranking, HTTP), and spinning threads steal those cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        source = str(model) if isinstance(model, Path) else model
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])

    def _try_session(
        self, path: Path, metadata: dict[str, str]
    ) -> onnxruntime.InferenceSession | None:
        """Open a cached graph; None (after a warning) if it is unreadable or not ours."""
        try:
            session = self._make_session(path)
            found = session.get_modelmeta().custom_metadata_map
            inputs = sorted(i.name for i in session.get_inputs())
        except Exception as exc:  # onnxruntime raises its own untyped exception classes
            logger.warning("embedder.cache_corrupt path=%s error=%s; rebuilding", path, exc)
            return None
        if inputs != ["attention_mask", "input_ids"] or any(
            found.get(key) != value for key, value in metadata.items()
        ):
            logger.warning("embedder.cache_mismatch path=%s; rebuilding", path)
            return None
        return session

    def _encode_batch(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        session = self._session
        assert session is not None  # set by load()
        try:
            (out,) = session.run(
                ["sentence_embedding"], {"input_ids": input_ids, "attention_mask": attention_mask}
            )
        except Exception as exc:  # pragma: no cover - only on onnxruntime internal failures
            raise EmbedderUnavailableError(f"onnxruntime failed to run the model: {exc}") from exc
        return np.asarray(out, dtype=np.float32)


@contextlib.contextmanager
def _quiet_root_logging() -> Iterator[None]:
    """Stop onnxruntime's quantiser from configuring logging behind the application's back.

    The quantiser logs through the module-level ``logging.info``/``logging.warning``, which call
    :func:`logging.basicConfig` when the root logger has no handler - permanently attaching a
    stderr handler to an application that never asked for one (and turning its own later
    ``basicConfig`` call into a no-op). A temporary ``NullHandler`` prevents that; applications
    that did configure logging are left exactly as they are.
    """
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        yield
    finally:
        root.removeHandler(guard)


def _write_atomically(directory: Path, file_name: str, data: bytes) -> Path:
    """Write ``data`` to ``directory/file_name`` via a temporary file and :func:`os.replace`.

    Concurrent writers each use their own temporary file; the last rename wins and every reader
    sees a complete file. Raises OSError if the directory cannot be created or written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{file_name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, directory / file_name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return directory / file_name
