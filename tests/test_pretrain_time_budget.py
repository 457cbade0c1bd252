"""--time-budget: the duration, the schedule laid over training time (on an injected clock, never a
timed assertion), the stop, the resume that keeps the time spent, and the one-line errors."""

import json

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from pretrain_testdata import write_shards

from albert.config import ConfigError, build_config
from model.checkpoints import store as checkpointing
from model.pretrain import PretrainConfig, main, run
from model.pretrain.time_budget import TrainingClock, budget_learning_rate, parse_duration

TINY = {
    "preset": "albert-nano",
    "batch_size": 8,
    "learning_rate": 5e-3,
    "warmup_steps": 2,
    "eval_batches": 1,
    "eval_every": 0,
    "progress": False,
    "jit_compile": False,
}


class TickingClock:
    """A clock that advances `tick` seconds each time it is read."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


@pytest.mark.parametrize(
    "text, seconds",
    [("2h", 7200), ("45m", 2700), ("90s", 90), ("1h30m", 5400), ("0.5h", 1800), (" 10M ", 600)],
)
def test_durations_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "2 days", "h", "1h-5m", "0s", "1x"])
def test_a_bad_duration_is_one_line(text):
    with pytest.raises(ValueError) as error:
        parse_duration(text)
    assert "\n" not in str(error.value)


def test_schedule_warms_up_by_step_then_decays_to_zero_at_the_budget():
    def rate(step, elapsed):
        return budget_learning_rate(1.0, 4, 100.0, step, elapsed)

    assert [rate(step, 1.0) for step in range(4)] == [0.0, 0.25, 0.5, 0.75]
    assert rate(4, 0.0) == 1.0
    assert rate(10, 25.0) == pytest.approx(0.75)
    assert rate(10, 99.0) == pytest.approx(0.01)
    assert rate(10, 100.0) == 0.0
    assert rate(10, 250.0) == 0.0  # past the budget: never negative
    assert budget_learning_rate(1.0, 0, 100.0, 0, 50.0, power=2.0) == pytest.approx(0.25)


def test_clock_counts_on_from_the_recorded_time():
    ticks = iter([10.0, 13.0, 20.0])
    clock = TrainingClock(spent_before=100.0, clock=lambda: next(ticks))
    assert clock.elapsed() == 100.0  # not started: only what the checkpoint recorded
    clock.start()
    assert clock.elapsed() == 103.0
    assert clock.elapsed() == 110.0


def test_steps_and_time_budget_together_are_one_line_of_error(tmp_path, capsys):
    with pytest.raises(ConfigError, match="--steps or --time-budget, not both"):
        build_config(PretrainConfig, {"data": "d", "output": "o", "steps": 5, "time_budget": "1m"})
    assert PretrainConfig(data="d", output="o", time_budget="1m").budget_seconds == 60.0
    code = main(["--data", "d", "--output", str(tmp_path), "--steps", "5", "--time-budget", "1m"])
    error = capsys.readouterr().err.strip()
    assert code == 2 and "not both" in error and "\n" not in error
    assert main(["--data", "d", "--output", str(tmp_path), "--time-budget", "soon"]) == 2
    assert "not a duration" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.keras
def test_budget_run_stops_at_the_budget_and_a_resume_keeps_the_time_spent(tmp_path):
    data = str(write_shards(tmp_path / "records", num_shards=2, per_shard=16))
    output = tmp_path / "run"
    common = dict(TINY, data=data, output=str(output), log_every=1, checkpoint_every=1000)

    first = run(PretrainConfig(**common, time_budget="4s", export=False), clock=TickingClock(0.2))
    assert first["time_budget"] == "4s" and first["training_seconds"] >= 4.0
    saved = checkpointing.read_state(first["checkpoint"])
    assert saved["step"] == first["steps"] and saved["training_seconds"] >= 4.0

    # A longer budget continues the same run from the time its checkpoint recorded.
    second = run(PretrainConfig(**common, time_budget="8s"), clock=TickingClock(0.2))
    assert second["steps"] > first["steps"] and second["training_seconds"] >= 8.0
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["split"] == "train"]
    assert [r["step"] for r in train] == list(range(1, second["steps"] + 1))
    seconds = [r["training_seconds"] for r in train]
    assert seconds == sorted(seconds) and seconds[first["steps"]] > saved["training_seconds"]
    rates = [r["learning_rate"] for r in train]
    assert rates[:2] == [0.0, pytest.approx(2.5e-3)]  # warmup: steps 0 and 1 of 2
    for decay in (rates[2 : first["steps"]], rates[first["steps"] :]):  # each run's budget
        assert len(decay) > 2 and decay == sorted(decay, reverse=True) and decay[-1] < 1e-3
    assert rates[first["steps"]] == pytest.approx(
        5e-3 * (1 - seconds[first["steps"] - 1] / 8), rel=0.2
    )
    card = (output / "export" / "hf" / "README.md").read_text()
    assert "--time-budget 8s" in card and '"time_budget"' not in card.split("---")[1]

    # Re-run once the budget is spent: nothing trains, the final checkpoint stands.
    again = run(PretrainConfig(**common, time_budget="8s", export=False), clock=TickingClock(0.2))
    assert again["steps"] == second["steps"] and again["checkpoint"] == second["checkpoint"]


@pytest.mark.keras
def test_the_learning_rate_reaches_the_compiled_step(tmp_path):
    """A rate of 0 leaves the weights as they were, a rate > 0 moves them: the value set before
    each step reaches the optimizer of the backend's compiled step."""
    from model.pretrain.build import build_training
    from model.pretrain.identity import data_spec
    from model.pretrain.loop import select_devices, training_batches, training_engine

    data = str(write_shards(tmp_path / "records", num_shards=2, per_shard=16))
    config = PretrainConfig(**TINY, data=data, output=str(tmp_path / "o"), time_budget="1h")
    spec = data_spec(config)
    backend = keras.config.backend()
    strategy, distribution, replicas = select_devices(config, backend)
    model, optimizer, schedule = build_training(config, spec, strategy, 100, None)
    assert schedule is None
    engine = training_engine(config, backend, model, optimizer, strategy, distribution, replicas)

    def weights_after_step(batches, rate):
        engine.set_learning_rate(rate)
        engine.step(next(batches)[2])  # (epoch, batch in epoch, batch)
        engine.sync()
        return [np.array(w) for w in model.get_weights()]

    before = [np.array(w) for w in model.get_weights()]
    with training_batches(config, spec, engine, 0, 0) as batches:
        unchanged = weights_after_step(batches, 0.0)
        moved = weights_after_step(batches, 1e-3)
    assert all(np.array_equal(a, b) for a, b in zip(before, unchanged))
    assert any(not np.array_equal(a, b) for a, b in zip(unchanged, moved))
    assert float(np.asarray(optimizer.learning_rate)) == pytest.approx(1e-3)
    compiled = (  # one compilation serves every rate
        engine._step._cache_size()
        if backend == "jax"
        else engine.step.experimental_get_tracing_count()
    )
    assert compiled == 1


def test_albert_run_passes_the_budget_to_pretrain_and_states_it(tmp_path):
    from flows.pipeline.flow import PretrainPipelineConfig, stage_configs
    from flows.pipeline.report import training_text

    config = PretrainPipelineConfig(run_dir=str(tmp_path), time_budget="45m")
    pretrain = stage_configs(config)["pretrain"]
    assert pretrain.time_budget == "45m" and "steps" not in pretrain.model_fields_set
    with pytest.raises(ConfigError, match="not both"):
        build_config(PretrainPipelineConfig, {"run_dir": "r", "steps": 5, "time_budget": "1h"})
    facts = {"steps": 812, "time_budget": "45m", "batch_size": 32, "max_seq_length": 64}
    facts.update(export="x/model.keras", export_hf="x/hf")
    assert training_text(facts).startswith("812 steps (time budget 45m) × 32 sequences")
