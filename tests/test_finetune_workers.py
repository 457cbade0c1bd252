"""`--input-workers` in fine-tuning: the examples encoded in 0, 1 or 2 worker processes give the
same arrays, counts and training text, so the same batches in the same order (SST-2, SQuAD with a
v2 holdout, RACE)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import keras
import numpy as np
import pytest
from conftest import shared_path

from albert import cli
from albert.errors import StageError
from albert.tokenization import AlbertTokenizer
from flows.pipeline.config import PretrainPipelineConfig
from flows.pipeline.downstream import downstream_steps
from model.finetune import main as finetune_main
from model.finetune.batches import train_batches
from model.finetune.config import FinetuneConfig, hyperparameters
from model.finetune.kind import inputs_of
from model.finetune.kinds import task_kind
from model.runtime import cores
from model.tasks import parallel_encoding
from model.tasks.parallel_encoding import chunk_bounds, encode_split
from model.tasks.splits import SplitSettings, read_examples
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


def load(task: str, spm_model: str, workers: int, **values):
    config = FinetuneConfig(
        task=task,
        init="random",
        spm_model=spm_model,
        output="unused",
        input_workers=workers,
        **values,
    )
    kind = task_kind(task)
    return kind.load(config, AlbertTokenizer(spm_model), hyperparameters(config, kind.spec))


def assert_same_data(one, other):
    """Equal arrays (values, dtypes, shapes), counts, dev examples and training text."""
    for name in ("train", "dev"):
        left, right = getattr(one, name), getattr(other, name)
        assert keras.tree.flatten(left.keys()) == keras.tree.flatten(right.keys())
        for a, b in zip(keras.tree.flatten(left), keras.tree.flatten(right)):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    assert one.counts == other.counts and one.train_texts == other.train_texts
    assert one.dev_examples == other.dev_examples


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of at least 50 examples (the product's MIN_CHUNK is 500): 120 make two."""
    monkeypatch.setattr(parallel_encoding, "MIN_CHUNK", 50)


def sst2(spm_model: str, workers: int):
    return load(
        "sst2",
        spm_model,
        workers,
        data_dir=str(shared_path("glue", "SST-2")),
        max_train_examples=120,
        max_dev_examples=60,
        max_seq_length=32,
    )


def squad_sample(path: Path, articles: int = 4, paragraphs: int = 2) -> Path:
    """The first `paragraphs` paragraphs of the first `articles` articles of SQuAD v1.1's dev set
    (Super Bowl 50, Warsaw, the Normans, ...), in the same format."""
    squad = json.loads(shared_path("squad", "dev-v1.1.json").read_text())
    squad["data"] = [
        {**article, "paragraphs": article["paragraphs"][:paragraphs]}
        for article in squad["data"][:articles]
    ]
    path.write_text(json.dumps(squad))
    return path


def test_the_default_is_every_core_with_an_accelerator_and_0_on_cpu():
    assert cores.input_workers(None, True) == cores.available_cores() >= 1
    assert cores.input_workers(None, False) == 0 and cores.input_workers(3, False) == 3


def test_chunks_cover_in_order_and_never_split_a_key():
    keys = [0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 4]
    bounds = chunk_bounds(keys, 3, 2)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(keys) and len(bounds) <= 3
    assert all(stop == start for (_, stop), (start, _) in itertools.pairwise(bounds))
    assert all(keys[start - 1] != keys[start] for start, _ in bounds[1:])
    assert chunk_bounds(list(range(10)), 4, 5) == [(0, 5), (5, 10)]  # at least min_size
    assert chunk_bounds(list(range(10)), 4, 50) == [(0, 10)] and chunk_bounds([], 2, 1) == []


def test_sst2_features_are_the_same_for_0_1_and_2_workers(spm_model, small_chunks, monkeypatch):
    in_process, original, started = sst2(spm_model, 0), parallel_encoding.start_worker, []

    def start_worker(settings, start, stop, output, total):
        started.append((start, stop))
        return original(settings, start, stop, output, total)

    monkeypatch.setattr(parallel_encoding, "start_worker", start_worker)
    assert_same_data(in_process, sst2(spm_model, 1))
    assert not started  # one worker: no process to start, the same work here
    assert_same_data(in_process, sst2(spm_model, 2))
    assert started == [(0, 60), (60, 120)]  # the 60 dev examples: one chunk, here


def test_squad_v2_and_race_features_are_the_same_for_0_and_2_workers(
    spm_model, monkeypatch, tmp_path
):
    monkeypatch.setattr(parallel_encoding, "MIN_CHUNK", 4)  # the RACE sample has 17 examples
    squad = squad_sample(tmp_path / "squad.json")
    squad_values = {
        "data_dir": str(squad.parent),
        "train_file": str(squad),
        "dev_file": str(squad),
        "max_dev_examples": 8,
        "max_seq_length": 48,
        "doc_stride": 16,
        "max_query_length": 16,
        "threshold_holdout": 0.5,
        "seed": 0,
    }
    race = shared_path("race", "RACE", "dev")
    race_values = {"data_dir": str(race.parent), "train_file": str(race), "max_seq_length": 32}
    for task, values in (("squad2", squad_values), ("race", race_values)):
        in_process = load(task, spm_model, 0, **values)
        assert_same_data(in_process, load(task, spm_model, 2, **values))
        if task == "squad2":  # articles held out, the rest windowed in two chunks
            assert in_process.counts["holdout"]["examples"] and len(in_process.train["input_ids"])
    assert in_process.counts["train"] == {} and len(in_process.train["input_ids"]) == 17


def test_a_failed_worker_is_a_stage_error_with_its_last_line(spm_model, small_chunks, tmp_path):
    path = str(shared_path("glue", "SST-2", "train.tsv"))
    settings = SplitSettings("sst2", path, "train", str(tmp_path / "gone.model"), 32, limit=100)
    examples = read_examples(settings)
    with pytest.raises(StageError, match=r"train.tsv: encoding examples \[0, 50\) failed: .*gone"):
        encode_split(settings, AlbertTokenizer(spm_model), examples, 2)


@pytest.mark.keras
def test_the_first_batches_are_the_same_for_0_and_2_workers(spm_model, small_chunks, keras_backend):
    batches = []
    for workers in (0, 2):
        data = sst2(spm_model, workers)
        dataset = train_batches((inputs_of(data.train), data.train["labels"]), 32, seed=5)
        batches.append(list(itertools.islice(iter(dataset), 6)))  # past the epoch's end
    for (inputs, labels), (other_inputs, other_labels) in zip(*batches):
        assert np.array_equal(np.asarray(labels), np.asarray(other_labels))
        for name in inputs:
            assert np.array_equal(np.asarray(inputs[name]), np.asarray(other_inputs[name]))


@pytest.mark.parametrize(
    "entry_point, call",
    [
        ("python -m model.finetune", finetune_main),
        ("albert finetune", lambda argv: cli.main(["finetune", *argv])),
    ],
)
def test_a_negative_worker_count_is_one_line_and_exit_2(entry_point, call, capsys):
    required = ["--task", "sst2", "--init", "random", "--spm-model", "s", "--data-dir", "d"]
    assert call(["--input-workers", "-1", *required, "--output", "o"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith(
        f"{entry_point} failed: FinetuneConfig.input_workers: Input should be greater than or "
        "equal to 0 (got '-1')"
    )


def test_the_flows_downstream_fine_tunes_take_the_runs_input_workers():
    config = PretrainPipelineConfig(run_dir="r", downstream=["sst2=d", "rte=e"], input_workers=2)
    assert {s.config.input_workers for s in downstream_steps(config).values()} == {2}
    own = config.model_copy(update={"finetune": {"input_workers": 0}})  # --finetune overrides
    assert {s.config.input_workers for s in downstream_steps(own).values()} == {0}
    default = config.model_copy(update={"input_workers": None})
    assert {s.config.input_workers for s in downstream_steps(default).values()} == {None}
