"""Core Keras ALBERT: config, sharing modes, forward contract, masking, serialisation, bfloat16."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from model.network.config import AlbertConfig, PresetError, get_preset, parameter_counts
from model.network.pretraining_model import AlbertPretrainingModel

VOCAB = 97


def nano(**overrides) -> AlbertConfig:
    return get_preset("albert-nano", vocab_size=VOCAB, **overrides)


def batch(seed=0, batch_size=2, seq_len=12, lengths=(12, 7)):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (batch_size, seq_len)).astype("int32")
    mask = np.zeros((batch_size, seq_len), "int32")
    for row, length in enumerate(lengths):
        mask[row, :length] = 1
    ids = ids * mask
    segments = np.zeros_like(ids)
    segments[:, seq_len // 2 :] = 1
    return {
        "input_ids": ids,
        "segment_ids": segments * mask,
        "input_mask": mask,
        "masked_lm_positions": np.array([[1, 3, 5], [2, 4, 0]], "int32"),
    }


def test_config_validation_and_presets():
    with pytest.raises(ValueError, match="multiple of"):
        AlbertConfig(hidden_size=100, num_attention_heads=3)
    with pytest.raises(ValueError, match="num_hidden_groups"):
        AlbertConfig(num_hidden_layers=2, num_hidden_groups=3)
    with pytest.raises(PresetError, match="unknown ALBERT preset"):
        get_preset("albert-huge")
    with pytest.raises(PresetError, match="vocab_size"):
        get_preset("albert-tiny", vocab_size=0)
    assert get_preset("albert-base") == get_preset("albert-base-v2")
    assert get_preset("albert-base-v1").hidden_dropout_prob == 0.1
    assert get_preset("albert-base-v2").attention_probs_dropout_prob == 0.0
    bert = get_preset("bert-base")
    assert (bert.embedding_size, bert.sharing, bert.has_embedding_projection) == (
        768,
        "none",
        False,
    )
    assert get_preset("albert-tiny", vocab_size=8000).vocab_size == 8000


def test_group_and_sharing_slots():
    cfg = AlbertConfig(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    assert cfg.block_slots("attention") == [[0, 1], [0, 1], [2, 3], [2, 3]]
    none = cfg.model_copy(update={"sharing": "none"})
    assert none.block_slots("ffn") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    attention = cfg.model_copy(update={"sharing": "attention"})
    assert attention.num_block_sets("attention") == 4 and attention.num_block_sets("ffn") == 8


@pytest.mark.keras
@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_counting_function_matches_built_model(sharing):
    cfg = nano(sharing=sharing, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    model = AlbertPretrainingModel(cfg)
    counts = parameter_counts(cfg)
    assert model.count_params() == counts["pretraining"]
    assert model.backbone.count_params() == counts["backbone"]


@pytest.mark.keras
def test_forward_contract_and_padding_invariance():
    model = AlbertPretrainingModel(nano(num_hidden_layers=3))
    inputs = batch()
    out = model(inputs)
    assert tuple(out["mlm_logits"].shape) == (2, 3, VOCAB)
    assert tuple(out["sop_logits"].shape) == (2, 2)
    assert keras.backend.standardize_dtype(out["mlm_logits"].dtype) == "float32"

    backbone_out = model.backbone(inputs, output_hidden_states=True)
    assert len(backbone_out["hidden_states"]) == 4
    assert tuple(backbone_out["pooled_output"].shape) == (2, 32)

    # Masked-LM at the positions equals the full-sequence logits gathered there.
    full = model({k: v for k, v in inputs.items() if k != "masked_lm_positions"})["mlm_logits"]
    gathered = np.take_along_axis(np.asarray(full), inputs["masked_lm_positions"][..., None], 1)
    np.testing.assert_allclose(np.asarray(out["mlm_logits"]), gathered, atol=1e-5)

    # Changing padded tokens changes nothing at real tokens.
    changed = dict(inputs, input_ids=np.where(inputs["input_mask"] == 1, inputs["input_ids"], 9))
    seq_a = np.asarray(model.backbone(inputs)["sequence_output"])
    seq_b = np.asarray(model.backbone(changed)["sequence_output"])
    np.testing.assert_allclose(seq_a[1, :7], seq_b[1, :7], atol=1e-5)


@pytest.mark.keras
def test_training_dropout_path_and_defaults():
    model = AlbertPretrainingModel(nano(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    inputs = batch()
    eval_a = np.asarray(model(inputs)["sop_logits"])
    eval_b = np.asarray(model(inputs, training=False)["sop_logits"])
    np.testing.assert_array_equal(eval_a, eval_b)
    train = np.asarray(model(inputs, training=True)["mlm_logits"])
    assert np.isfinite(train).all()
    assert not np.allclose(train, np.asarray(model(inputs)["mlm_logits"]))
    with pytest.raises(ValueError, match="exceeds max_position_embeddings"):
        model.backbone({"input_ids": np.ones((1, 129), "int32")})
    # segment_ids and input_mask default to zeros and ones.
    only_ids = model.backbone({"input_ids": inputs["input_ids"][:1]})["sequence_output"]
    explicit = model.backbone(
        {
            "input_ids": inputs["input_ids"][:1],
            "segment_ids": np.zeros((1, 12), "int32"),
            "input_mask": np.ones((1, 12), "int32"),
        }
    )["sequence_output"]
    np.testing.assert_allclose(np.asarray(only_ids), np.asarray(explicit), atol=1e-6)


@pytest.mark.keras
def test_keras_file_round_trip(tmp_path):
    model = AlbertPretrainingModel(nano(num_hidden_groups=2, sharing="ffn"))
    path = tmp_path / "albert.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, AlbertPretrainingModel) and loaded.config == model.config
    inputs = batch()
    for key in ("mlm_logits", "sop_logits"):
        np.testing.assert_array_equal(
            np.asarray(model(inputs)[key]), np.asarray(loaded(inputs)[key])
        )


@pytest.mark.keras
def test_mixed_bfloat16_end_to_end():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = AlbertPretrainingModel(nano())
    finally:
        keras.config.set_dtype_policy(previous)
    assert model.backbone.embeddings.word_embeddings.embeddings.dtype == "float32"
    out = model(batch(), training=True)
    assert keras.backend.standardize_dtype(out["mlm_logits"].dtype) == "float32"
    assert np.isfinite(np.asarray(out["mlm_logits"])).all()
    seq = model.backbone(batch())["sequence_output"]
    assert keras.backend.standardize_dtype(seq.dtype) == "bfloat16"
