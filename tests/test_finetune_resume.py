"""A fine-tuning run stopped by SIGTERM saves a checkpoint and exits 75; the same command resumes it
and ends with the weights, metrics and predictions of the run that was never stopped. Here GLUE
classification through the command line, on both backends, and the progress lines; the other task
kinds (STS-B regression after a multi-task phase, with a stop in each phase, SQuAD v2, RACE and
further pretraining) stop and resume beside their end-to-end runs in tests/test_finetune_run.py
(`resumed_run`), on TensorFlow (the resume logic is one code path for every kind; the backend's
part, the batches' position and `fit`'s state, is the classification case's). Signals are real
(os.kill), sent at a deterministic step by a hook: no sleeps.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from albert.errors import EXIT_INTERRUPTED, Interrupted
from model import finetune
from tests.fixtures.tasks.tiny_vocab import OBJECTS, SUBJECTS, VERBS, train_tiny_spm

SMALL = {
    "init": "random",
    "preset": "albert-nano",
    "max_seq_length": 32,
    "train_steps": 4,
    "eval_every": 2,
    "checkpoint_every": 2,
    "batch_size": 8,
    "max_train_examples": 32,
    "max_dev_examples": 16,
    "patience": 5,
}


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


def _signal_at(monkeypatch, steps: dict[str, int]) -> None:
    """SIGTERM during step `steps[label]` of the phase `label` ('multitask' or the task's)."""
    from model.finetune.training import TrainingLoop

    end = TrainingLoop.on_train_batch_end

    def signalling(loop, batch, logs=None):
        if steps.get(loop.progress.label) == loop.step + 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return end(loop, batch, logs)

    monkeypatch.setattr(TrainingLoop, "on_train_batch_end", signalling)


def resumed_run(config, monkeypatch, stops: list[tuple[dict[str, int], str]]) -> None:
    """Run `config` stopped by SIGTERM at each of `stops` in turn (`{phase: step}` and the pattern
    of its `Interrupted`), then to its end."""
    for steps, pattern in stops:
        with monkeypatch.context() as patch, pytest.raises(Interrupted, match=pattern):
            _signal_at(patch, steps)
            finetune.run(config)
    finetune.run(config)


def _outcome(output: Path) -> tuple[dict, dict, list]:
    """(results.json without its paths, the prediction files' text, the model's weights)."""
    import keras

    results = json.loads((output / "results.json").read_text())
    for key in ("config", "predictions"):
        results.pop(key)
    files = {p.name: p.read_text() for p in output.iterdir() if p.name.startswith(("pred", "null"))}
    weights = keras.saving.load_model(output / "model.keras", compile=False).get_weights()
    return results, files, weights


def assert_same(resumed: Path, uninterrupted: Path) -> None:
    results, files, weights = _outcome(resumed)
    expected, expected_files, expected_weights = _outcome(uninterrupted)
    assert results == expected and files == expected_files
    assert len(weights) == len(expected_weights)
    assert all(np.array_equal(a, b) for a, b in zip(weights, expected_weights))
    assert not Path(f"{resumed}.checkpoints").exists()  # deleted once the output is committed


def tiny_sst2(directory: Path, train: int = 32, dev: int = 16) -> Path:
    """An SST-2 layout (`train.tsv`, `dev.tsv`) of sentences of the tiny vocabulary."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, count in (("train", train), ("dev", dev)):
        rows = ["sentence\tlabel"]
        for index in range(count):
            subject, verb = SUBJECTS[index % len(SUBJECTS)], VERBS[index % len(VERBS)]
            rows.append(f"{subject} {verb} {OBJECTS[(index * 7) % len(OBJECTS)]}\t{index % 2}")
        (directory / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    return directory


def _argv(values: dict) -> list[str]:
    argv = []
    for name, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{name.replace('_', '-')}", str(item)]
    return argv


@pytest.mark.slow
@pytest.mark.keras
def test_sigterm_saves_exits_75_and_the_same_command_resumes_to_the_uninterrupted_run(
    spm_model, tmp_path, monkeypatch, capsys
):
    """Through the command line, GLUE classification: the stop at step 3 (between two
    evaluations: the interval's loss sums are restored too) says where it saved, in a log that is
    whole lines (no carriage return, no colour code), with the progress and dev lines."""
    values = {**SMALL, "spm_model": spm_model, "task": "sst2"}
    values["data_dir"] = str(tiny_sst2(tmp_path / "SST-2"))
    uninterrupted, output = tmp_path / "uninterrupted", tmp_path / "run"
    finetune.run(finetune.FinetuneConfig(**values, output=str(uninterrupted)))
    argv = _argv({**values, "output": str(output)})
    handler = signal.getsignal(signal.SIGTERM)
    capsys.readouterr()
    with monkeypatch.context() as patch:
        _signal_at(patch, {"sst2": 3})
        assert finetune.main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err
    assert "sst2: training 4 steps" in err and "sst2: step 2/4, dev accuracy" in err
    (line,) = [line for line in err.splitlines() if " interrupted: " in line]
    saved = f"{output}.checkpoints/task/ckpt-000000003"
    assert f"SIGTERM at step 3: saved {saved}; resume with: python -m model.finetune" in line
    assert signal.getsignal(signal.SIGTERM) is handler  # the handlers are given back
    assert not (output / "results.json").exists()
    assert finetune.main(argv) == 0
    assert "sst2: training 4 steps, resumed at step 3" in capsys.readouterr().err
    assert_same(output, uninterrupted)
    # the same command once more: the finished output is the answer, nothing is trained again
    before = (output / "results.json").stat().st_mtime_ns
    assert finetune.main(argv) == 0
    assert "fine-tuned before with these settings" in capsys.readouterr().err
    assert (output / "results.json").stat().st_mtime_ns == before


@pytest.mark.slow
def test_a_user_s_task_with_sun_strategies_stops_early_and_resumes_exactly(
    spm_model, tmp_path, monkeypatch
):
    """A user's own task (a header-less CSV of text pairs, its dev set held out of train) with
    head+tail truncation of texts longer than the length and layer-wise learning-rate decay: at a
    rate too small to move the dev accuracy, the second evaluation brings no improvement and
    `--patience 1` stops it at step 4 of 8, the best weights (step 2) kept; stopped by SIGTERM at
    step 3, the same command resumes to the uninterrupted run."""
    rows = []
    for index in range(48):
        words = [SUBJECTS[index % len(SUBJECTS)], VERBS[index % len(VERBS)]]
        words += [OBJECTS[(index * k) % len(OBJECTS)] for k in (3, 5, 7, 11)]
        rows.append(f'"{" ".join(words)}",{" ".join(reversed(words))},{index % 3}\n')
    (tmp_path / "team.csv").write_text("".join(rows))
    values = {
        **SMALL,
        "spm_model": spm_model,
        "train_file": str(tmp_path / "team.csv"),
        "text_column": ["0", "1"],
        "label_column": "2",
        "dev_fraction": 0.25,
        "max_seq_length": 12,
        "truncation": "head_tail",
        "head_tokens": 3,
        "layer_decay": 0.9,
        "learning_rate": 1e-9,
        "train_steps": 8,
        "patience": 1,
    }
    uninterrupted = tmp_path / "uninterrupted"
    finetune.run(finetune.FinetuneConfig(**values, output=str(uninterrupted)))
    results = json.loads((uninterrupted / "results.json").read_text())
    assert results["task"] == "team" and results["config"]["truncation"] == "head_tail"
    assert [h["step"] for h in results["history"]] == [2, 4] and results["best_step"] == 2
    stops = [({"team": 3}, "at step 3: saved .*resumed.checkpoints/task/ckpt-000000003")]
    resumed = finetune.FinetuneConfig(**values, output=str(tmp_path / "resumed"))
    resumed_run(resumed, monkeypatch, stops)
    assert_same(tmp_path / "resumed", uninterrupted)


@pytest.mark.slow
def test_the_reports_next_command_runs_as_printed(spm_model, tmp_path, monkeypatch):
    """The run report's "Next:" command, exactly as printed, from the repository's layout (the
    run's export and vocabulary under runs/, the GLUE data in ../shared/data): here a tiny export
    and a tiny SST-2 in that layout, in a folder of the test's own."""
    import shlex
    import shutil

    from albert import cli
    from albert.tokenization import AlbertTokenizer
    from flows.pipeline.flow import PretrainPipelineConfig, next_command
    from flows.pipeline.report import headline
    from model.pretrain import PretrainConfig, build_model

    work = tmp_path / "repo"
    config = PretrainPipelineConfig(run_dir="runs/demo")
    command = next_command(config)
    assert command.endswith(f" --train-steps 300 --max-seq-length {config.max_seq_length}")
    report = headline(_report_facts(command, config))
    assert f"```bash\n{command}\n```" in report and "Table 14; sst2: 20,935 steps" in report
    monkeypatch.chdir(work.parent)
    (work / "runs" / "demo" / "vocab").mkdir(parents=True)
    shutil.copy(spm_model, work / "runs" / "demo" / "vocab" / "spiece.model")
    tiny_sst2(tmp_path / "shared" / "data" / "glue" / "SST-2", train=64, dev=16)
    export = work / config.trained_model()
    export.parent.mkdir(parents=True)
    pretrain_config = PretrainConfig(data="-", output="-", preset="albert-nano")
    build_model(pretrain_config, AlbertTokenizer(spm_model).vocab_size).save(export)
    monkeypatch.chdir(work)
    argv = shlex.split(command)
    assert argv[0] == "albert"
    assert cli.main(argv[1:]) == 0
    results = json.loads((work / "runs" / "demo" / "finetune-sst2" / "results.json").read_text())
    assert results["hyperparameters"]["train_steps"] == 300
    assert results["hyperparameters"]["max_seq_length"] == config.max_seq_length


def _report_facts(command: str, config) -> dict:
    """The facts the pipeline report's headline reads, with the flow's own next step."""
    from flows.pipeline.flow import SHORT_FINETUNE_STEPS, short_finetune_text

    return {
        "inputs": "demo.txt",
        "documents": 1,
        "sentences": 1,
        "vocab_size": 100,
        "preset": "albert-nano",
        "parameters": 1,
        "steps": 1,
        "batch_size": 1,
        "max_seq_length": 128,
        "export": "e",
        "export_hf": "h",
        "heldout_documents": 1,
        "heldout_sequences": 1,
        "evaluation": {},
        "baseline": {},
        "wall_seconds": 1,
        "cpu_seconds": 1,
        "stages": {},
        "next_command": command,
        "next_text": short_finetune_text(SHORT_FINETUNE_STEPS, config.max_seq_length),
    }


def test_progress_lines_and_the_estimate_of_a_long_run_on_cpu(caplog):
    """One line after the first measured steps gives the steps, the rate and the end; on a CPU,
    a run of over an hour is told how to be shorter; progress lines come every PROGRESS_SECONDS
    and at the last step, whole lines; --quiet says nothing."""
    from datetime import datetime

    from model.finetune import progress

    seconds = [0.0]

    def make(**values):
        return progress.Progress(
            "sst2",
            20935,
            max_seq_length=512,
            accelerator=False,
            clock=lambda: seconds[0],
            now=lambda: datetime(2026, 1, 1, 12, 0),
            **values,
        )

    caplog.set_level("INFO", logger="model.finetune.progress")
    run = make()
    run.began()
    for step in range(1, 21):  # a second a step
        seconds[0] = float(step)
        run.step(step, lambda: 0.6931)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == "sst2: training 20,935 steps"
    (estimate,) = [line for line in lines if "steps at" in line]
    assert estimate.startswith(
        "sst2: 20,935 steps at 1 steps/s (measured over steps 2-6): about 5 h 48 min left, "
        "ending around 17:48"
    )
    assert estimate.endswith(
        "Over an hour on this CPU: --train-steps 600 (about 10 min 00 s) or --max-seq-length 128 "
        "makes it shorter"
    )
    progress_lines = [line for line in lines if "loss" in line]
    assert progress_lines == [
        "sst2: step 2/20,935 (0%), 1 steps/s, 5 h 48 min left, loss 0.6931",
        "sst2: step 17/20,935 (0%), 1 steps/s, 5 h 48 min left, loss 0.6931",
    ]
    assert not any("\r" in line or "\x1b" in line for line in lines)
    caplog.clear()
    quiet = make(quiet=True)
    quiet.began()
    for step in range(1, 30):
        quiet.step(step, lambda: 0.5)
    quiet.evaluated(29, "accuracy", 0.5, 0.5, 29)
    assert not caplog.records
