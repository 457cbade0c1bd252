"""model.pretrain end to end on a tiny model: outputs, learning, gradient accumulation, --init,
the CLI."""

import json

import numpy as np
import pytest
import yaml

keras = pytest.importorskip("keras")

from pretrain_runs import shared_jax_compilations  # noqa: F401 (autouse)
from pretrain_testdata import write_shards

from model import checkpointing, distribute
from model.pretrain import PretrainConfig, main, run
from model.pretraining_metrics import evaluate_pretraining

TINY = {
    "preset": "albert-nano",
    "batch_size": 8,
    "learning_rate": 5e-3,
    "warmup_steps": 2,
    "eval_batches": 2,
    "progress": False,
    "jit_compile": False,
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(write_shards(tmp_path_factory.mktemp("records"), num_shards=3, per_shard=32))


@pytest.mark.keras
def test_cli_run_writes_every_output_and_learns(data, tmp_path, capsys):
    output = tmp_path / "run"
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({**TINY, "data": data, "steps": 40}))
    code = main(
        [
            "--config",
            str(tmp_path / "run.yaml"),
            "--output",
            str(output),
            "--log-every",
            "10",
            "--eval-every",
            "20",
            "--checkpoint-every",
            "10",
            "--keep-checkpoints",
            "2",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["steps"] == 40
    assert [c.step for c in checkpointing.list_checkpoints(str(output / "checkpoints"))] == [30, 40]
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["split"] == "train"]
    assert [r["step"] for r in train] == [10, 20, 30, 40]
    assert train[-1]["loss"] < train[0]["loss"]
    assert {
        "masked_lm_accuracy",
        "sop_accuracy",
        "masked_lm_loss",
        "sop_loss",
        "learning_rate",
    } <= set(train[0])
    assert [r["step"] for r in records if r["split"] == "heldout"] == [20, 40]
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
        str(output / "export" / "model.keras"), data, batch_size=8, max_batches=2
    )
    for name in ("masked_lm_accuracy", "masked_lm_loss", "sop_accuracy", "sop_loss", "perplexity"):
        assert exported[name] == pytest.approx(result["heldout"][name], rel=1e-4)

    # --init loads weights only: a fresh output starts at step 0 from the checkpoint's weights.
    further = run(
        PretrainConfig(
            **{**TINY, "learning_rate": 1e-9, "warmup_steps": 0},
            data=data,
            steps=1,
            output=str(tmp_path / "further"),
            export=False,
            init=result["checkpoint"],
        )
    )
    assert further["steps"] == 1
    assert abs(further["heldout"]["loss"] - result["heldout"]["loss"]) < 1e-3


@pytest.mark.keras
def test_gradient_accumulation_equals_one_large_batch(data, tmp_path):
    common = dict(TINY, data=data, steps=2, export=False, eval_batches=1)
    whole = run(PretrainConfig(**common, output=str(tmp_path / "whole")))
    accumulated = run(
        PretrainConfig(
            **{**common, "jit_compile": True},
            output=str(tmp_path / "accumulated"),
            gradient_accumulation=4,
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
        run(
            PretrainConfig(
                **{**TINY, "batch_size": 6},
                data=data,
                output=str(tmp_path / "x"),
                steps=1,
                gradient_accumulation=4,
            )
        )


def test_float16_trains_with_loss_scaling(data, tmp_path):
    result = run(
        PretrainConfig(
            **{**TINY, "eval_batches": 1},
            data=data,
            output=str(tmp_path / "fp16"),
            steps=2,
            export=False,
            precision="float16",
        )
    )
    assert np.isfinite(result["train"]["loss"]) and np.isfinite(result["heldout"]["loss"])
