"""Checkpoint interop: Hugging Face parity (import and export), TF1 checkpoints, dispatch,
errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from model_testdata import padded_inputs

from model.checkpoints.weights import ConversionError, weight_entries
from model.conversion.convert import load_pretrained
from model.conversion.hf import export_huggingface
from model.network.config import get_preset
from model.network.pretraining_model import AlbertPretrainingModel

VOCAB = 101
PARITY_CONFIGS = {
    "one-group": {"num_hidden_layers": 2},
    "groups": {"num_hidden_layers": 4, "num_hidden_groups": 2},
    "inner-groups": {"num_hidden_layers": 3, "inner_group_num": 2},
    "groups-and-inner": {
        "num_hidden_layers": 4,
        "num_hidden_groups": 2,
        "inner_group_num": 2,
        "hidden_act": "gelu",
    },
    "uneven-groups-E-equals-H": {
        "num_hidden_layers": 3,
        "num_hidden_groups": 2,
        "embedding_size": 32,
    },
}


def hf_config(**overrides):
    from transformers import AlbertConfig as HFAlbertConfig

    values = {
        "vocab_size": VOCAB,
        "embedding_size": 16,
        "hidden_size": 32,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "max_position_embeddings": 64,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "hidden_act": "gelu_new",
    }
    return HFAlbertConfig(**{**values, **overrides})


def inputs(seed=0):
    return {
        **padded_inputs(VOCAB, 10, seed),
        "masked_lm_positions": np.array([[0, 4, 9], [1, 2, 5], [0, 1, 2]], "int32"),
    }


def hf_logits(hf_model, batch):
    import torch

    with torch.no_grad():
        out = hf_model(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
        )
    return out.prediction_logits.numpy(), out.sop_logits.numpy()


def max_diffs(model, hf_model, batch):
    """(masked-LM, SOP) max abs differences, the MLM compared at the masked positions."""
    hf_mlm, hf_sop = hf_logits(hf_model, batch)
    out = model(batch)
    hf_mlm = np.take_along_axis(hf_mlm, batch["masked_lm_positions"][..., None], axis=1)
    return (
        float(np.abs(np.asarray(out["mlm_logits"]) - hf_mlm).max()),
        float(np.abs(np.asarray(out["sop_logits"]) - hf_sop).max()),
    )


@pytest.mark.slow
@pytest.mark.keras
@pytest.mark.parametrize("name", sorted(PARITY_CONFIGS))
def test_huggingface_import_parity(name, tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AlbertForPreTraining

    torch.manual_seed(sorted(PARITY_CONFIGS).index(name))
    hf_model = AlbertForPreTraining(hf_config(**PARITY_CONFIGS[name])).eval()
    with torch.no_grad():  # non-trivial biases and LayerNorm parameters
        for param in hf_model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    hf_model.save_pretrained(tmp_path)
    model = load_pretrained(str(tmp_path))
    mlm_diff, sop_diff = max_diffs(model, hf_model, inputs())
    print(f"parity {name}: mlm {mlm_diff:.2e} sop {sop_diff:.2e}")
    assert mlm_diff < 1e-4 and sop_diff < 1e-4


@pytest.mark.keras
@pytest.mark.parametrize(
    "overrides",
    [
        {"num_hidden_layers": 4, "num_hidden_groups": 2},
        {"embedding_size": 32, "sharing": "none", "inner_group_num": 2},
    ],
)
def test_huggingface_export_round_trip(overrides, tmp_path):
    pytest.importorskip("torch")
    from transformers import AlbertForPreTraining

    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB, **overrides))
    export_huggingface(model, str(tmp_path / "hf"))
    hf_model = AlbertForPreTraining.from_pretrained(tmp_path / "hf").eval()
    mlm_diff, sop_diff = max_diffs(model, hf_model, inputs(1))
    assert mlm_diff < 1e-4 and sop_diff < 1e-4
    # ... and back into ours.
    again = load_pretrained(str(tmp_path / "hf"))
    np.testing.assert_allclose(
        np.asarray(again(inputs(1))["mlm_logits"]),
        np.asarray(model(inputs(1))["mlm_logits"]),
        atol=1e-5,
    )


@pytest.mark.keras
def test_export_refuses_partial_sharing(tmp_path):
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB, sharing="attention"))
    with pytest.raises(ConversionError, match="no equivalent"):
        export_huggingface(model, str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()


def write_tf1_checkpoint(model, prefix, extra_names=()):
    """A reference-style checkpoint written with tf.compat.v1 from `model`'s weights."""
    import tensorflow as tf

    values = {
        entry.tf1: np.asarray(entry.variable).T
        if entry.tf1_transpose
        else np.asarray(entry.variable)
        for entry in weight_entries(model)
    }
    graph = tf.Graph()
    with graph.as_default():
        variables = []
        for name, value in values.items():
            variables.append(
                tf.compat.v1.get_variable(name, initializer=tf.constant(value), use_resource=False)
            )
            for slot in extra_names:
                variables.append(
                    tf.compat.v1.get_variable(
                        f"{name}/{slot}", initializer=tf.zeros(value.shape), use_resource=False
                    )
                )
        variables.append(tf.compat.v1.train.get_or_create_global_step())
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)


def reference_config(model):
    cfg = model.config
    return {
        "vocab_size": cfg.vocab_size,
        "embedding_size": cfg.embedding_size,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_hidden_groups": cfg.num_hidden_groups,
        "inner_group_num": cfg.inner_group_num,
        "num_attention_heads": cfg.num_attention_heads,
        "intermediate_size": cfg.intermediate_size,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": cfg.max_position_embeddings,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "net_structure_type": 0,
        "layers_to_keep": [],
        "gap_size": 0,
        "num_memory_blocks": 0,
        "down_scale_factor": 1,
    }


def test_tf1_checkpoint_import(tmp_path):
    config = get_preset(
        "albert-nano",
        vocab_size=VOCAB,
        num_hidden_layers=4,
        num_hidden_groups=2,
        inner_group_num=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    model = AlbertPretrainingModel(config)
    prefix = str(tmp_path / "model.ckpt-100")
    write_tf1_checkpoint(model, prefix, extra_names=("adam_m", "adam_v"))
    (tmp_path / "albert_config.json").write_text(json.dumps(reference_config(model)))

    loaded = load_pretrained(prefix)
    assert loaded.config == config
    assert load_pretrained(str(tmp_path)).config == config  # the directory's latest checkpoint
    for ours, theirs in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    batch = inputs(2)
    np.testing.assert_allclose(
        np.asarray(loaded(batch)["mlm_logits"]), np.asarray(model(batch)["mlm_logits"]), atol=1e-6
    )


def test_tf1_checkpoint_errors(tmp_path):
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB))
    prefix = str(tmp_path / "model.ckpt")
    write_tf1_checkpoint(model, prefix)
    with pytest.raises(ConversionError, match="no config next to the checkpoint"):
        load_pretrained(prefix)
    wrong = get_preset("albert-nano", vocab_size=VOCAB + 1)
    with pytest.raises(ConversionError, match="word_embeddings has shape"):
        load_pretrained(prefix, config=wrong)
    deeper = get_preset("albert-nano", vocab_size=VOCAB, num_hidden_groups=2)
    with pytest.raises(ConversionError, match="missing tensors.*group_1"):
        load_pretrained(prefix, config=deeper)
    with pytest.raises(ConversionError, match="not a .keras file"):
        load_pretrained(str(tmp_path / "nothing"))


@pytest.mark.keras
def test_load_pretrained_keras_files(tmp_path):
    import fsspec

    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB))
    model.save(tmp_path / "model.keras")
    local = load_pretrained(str(tmp_path / "model.keras"))
    fs = fsspec.filesystem("memory")
    fs.pipe("/albert-test/model.keras", (tmp_path / "model.keras").read_bytes())
    remote = load_pretrained("memory://albert-test/model.keras")
    batch = inputs()
    for loaded in (local, remote):
        np.testing.assert_array_equal(
            np.asarray(loaded(batch)["sop_logits"]), np.asarray(model(batch)["sop_logits"])
        )
    model.backbone.save(tmp_path / "backbone.keras")
    with pytest.raises(ConversionError, match="holds a AlbertBackbone"):
        load_pretrained(str(tmp_path / "backbone.keras"))


def test_huggingface_backbone_only_import(tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AlbertModel

    torch.manual_seed(0)
    hf_model = AlbertModel(hf_config()).eval()
    hf_model.save_pretrained(tmp_path)
    model = load_pretrained(str(tmp_path))
    batch = inputs()
    with torch.no_grad():
        expected = hf_model(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
        )
    ours = model.backbone(batch)
    np.testing.assert_allclose(
        np.asarray(ours["pooled_output"]), expected.pooler_output.numpy(), atol=1e-5
    )


def test_huggingface_config_mapping():
    from model.conversion.hf import config_from_huggingface, config_to_huggingface

    config = get_preset("albert-nano", vocab_size=VOCAB, num_hidden_groups=2)
    assert config_from_huggingface(config_to_huggingface(config)) == config
    with pytest.raises(ConversionError, match="position_embedding_type"):
        config_from_huggingface({"position_embedding_type": "relative_key"})
    with pytest.raises(ConversionError, match="hidden_act"):
        config_from_huggingface({"hidden_act": "silu"})
