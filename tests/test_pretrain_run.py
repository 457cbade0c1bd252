"""model.pretrain end to end on a tiny model: outputs, learning, gradient accumulation, --init,
the CLI."""

import json

import numpy as np
import pytest
import yaml

keras = pytest.importorskip("keras")

import pretrain_runs
from pretrain_runs import SETTINGS

from model.checkpoints import store as checkpointing
from model.evaluation.heldout import evaluate_pretraining
from model.pretrain import main, run
from model.runtime import distribute


@pytest.fixture
def data(tmp_path_factory):
    """The shared records: with `SETTINGS` on JAX every run here but the XLA-compiled one takes
    the step compiled by the first (and by the other modules' runs on this worker)."""
    return str(pretrain_runs.records(tmp_path_factory))


class Enough(Exception):
    pass


@pytest.mark.keras
def test_cli_run_writes_every_output_and_learns(data, tmp_path, capsys):
    output = tmp_path / "run"
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({**SETTINGS, "data": data, "export": True}))
    code = main(
        ["--config", str(tmp_path / "run.yaml"), "--output", str(output), "--log-every", "2"]
        + ["--eval-every", "3", "--checkpoint-every", "2", "--keep-checkpoints", "2"]
    )  # the flags override the file
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["steps"] == 6
    assert [c.step for c in checkpointing.list_checkpoints(str(output / "checkpoints"))] == [4, 6]
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["split"] == "train"]
    assert [r["step"] for r in train] == [2, 4, 6]
    assert train[-1]["loss"] < train[0]["loss"]
    assert {
        "masked_lm_accuracy",
        "sop_accuracy",
        "masked_lm_loss",
        "sop_loss",
        "learning_rate",
    } <= set(train[0])
    assert [r["step"] for r in records if r["split"] == "heldout"] == [3, 6]
    assert set(result["heldout"]) >= {
        "masked_lm_accuracy",
        "masked_lm_loss",
        "perplexity",
        "sop_accuracy",
        "sop_loss",
    }
    assert list((output / "tensorboard").glob("events.out.tfevents.*"))
    assert (output / "export" / "model.keras").is_file()
    assert (output / "export" / "hf" / "config.json").is_file()
    assert "held-out masked_lm_accuracy" in (output / "export" / "hf" / "README.md").read_text()
    assert (output / "export" / "keras_hub" / "model.weights.h5").is_file()

    # The exported model scores the same on the held-out split through evaluate_pretraining.
    exported = evaluate_pretraining(
        str(output / "export" / "model.keras"), data, batch_size=8, max_batches=1
    )
    for name in ("masked_lm_accuracy", "masked_lm_loss", "sop_accuracy", "sop_loss", "perplexity"):
        assert exported[name] == pytest.approx(result["heldout"][name], rel=1e-4)

    # --init loads weights only: a fresh output starts at step 0 from the checkpoint's weights.
    # The warmup's first rate is 0, so step 1 leaves them as they are and its evaluation scores
    # them (the run is stopped there: only that record matters).
    def stop_after_step_1_heldout(record):
        if record["split"] == "heldout":
            raise Enough

    further = tmp_path / "further"
    with pytest.raises(Enough):
        run(
            pretrain_runs.config(data, further, eval_every=1, init=result["checkpoint"]),
            on_metrics=stop_after_step_1_heldout,
        )
    step_1, heldout = pretrain_runs.metrics_records(further)
    assert (step_1["split"], step_1["learning_rate"], heldout["step"]) == ("train", 0.0, 1)
    assert heldout["loss"] == pytest.approx(result["heldout"]["loss"], abs=1e-4)


@pytest.mark.slow
@pytest.mark.keras
def test_gradient_accumulation_equals_one_large_batch(data, tmp_path):
    whole = run(pretrain_runs.config(data, tmp_path / "whole", steps=2))
    accumulated = run(
        pretrain_runs.config(
            data, tmp_path / "accumulated", steps=2, jit_compile=True, gradient_accumulation=4
        )
    )  # also runs the XLA-compiled step
    for name in ("loss", "masked_lm_accuracy", "sop_loss"):
        assert accumulated["train"][name] == pytest.approx(whole["train"][name], rel=1e-3)
        assert accumulated["heldout"][name] == pytest.approx(whole["heldout"][name], rel=1e-3)


def test_strategy_follows_the_hardware():
    cluster = json.dumps(
        {
            "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
            "task": {"type": "worker", "index": 1},
        }
    )
    assert distribute.strategy_name(None, 0, "") == "default"
    assert distribute.strategy_name(None, 1, "") == "default"
    assert distribute.strategy_name(None, 2, "") == "mirrored"
    assert distribute.strategy_name(None, 2, cluster) == "multi_worker"
    assert distribute.strategy_name("my-tpu", 0, cluster) == "tpu"


def test_batch_not_divisible_by_accumulation_is_a_clear_error(data, tmp_path):
    from albert.errors import StageError

    with pytest.raises(StageError, match="divisible"):
        run(pretrain_runs.config(data, tmp_path / "x", batch_size=6, gradient_accumulation=4))


def test_float16_trains_with_loss_scaling(data, tmp_path):
    result = run(pretrain_runs.config(data, tmp_path / "fp16", steps=2, precision="float16"))
    assert np.isfinite(result["train"]["loss"]) and np.isfinite(result["heldout"]["loss"])
