"""Sun et al. (2019) strategies: truncation, layer features, layer-wise learning rates."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from model.finetune import FinetuneConfig, Hyperparameters, hyperparameters
from model.finetune.features import LayerFeatures, feature_size
from model.finetune.optimizer import (
    LayerwiseAdamW,
    layer_depths,
    layerwise_multipliers,
    make_optimizer,
)
from model.network.backbone import AlbertBackbone
from model.network.config import get_preset
from model.tasks import get_task
from model.tasks.truncation import pair_budgets, truncate_pair, truncate_tokens


def test_truncation_strategies():
    tokens = list(range(10))
    assert truncate_tokens(tokens, 4, "head") == [0, 1, 2, 3]
    assert truncate_tokens(tokens, 4, "tail") == [6, 7, 8, 9]
    assert truncate_tokens(tokens, 5, "head_tail", head_tokens=2) == [0, 1, 7, 8, 9]
    assert truncate_tokens(tokens, 3, "head_tail", head_tokens=5) == [0, 1, 2]
    assert truncate_tokens(tokens, 20, "tail") == tokens
    long = list(range(1000))  # the paper's 128 + 382 of 510
    kept = truncate_tokens(long, 510, "head_tail", head_tokens=128)
    assert kept[:128] == long[:128] and kept[128:] == long[-382:]
    assert pair_budgets(10, 3, 8) == (5, 3) and pair_budgets(4, 4, 6) == (3, 3)
    a, b = truncate_pair(list("abcdefgh"), list("xyz"), 7, "tail")
    assert a == list("efgh") and b == list("xyz")


def test_head_tail_whose_head_fills_the_sequence_is_refused():
    """At --max-seq-length 128 the default --head-tokens 128 would keep the head alone."""
    given = {"task": "x", "init": "random", "spm_model": "s", "train_file": "t.csv", "output": "o"}
    given.update(text_column=["text"], truncation="head_tail", max_seq_length=128)
    with pytest.raises(ValueError, match="keeps the head alone: give --head-tokens below 126"):
        FinetuneConfig(**given)
    assert FinetuneConfig(**given, head_tokens=32).head_tokens == 32
    assert FinetuneConfig(**{**given, "max_seq_length": None}).truncation == "head_tail"


def test_hyperparameters_default_to_table_14_and_lower_lr_overrides():
    config = FinetuneConfig(task="mrpc", init="random", spm_model="x", data_dir="d", output="o")
    assert hyperparameters(config, get_task("mrpc")) == Hyperparameters(
        learning_rate=2e-5,
        batch_size=32,
        classifier_dropout=0.0,
        train_steps=800,
        warmup_steps=200,
        max_seq_length=512,
    )
    lower = config.model_copy(update={"learning_rate": 1e-6})
    assert hyperparameters(lower, get_task("mrpc")).learning_rate == 1e-6


def test_layer_depths_unshared_and_shared():
    unshared = get_preset("albert-nano", vocab_size=50, sharing="none")
    backbone = AlbertBackbone(unshared)
    paths = [v.path for v in backbone.trainable_variables]
    depths = layer_depths(unshared, paths)
    by_part = lambda part: {depths[p] for p in paths if part in p}
    assert (
        by_part("/attention_1/") == {1}
        and by_part("/attention_0/") == {2}
        and by_part("/ffn_0/") == {2}
    )
    assert by_part("/embeddings/") == {3} and by_part("embedding_hidden_mapping_in") == {3}
    assert by_part("/pooler/") == {0}
    shared = get_preset(
        "albert-nano", vocab_size=50
    )  # all layers share one block: head/encoder/embeddings
    depths = layer_depths(shared, [v.path for v in AlbertBackbone(shared).trainable_variables])
    assert sorted(set(depths.values())) == [0, 1, 2]
    multipliers = layerwise_multipliers(shared, list(depths), 0.5)
    assert sorted(set(multipliers.values())) == [0.25, 0.5, 1.0]


@pytest.mark.keras
def test_layerwise_adamw_scales_each_variables_step():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, name="low"), keras.layers.Dense(1, name="top")]
    )
    low_kernel = next(
        v for v in model.trainable_variables if "low" in v.path and "kernel" in v.path
    )
    top_kernel = next(
        v for v in model.trainable_variables if "top" in v.path and "kernel" in v.path
    )
    optimizer = LayerwiseAdamW({low_kernel.path: 0.5}, learning_rate=0.1, weight_decay=0.0)
    before = [np.array(low_kernel.numpy()), np.array(top_kernel.numpy())]
    model.compile(optimizer=optimizer, loss="mse")
    model.train_on_batch(np.ones((4, 3), "float32"), np.full((4, 1), 5.0, "float32"))
    step_low = np.abs(low_kernel.numpy() - before[0])
    step_top = np.abs(top_kernel.numpy() - before[1])
    # Adam's first step moves every coordinate by lr (with a non-zero gradient): 0.05 vs 0.1
    assert np.allclose(step_low[step_low > 0], 0.05, rtol=1e-3)
    assert np.allclose(step_top, 0.1, rtol=1e-3)


@pytest.mark.keras
def test_compile_for_fit_makes_the_optimizers_variables_before_fit():
    """So that `fit` makes none while tracing its step (which TensorFlow would trace twice)."""
    from model.finetune.training import compile_for_fit

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    compile_for_fit(model, LayerwiseAdamW(learning_rate=0.1), "mse")
    made = [v.path for v in model.optimizer.variables]
    assert len(made) > 2  # the step counter and rate, and Adam's moments of every variable
    model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), epochs=1, verbose=0)
    assert [v.path for v in model.optimizer.variables] == made


@pytest.mark.keras
@pytest.mark.parametrize("features", ["pooled", "cls", "concat_last4", "mean_last4", "mean_tokens"])
def test_layer_features_shapes_and_values(features):
    config = get_preset("albert-nano", vocab_size=50)
    backbone = AlbertBackbone(config)
    ids = np.array([[2, 7, 8, 3, 0], [2, 9, 3, 0, 0]], dtype="int32")
    mask = (ids > 0).astype("int32")
    outputs = backbone({"input_ids": ids, "input_mask": mask}, output_hidden_states=True)
    pooled = keras.ops.convert_to_numpy(LayerFeatures(features)(outputs, mask))
    assert pooled.shape == (2, feature_size(features, 32, 2))
    states = [keras.ops.convert_to_numpy(s) for s in outputs["hidden_states"]]
    if features == "mean_last4":
        assert np.allclose(pooled, np.mean([s[:, 0] for s in states[-4:]], axis=0), atol=1e-5)
    if features == "mean_tokens":
        assert np.allclose(pooled[1], states[-1][1, :3].mean(axis=0), atol=1e-5)


@pytest.mark.parametrize("schedule", ["reference", "after_warmup"])
def test_the_two_schedules(schedule):
    """`reference` decays over all the steps, warmup replacing the first (0.9 of the peak after 30
    of 300); `after_warmup` from the peak (transformers' `get_linear_schedule_with_warmup`)."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    hp = Hyperparameters(1e-3, 32, 0.0, 300, 30, 128)
    optimizer = make_optimizer(model, hp, 0.01, 1.0, 300, schedule)
    rate = keras.saving.deserialize_keras_object(optimizer.get_config()["learning_rate"])
    got = [float(rate(step)) for step in (0, 15, 30, 165, 300)]
    after = [1e-3, 0.5e-3, 0.0] if schedule == "after_warmup" else [0.9e-3, 0.45e-3, 0.0]
    np.testing.assert_allclose(got, [0.0, 0.5e-3, *after], atol=1e-9)
