"""Packed rows compute the paper's model: each instance's hidden states, losses and gradients in a
packed row equal those of the same instance run alone (padded to the row's length), on either
backend; attention is block-diagonal and positions and token types restart per instance."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from model.evaluation.heldout import pretraining_loss
from model.input import packing
from model.network.config import get_preset
from model.network.packed_attention import (
    Facts,
    block_diagonal_mask,
    choose_kernel,
    environment_facts,
)
from model.network.pretraining_model import AlbertPretrainingModel, model_inputs

pytestmark = pytest.mark.keras

SEQ, PREDS, VOCAB = 32, 4, 64
LENGTHS = (11, 14, 7)  # instances 0 and 1 share row 0, instance 2 is row 1
ROWS = [2, 1]


def _instances() -> dict:
    rng = np.random.default_rng(0)
    n = len(LENGTHS)
    mask = (np.arange(SEQ)[None, :] < np.asarray(LENGTHS)[:, None]).astype(np.int32)
    ids = rng.integers(5, VOCAB, (n, SEQ)).astype(np.int32) * mask
    ids[:, 0] = 2
    segments = np.zeros((n, SEQ), np.int32)
    for i, length in enumerate(LENGTHS):
        segments[i, length // 2 : length] = 1
    positions = np.zeros((n, PREDS), np.int32)
    weights = np.zeros((n, PREDS), np.float32)
    for i, length in enumerate(LENGTHS):
        chosen = np.sort(rng.choice(np.arange(1, length), size=3, replace=False))
        positions[i, :3], weights[i, :3] = chosen, 1.0
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "masked_lm_positions": positions,
        "masked_lm_ids": np.take_along_axis(ids, positions, 1),
        "masked_lm_weights": weights,
        "next_sentence_labels": np.array([[1], [0], [1]], np.int32),
    }


def _only(batch: dict, instance: int | None, packed: bool) -> dict:
    """`batch` with the loss weights of every instance but `instance` zeroed (None: all kept)."""
    batch = dict(batch)
    if instance is None:
        if not packed:
            batch["sop_weights"] = np.ones((len(LENGTHS), 1), np.float32)
        return batch
    if packed:  # instance i of the packed rows: row, slot by ROWS
        row, slot = (0, instance) if instance < ROWS[0] else (1, instance - ROWS[0])
        keep = np.zeros_like(batch["sop_weights"])
        keep[row, slot] = 1.0
        start = batch["cls_positions"][row, slot]
        owner = batch["instance_ids"][row, batch["masked_lm_positions"][row]]
        mlm = np.zeros_like(batch["masked_lm_weights"])
        mlm[row] = batch["masked_lm_weights"][row] * (owner == slot + 1)
        assert start == sum(LENGTHS[instance - slot : instance])
        batch["sop_weights"], batch["masked_lm_weights"] = keep, mlm
    else:
        keep = np.zeros((len(LENGTHS), 1), np.float32)
        keep[instance] = 1.0
        batch["masked_lm_weights"] = batch["masked_lm_weights"] * keep
        batch["sop_weights"] = keep  # one slot per unpacked row
    return batch


def _loss_and_grads(model, batch: dict):
    """(loss, per-variable gradients, sequence_output, sop_logits) with the global denominators of
    all three instances."""
    denominators = (float(sum(3 for _ in LENGTHS)), float(len(LENGTHS)))
    if keras.config.backend() == "jax":
        import jax

        if not hasattr(model, "_loss_and_grads"):  # compiled once per batch layout

            def loss_fn(values, non_trainable, batch):
                mapping = list(zip(model.trainable_variables, values))
                mapping += list(zip(model.non_trainable_variables, non_trainable))
                with keras.StatelessScope(state_mapping=mapping):
                    return _forward(model, batch, denominators)

            model._loss_and_grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))
        (loss, outputs), grads = model._loss_and_grads(
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            batch,
        )
        return float(loss), [np.asarray(g) for g in grads], *map(np.asarray, outputs)
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss, outputs = _forward(model, batch, denominators)
    grads = tape.gradient(loss, model.trainable_variables)
    grads = [np.asarray(tf.convert_to_tensor(g)) for g in grads]
    return float(loss), grads, *map(np.asarray, outputs)


def _forward(model, batch: dict, denominators):
    inputs = model_inputs(batch)
    states = model.backbone(inputs)
    outputs = model(inputs)
    loss = pretraining_loss(outputs, batch, *denominators)[0]
    return loss, (states["sequence_output"], outputs["sop_logits"])


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1)
    return AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB, num_hidden_layers=1))


def test_each_instance_in_a_packed_row_has_its_own_losses_and_gradients(model):
    alone = _instances()
    shape = packing.packing_shape(SEQ, PREDS, 2, 0.15)
    packed = packing.pack_rows(alone, ROWS, shape)
    assert packed["sop_weights"].tolist() == [[1, 1], [1, 0]]
    for instance in (None, 1, 2):  # the whole batch; the second of a shared row; one alone
        loss, grads, unpacked, _ = _loss_and_grads(model, _only(alone, instance, packed=False))
        packed_loss, packed_grads, sequence, sop = _loss_and_grads(
            model, _only(packed, instance, packed=True)
        )
        np.testing.assert_allclose(packed_loss, loss, rtol=1e-5, err_msg=str(instance))
        for ours, theirs in zip(packed_grads, grads):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6, err_msg=str(instance))
    assert sop.shape == (2, 2, 2)  # one SOP prediction per instance slot
    start = 0
    for instance, length in enumerate(LENGTHS[:2]):  # row 0: the same states as alone
        np.testing.assert_allclose(
            sequence[0, start : start + length], unpacked[instance, :length], rtol=1e-5, atol=1e-5
        )
        start += length


def test_attention_is_block_diagonal_and_the_dense_mask_runs_off_the_gpu():
    ids = np.array([[1, 1, 2, 2, 2, 0]], np.int32)
    mask = np.asarray(block_diagonal_mask(ids))[0, 0]
    assert mask.tolist() == [[a == b for b in ids[0]] for a in ids[0]]
    assert choose_kernel(environment_facts("bfloat16")) == "dense"  # CPU here


HOPPER = {"backend": "jax", "platform": "gpu", "jax_version": (0, 10, 2), "dtype": "bfloat16"}


@pytest.mark.parametrize(
    ("facts", "kernel"),
    [
        ({**HOPPER, "compute_capability": (9, 0), "pallas": True}, "cudnn_packed"),
        ({**HOPPER, "compute_capability": (8, 0), "pallas": True}, "pallas_mha"),  # Ampere
        (
            {**HOPPER, "compute_capability": (9, 0), "dtype": "float32", "pallas": True},
            "pallas_mha",
        ),
        ({**HOPPER, "compute_capability": (9, 0), "jax_version": (0, 11, 0)}, "dense"),
        ({**HOPPER, "compute_capability": (9, 0), "jax_version": (0, 9, 1)}, "dense"),
        (
            {**HOPPER, "compute_capability": (8, 6), "transformer_engine": True},
            "transformer_engine",
        ),
        ({**HOPPER, "compute_capability": None, "pallas": True}, "pallas_mha"),
        ({**HOPPER, "platform": "cpu", "compute_capability": (9, 0), "pallas": True}, "dense"),
        ({**HOPPER, "platform": "tpu", "pallas": True}, "dense"),
        ({**HOPPER, "backend": "tensorflow", "compute_capability": (9, 0)}, "dense"),
    ],
)
def test_the_kernel_for_packed_rows_falls_back_in_order(facts, kernel):
    assert choose_kernel(Facts(**facts)) == kernel


def test_a_padding_free_kernel_is_given_the_instance_ids_through_the_layers(model, monkeypatch):
    from model.network import transformer

    given = []

    def kernel(name, q, k, v, instance_ids, slots, scale):  # the dense arithmetic, recorded
        given.append((name, tuple(instance_ids.shape), slots))
        mask = block_diagonal_mask(instance_ids)
        scores = keras.ops.einsum("btnh,bsnh->bnts", q, k) * scale
        probs = keras.ops.softmax(keras.ops.where(mask, scores, -1e9), axis=-1)
        return keras.ops.einsum("bnts,bsnh->btnh", probs, v)

    packed = packing.pack_rows(_instances(), ROWS, packing.packing_shape(SEQ, PREDS, 2, 0.15))
    ids, cls = packed["instance_ids"], packed["cls_positions"]
    x = np.random.default_rng(0).normal(size=(2, SEQ, 16)).astype(np.float32)  # embeddings
    encoder = model.backbone.encoder
    dense = np.asarray(encoder(x, transformer.attention_mask(None, ids, cls))[-1])
    monkeypatch.setattr(transformer, "choose_kernel", lambda facts: "pallas_mha")
    monkeypatch.setattr(transformer, "packed_attention", kernel)
    mask = transformer.attention_mask(None, ids, cls)
    assert isinstance(mask, tuple)  # what the encoder hands every attention block
    fast = np.asarray(encoder(x, mask)[-1])
    assert given == [("pallas_mha", (2, SEQ), 2)]  # one layer
    real = packed["input_mask"].astype(bool)
    np.testing.assert_allclose(fast[real], dense[real], rtol=1e-5, atol=1e-5)
