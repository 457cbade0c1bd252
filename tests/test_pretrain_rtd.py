"""`--objective rtd` (ELECTRA's replaced-token detection): the corruption and its loss, a run that
trains, resumes exactly and exports the discriminator (model.keras, Hugging Face `AlbertModel`,
keras-hub) and the generator beside it, and the refusal of a generator larger than the
discriminator."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import pretrain_runs
from model_testdata import padded_inputs

from model.network.config import get_preset

pytestmark = pytest.mark.keras

RTD = {"objective": "rtd", "steps": 2, "checkpoint_every": 1, "eval_every": 0}


def test_generator_config_scales_width_and_refuses_a_larger_generator():
    from model.network.electra import generator_config

    base = get_preset("albert-base", vocab_size=100)
    small = generator_config(base, 0.25)
    assert (small.hidden_size, small.num_attention_heads, small.intermediate_size) == (
        192,
        3,
        768,
    )
    assert (small.embedding_size, small.num_hidden_layers) == (128, 12)
    assert generator_config(base, 1.0) == base
    with pytest.raises(ValueError, match="larger than the discriminator"):
        generator_config(base, 1.5)


def test_corrupt_writes_the_samples_at_the_real_masked_positions():
    from model.network.electra import corrupt

    ids = np.array([[2, 4, 4, 9, 3]], "int32")
    positions = np.array([[1, 2, 0]], "int32")  # the last is padding (weight 0)
    corrupted, replaced = corrupt(
        ids, positions, np.array([[1.0, 1.0, 0.0]]), np.array([[7, 5, 8]]), np.array([[7, 6, 0]])
    )
    assert np.asarray(corrupted).tolist() == [[2, 7, 5, 9, 3]]
    assert np.asarray(replaced).tolist() == [[0.0, 0.0, 1.0, 0.0, 0.0]]


def test_rtd_loss_counts_every_real_token():
    from model.evaluation.heldout import metrics_from_sums, objective_loss

    logits = np.array([[3.0, -3.0, 0.5, 9.0]], "float32")
    outputs = {
        "mlm_logits": np.zeros((1, 1, 5), "float32"),
        "sop_logits": np.zeros((1, 2), "float32"),
        "rtd_logits": logits,
        "rtd_labels": np.array([[1.0, 0.0, 0.0, 1.0]], "float32"),
    }
    batch = {
        "masked_lm_ids": np.array([[1]]),
        "masked_lm_weights": np.array([[1.0]]),
        "next_sentence_labels": np.array([0]),
        "input_mask": np.array([[1, 1, 1, 0]]),
    }
    loss, sums = objective_loss(outputs, batch, (1.0, 1.0, 3.0), rtd_weight=2.0)
    metrics = metrics_from_sums(sums, rtd_weight=2.0)
    nll = np.log1p(np.exp(-3.0)) * 2 + np.log1p(np.exp(0.5))
    assert metrics["replaced_token_accuracy"] == pytest.approx(2 / 3)
    assert metrics["rtd_loss"] == pytest.approx(nll / 3, rel=1e-5)
    base = np.log(5.0) + np.log(2.0)
    assert float(loss) == pytest.approx(base + 2.0 * nll / 3, rel=1e-5)
    assert metrics["loss"] == pytest.approx(float(loss), rel=1e-5)


def test_exports_load_back_into_an_rtd_model():  # set_weights alone: one backend is enough
    if keras.config.backend() != "tensorflow":
        pytest.skip("backend-independent; run in the TensorFlow pass")
    from model.network.electra import (
        AlbertElectraModel,
        discriminator_model,
        generator_model,
        load_parts,
    )

    config = get_preset("albert-nano", vocab_size=64)
    model = AlbertElectraModel(config, 0.5)
    other = AlbertElectraModel(config, 0.5)
    load_parts(other, discriminator_model(model), generator_model(model))
    head = {id(w) for w in model.rtd_head.weights}  # a standard ALBERT has no RTD head
    for mine, theirs in zip(model.weights, other.weights):
        if id(mine) not in head:
            np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    inputs = padded_inputs(64, 12)
    np.testing.assert_allclose(
        np.asarray(discriminator_model(model).backbone(inputs)["sequence_output"]),
        np.asarray(model.backbone(inputs)["sequence_output"]),
        atol=1e-6,
    )


def test_rtd_trains_resumes_exactly_and_exports_the_discriminator(tmp_path_factory, tmp_path):
    from model.pretrain import run

    data = pretrain_runs.records(tmp_path_factory)
    whole = run(pretrain_runs.config(data, tmp_path / "whole", **RTD))
    train = whole["train"]
    assert {"rtd_loss", "replaced_token_accuracy", "masked_lm_accuracy"} <= set(train)
    assert 0.0 < whole["heldout"]["replaced_token_accuracy"] <= 1.0
    assert train["loss"] == pytest.approx(
        train["masked_lm_loss"] + train["sop_loss"] + 50.0 * train["rtd_loss"]
    )

    # Resumed from step 1's checkpoint, the run ends with the same weights (generator, sampler
    # state) and records as the one never interrupted.
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(tmp_path / "whole", resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoints" / "ckpt-000000002")
    # The exports are the same files on both backends, their loading is backend-free: checked in
    # the TensorFlow pass only, for time.
    export = keras.config.backend() == "tensorflow"
    resumed = run(pretrain_runs.config(data, resumed_dir, **RTD, export=export))
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    assert pretrain_runs.metrics_records(resumed_dir) == pretrain_runs.metrics_records(
        tmp_path / "whole"
    )

    if not export:
        return
    export = resumed_dir / "export"
    assert (export / "generator" / "model.keras").is_file()
    transformers = pytest.importorskip("transformers")
    hf = transformers.AlbertModel.from_pretrained(str(export / "hf"))
    assert "the discriminator of an ELECTRA-style run" in (export / "hf" / "README.md").read_text()
    keras_hub = pytest.importorskip("keras_hub")
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(export / "keras_hub"))
    inputs = padded_inputs(hf.config.vocab_size, 12)
    theirs = backbone(
        {
            "token_ids": inputs["input_ids"],
            "segment_ids": inputs["segment_ids"],
            "padding_mask": inputs["input_mask"],
        }
    )["sequence_output"]
    assert np.asarray(theirs).shape == (3, 12, hf.config.hidden_size)


def test_a_generator_larger_than_the_discriminator_is_one_line_exit_2(tmp_path, capsys):
    from model.pretrain import main

    code = main(
        ["--data", str(tmp_path), "--output", str(tmp_path / "run")]
        + ["--objective", "rtd", "--generator-hidden-fraction", "1.5"]
    )
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "larger than the discriminator" in error, error


def test_another_objective_on_an_existing_output_is_another_training_run(tmp_path):
    """rtd over an mlm run's checkpoints (which record no objective) and mlm over an rtd run's: the
    run is refused as another run's (the flows then move the old output aside)."""
    import json

    from model.pretrain import IncompatibleOutputError, PretrainConfig, resumable_checkpoint

    checkpoint = tmp_path / "run" / "checkpoints" / "ckpt-000000001"
    checkpoint.mkdir(parents=True)
    np.savez(checkpoint / "weights.npz", w=np.zeros(1))
    for objective, recorded in (("rtd", {"seed": 1}), ("mlm", {"seed": 1, "objective": "rtd"})):
        (checkpoint / "state.json").write_text(json.dumps({"step": 1, "identity": recorded}))
        config = PretrainConfig(data="d", output=str(tmp_path / "run"), objective=objective)
        identity = {"seed": 1, **({"objective": "rtd"} if objective == "rtd" else {})}
        with pytest.raises(IncompatibleOutputError, match=r"another training run \(objective"):
            resumable_checkpoint(config, identity)


def test_rtd_settings_are_never_dropped_silently(tmp_path, caplog):
    """An RTD flag with --objective mlm is named as ignored; --packing on with --length-buckets
    is refused before any work; an RTD --init with no generator/ beside it says that the generator
    starts from random weights."""
    from albert.config import ConfigError, load_config
    from model.network.electra import AlbertElectraModel, discriminator_model
    from model.pretrain import PretrainConfig
    from model.pretrain.build import load_electra_parts

    mlm = load_config(PretrainConfig, overrides={"data": "d", "output": "o", "rtd_weight": 9})
    assert mlm.ignored_settings() == ["--rtd-weight"]
    rtd = mlm.model_copy(update={"objective": "rtd"})
    assert rtd.ignored_settings() == []
    with pytest.raises(ConfigError, match=r"--packing on with --length-buckets 3"):
        overrides = {"data": "d", "output": "o", "packing": "on", "length_buckets": 3}
        load_config(PretrainConfig, overrides=overrides)
    model = AlbertElectraModel(get_preset("albert-nano", vocab_size=64), 0.5)
    init = str(tmp_path / "export" / "model.keras")
    with caplog.at_level("WARNING"):
        load_electra_parts(model, discriminator_model(model), init)
    assert f"--init {init}: no generator beside it" in caplog.text
