"""Attention inside each instance of a packed row (`model.input.packing`): which kernel runs it, and
the kernels.

`choose_kernel(facts)` is pure: from the facts of the environment (`environment_facts`: the Keras
backend, JAX's platform and version, the GPU's compute capability, the compute dtype, which
optional kernels import) it picks the first that applies of
  1. `cudnn_packed`: cuDNN's fused attention in its packed layout (each instance's offset and
     length in the row: `jax._src.cudnn.fused_attention_stablehlo.dot_product_attention` with
     `q_offsets`/`kv_offsets`), JAX on a GPU of compute capability 9.0 (Hopper) or newer, in
     bf16/fp16, and a JAX release whose private signature we know (`CUDNN_PACKED_JAX`);
  2. `pallas_mha`: the Pallas GPU flash-attention kernel with `segment_ids`
     (`jax.experimental.pallas.ops.gpu.attention.mha`), JAX on a GPU;
  3. `transformer_engine`: Transformer Engine's JAX fused attention with segment ids, where its
     wheel imports, JAX on a GPU;
  4. `dense`: the block-diagonal `[B, 1, T, T]` mask (`block_diagonal_mask`) with the ordinary
     attention, everywhere else (CPU, TensorFlow, TPU).
The kernels other than `dense` do no work across instances and none on padding. Which is fastest on
a device is for `benchmarks/gpu/check.py` to measure; none has been measured here.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass

from keras import ops

CUDNN_PACKED_JAX = ((0, 10, 0), (0, 11, 0))
"""The JAX releases (from, before) whose private `dot_product_attention` was read to take q_offsets
and kv_offsets with the signature `cudnn_packed` calls (0.10.x, the kit's)."""

KERNELS = ("cudnn_packed", "pallas_mha", "transformer_engine", "dense")


@dataclass(frozen=True)
class Facts:
    """What decides the kernel: the Keras backend, JAX's platform (cpu, gpu, tpu) and version, the
    GPU's compute capability (major, minor), the compute dtype's name, and whether the optional
    kernels import."""

    backend: str
    platform: str = "cpu"
    jax_version: tuple[int, ...] = ()
    compute_capability: tuple[int, int] | None = None
    dtype: str = "float32"
    pallas: bool = False
    transformer_engine: bool = False


def choose_kernel(facts: Facts) -> str:
    """The kernel for packed rows in this environment (see the module doc)."""
    if facts.backend != "jax" or facts.platform != "gpu":
        return "dense"
    low, high = CUDNN_PACKED_JAX
    if (
        low <= facts.jax_version < high
        and facts.compute_capability is not None
        and facts.compute_capability >= (9, 0)
        and facts.dtype in ("bfloat16", "float16")
    ):
        return "cudnn_packed"
    if facts.pallas:
        return "pallas_mha"
    if facts.transformer_engine:
        return "transformer_engine"
    return "dense"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


@functools.cache
def environment_facts(dtype: str) -> Facts:
    """This process's `Facts` for a computation in `dtype`."""
    import keras  # heavy: Keras' backend decides

    backend = keras.config.backend()
    if backend != "jax":
        return Facts(backend, dtype=dtype)
    import jax  # heavy: only the JAX backend asks

    platform = jax.default_backend()
    capability = None
    if platform == "gpu":
        text = getattr(jax.devices()[0], "compute_capability", None)
        capability = tuple(int(x) for x in text.split(".")[:2]) if text else None
    return Facts(
        backend,
        platform,
        _version(jax.__version__),
        capability,
        dtype,
        importlib.util.find_spec("jax.experimental.pallas") is not None,
        importlib.util.find_spec("transformer_engine") is not None,
    )


def block_diagonal_mask(instance_ids):
    """`instance_ids [B, T]` (1..K per instance, 0 on padding) -> boolean `[B, 1, T, T]`: a token
    sees the tokens of its own instance; padding sees padding (never an empty row)."""
    ids = ops.cast(instance_ids, "int32")
    return ops.expand_dims(ops.equal(ids[:, :, None], ids[:, None, :]), 1)


def instance_offsets(instance_ids, slots: int):
    """(lengths, offsets) of cuDNN's packed layout: `[B, K]` tokens of each instance and
    `[B, K + 1]` their starts, -1 for an empty slot (and the last column)."""
    ids = ops.cast(instance_ids, "int32")
    hot = ops.cast(ops.equal(ids[:, :, None], ops.arange(1, slots + 1, dtype="int32")), "int32")
    lengths = ops.sum(hot, axis=1)
    starts = ops.cumsum(lengths, axis=1) - lengths
    present = lengths > 0
    missing = -ops.ones_like(lengths)
    offsets = ops.concatenate([ops.where(present, starts, missing), missing[:, :1]], axis=1)
    return ops.where(present, lengths, missing), offsets


def packed_attention(kernel: str, q, k, v, instance_ids, slots: int, scale: float):
    """Attention of `[B, T, N, H]` heads within each instance of `instance_ids [B, T]` by
    `kernel` (not `dense`, which `AttentionBlock` runs with `block_diagonal_mask`); the outputs at
    padding positions are unspecified."""
    if kernel == "cudnn_packed":
        from jax._src.cudnn import fused_attention_stablehlo as cudnn  # private: see the doc

        lengths, offsets = instance_offsets(instance_ids, slots)
        return cudnn.dot_product_attention(
            q,
            k,
            v,
            q_seqlen=lengths,
            kv_seqlen=lengths,
            q_offsets=offsets,
            kv_offsets=offsets,
            scale=scale,
            mask_type=cudnn.MaskType.PADDING,
        )
    if kernel == "pallas_mha":
        from jax.experimental.pallas.ops.gpu import attention  # optional: GPU JAX

        return attention.mha(q, k, v, ops.cast(instance_ids, "int32"), sm_scale=scale)
    if kernel == "transformer_engine":
        from transformer_engine.jax import attention  # optional: its wheel

        ids = ops.cast(instance_ids, "int32")
        positions = ops.cumsum(ops.ones_like(ids), axis=1) - 1
        descriptor = attention.SequenceDescriptor.from_segment_ids_and_pos(
            (ids, ids), (positions, positions)
        )
        return attention.fused_attn(
            (q, k, v),
            None,
            descriptor,
            None,
            attention.AttnBiasType.NO_BIAS,
            attention.AttnMaskType.PADDING_MASK,
            attention.QKVLayout.THD_THD_THD,
            scale,
            0.0,
            True,
            max_segments_per_seq=slots,
        )
    raise ValueError(f"packed attention kernel {kernel!r}: not one of {KERNELS[:-1]}")
