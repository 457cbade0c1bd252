"""The shared core: typed configs, the `albert` CLI, atomic outputs, deterministic shards."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from albert import cli, log, tfrecord_framing
from albert.config import (
    CommaList,
    ConfigError,
    StageConfig,
    add_config_arguments,
    field_help,
    load_config,
)
from albert.outputs import atomic_output_dir
from albert.stage import stage_main
from pipelines.common import shards


class ToyConfig(StageConfig):
    input: list[str] = Field(description="input patterns")
    output: str
    size: int = Field(8, gt=0)
    mode: Literal["a", "b"] = "a"
    fast: bool = False


def test_config_from_yaml_and_flags(tmp_path):
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("input: [x]\noutput: out\nsize: 3\n")
    seen = {}
    code = stage_main(
        ToyConfig,
        lambda config: seen.setdefault("config", config),
        ["--config", str(yaml_file), "--size", "5", "--mode", "b", "--fast"],
        prog="toy",
        description="toy",
    )
    assert code == 0
    assert seen["config"] == ToyConfig(input=["x"], output="out", size=5, mode="b", fast=True)


def test_repeated_list_flag_and_beam_passthrough():
    seen = {}
    code = stage_main(
        ToyConfig,
        lambda config, beam_args: seen.update(config=config, beam=beam_args),
        ["--input", "a", "--input", "b", "--output", "o", "--direct_num_workers=2"],
        prog="toy",
        description="toy",
        beam=True,
    )
    assert code == 0
    assert seen["config"].input == ["a", "b"]
    assert seen["beam"] == ["--direct_num_workers=2"]


def test_each_flag_says_its_default_once_and_a_real_one():
    """A default factory's value is made (`[]`), not pydantic's `PydanticUndefined`; a description
    that states the default in words is not followed by the value; `albert run --help` agrees."""
    import argparse

    from flows.pipeline.config import PretrainPipelineConfig

    class Described(StageConfig):
        names: list[str] = Field(default_factory=list, description="names")
        size: int | None = Field(None, description="size (default: the data's)")

    for cls in (Described, PretrainPipelineConfig):
        parser = argparse.ArgumentParser()
        add_config_arguments(parser, cls)
        helps = {action.dest: action.help or "" for action in parser._actions}
        assert not [text for text in helps.values() if "PydanticUndefined" in text]
        assert not [text for text in helps.values() if text.lower().count("default") > 1]
    assert field_help(Described.model_fields["names"]) == "names (default: [])"
    assert field_help(Described.model_fields["size"]) == "size (default: the data's)"
    assert field_help(PretrainPipelineConfig.model_fields["vocab"]).endswith("(default: {})")
    learning_rate = PretrainPipelineConfig.model_fields["learning_rate"]
    assert field_help(learning_rate) == "peak learning rate (default: 0.004)"


class ListsConfig(StageConfig):
    language: Annotated[list[str], CommaList] = Field(default_factory=list)
    sizes: Annotated[list[int], CommaList] = Field(default_factory=list)


def test_list_fields_take_items_that_are_not_strings_or_name_them(tmp_path, capsys):
    """A YAML list of numbers is a list[int]'s value; a nested list, null or a boolean in a
    list[str] is the field's error (exit 2), never an internal error."""
    assert load_config(ListsConfig, overrides={"sizes": [64, "128,32"]}).sizes == [64, 128, 32]
    assert load_config(ListsConfig, overrides={"language": "en, fr"}).language == ["en", "fr"]
    for bad in ([["en"]], [None], [True], [1, 2]):
        with pytest.raises(ConfigError, match=r"ListsConfig.language\.0: "):
            load_config(ListsConfig, overrides={"language": bad})
    (tmp_path / "c.yaml").write_text("language: [[en]]\n")
    argv = ["--config", str(tmp_path / "c.yaml")]
    assert stage_main(ListsConfig, lambda config: None, argv, prog="toy", description="t") == 2
    assert "ListsConfig.language.0: Input should be a valid string" in capsys.readouterr().err


def test_an_abbreviated_flag_is_an_unknown_flag(capsys):
    argv = ["--input", "a", "--outp", "o"]
    assert stage_main(ToyConfig, lambda config: None, argv, prog="toy", description="t") == 2
    assert "unknown flag --outp (did you mean --output?)" in capsys.readouterr().err


def test_bad_value_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"ToyConfig.size: .*greater than 0.*\(got -1\)"):
        load_config(ToyConfig, overrides={"input": ["x"], "output": "o", "size": -1})
    with pytest.raises(ConfigError, match=r"ToyConfig.colour: Extra inputs are not permitted"):
        load_config(ToyConfig, overrides={"input": ["x"], "output": "o", "colour": 1})


def test_cli_lists_every_stage():
    result = subprocess.run(
        [sys.executable, "-m", "albert.cli", "--help"], capture_output=True, text=True, check=True
    )
    for name in (
        "segment",
        "vocab",
        "tfrecords",
        "pretrain",
        "finetune",
        "evaluate",
        "run",
        "deploy",
    ):
        assert f"  {name}" in result.stdout
    assert cli.main(["no-such-command"]) == 2


def test_cli_reports_a_missing_stage_module_as_one_line(monkeypatch, capfd):
    """A command whose module is missing is a bug, reported like any other failure (no special
    case)."""
    monkeypatch.setitem(
        cli.COMMANDS, "gone", ("pipelines.no_such_stage", "a stage that does not exist")
    )
    assert cli.main(["gone"]) not in (0, 2)
    err = capfd.readouterr().err
    assert (
        "albert gone failed: internal error: ModuleNotFoundError: No module named "
        "'pipelines.no_such_stage'" in err
    )
    assert "Traceback" not in err


def test_tensorflow_starts_silently_where_there_is_no_gpu():
    """No /dev/nvidia* node: no TensorFlow load-time INFO lines, no CUDA probe error."""
    if log.has_gpu_device():
        pytest.skip("this machine has a GPU device node: device errors are meant to show")
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("TF_CPP_MIN_LOG_LEVEL", "ALBERT_VERBOSE")
    }
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    code = (
        "import importlib.util\nfrom albert.log import setup_logging\nsetup_logging()\n"
        "import key_value.aio\n"  # as Prefect does: then beartype's import hook loads modules
        "importlib.util.find_spec('tensorflow')\n"  # a library probing for it first
        "import tensorflow as tf\nprint(int(tf.constant(2) + 1))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "3\n", "")


def test_atomic_output_dir_commits_or_leaves_nothing(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(RuntimeError), atomic_output_dir(str(target)) as temp:
        Path(temp, "part").write_text("half")
        raise RuntimeError("stage failed")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_output_dir(str(target)) as temp:
        Path(temp, "part").write_text("done")
    assert (target / "part").read_text() == "done"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_tfrecord_framing_reads_back_with_tensorflow(tmp_path):
    import tensorflow as tf

    path = tmp_path / "x.tfrecord"
    records = [b"", b"alpha", bytes(range(256)) * 10]
    path.write_bytes(b"".join(tfrecord_framing.tfrecord_frame(r) for r in records))
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
    assert list(tfrecord_framing.tfrecord_records(str(path))) == records
    assert struct.unpack("<Q", tfrecord_framing.tfrecord_frame(b"abc")[:8])[0] == 3


def test_write_shards_is_deterministic_across_worker_counts(tmp_path):
    import apache_beam as beam

    from pipelines.common.runner import pipeline_options

    pairs = [(f"k{i:03d}".encode(), f"line {i}\n".encode()) for i in range(200)]
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        out.mkdir()
        flags = ["--direct_running_mode=multi_threading", f"--direct_num_workers={workers}"]
        with beam.Pipeline(options=pipeline_options(flags)) as pipeline:
            _ = (
                pipeline
                | beam.Create(list(reversed(pairs)))
                | shards.WriteShards(str(out / "part"), 3, ".txt")
            )
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1]
    assert sorted(outputs[0]) == [f"part-0000{i}-of-00003.txt" for i in range(3)]
    assert sorted(b"".join(outputs[0].values()).splitlines()) == sorted(p[1].strip() for p in pairs)


@pytest.mark.keras
def test_keras_runs_on_the_backend_the_environment_names(keras_backend):
    import os

    import keras

    assert keras_backend == os.environ.get("KERAS_BACKEND", "tensorflow")
    dense = keras.layers.Dense(2, kernel_initializer="ones")
    assert keras.ops.convert_to_numpy(dense(keras.ops.ones((1, 3)))).tolist() == [[3.0, 3.0]]


def test_write_shards_merges_spilled_runs_and_cleans_up(tmp_path):
    import apache_beam as beam

    from pipelines.common.runner import pipeline_options

    pairs = [(f"k{i:04d}".encode(), f"payload {i}\n".encode()) for i in range(500)]
    outputs = []
    for run_bytes in (64, 1 << 20):  # many tiny spilled runs vs. one run per shard
        out = tmp_path / f"r{run_bytes}"
        out.mkdir()
        with beam.Pipeline(options=pipeline_options()) as pipeline:
            _ = (
                pipeline
                | beam.Create(pairs)
                | shards.WriteShards(str(out / "part"), 2, ".txt", run_bytes=run_bytes)
            )
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1]
    assert sorted(outputs[0]) == ["part-00000-of-00002.txt", "part-00001-of-00002.txt"]
    for content in outputs[0].values():
        assert content.splitlines() == sorted(content.splitlines(), key=lambda l: int(l.split()[1]))
