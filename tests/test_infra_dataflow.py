"""Dataflow, offline: each Beam stage is translated for DataflowRunner with --dry_run, staging to a
local GCS emulator; every user function pickles with cloudpickle and none lives in __main__.

Every connection and name lookup that is not loopback is refused (cloud_harness.loopback_only), so a
pass proves the translation needs no cloud account and no network.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from pathlib import Path

import apache_beam as beam
import cloud_harness as harness
import cloudpickle
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions

from albert.stages import config_class, stage_module
from pipelines.common import flex_template
from pipelines.common.runner import pipeline_options

pytestmark = pytest.mark.backend_free

IMAGE = "us-central1-docker.pkg.dev/test-project/albert/albert-dataflow:0.1.0"
CORPUS = "gs://bucket/corpus"


@pytest.fixture(scope="module")
def offline_gcs():
    """Emulator with a raw input and a segmented corpus; metadata stand-in; no other network."""
    with (
        harness.loopback_only() as refused,
        harness.gcs_emulator("bucket"),
        harness.offline_metadata_server(),
    ):
        fs = harness.gcs_filesystem()
        fs.pipe("bucket/raw/doc.txt", b"First sentence here. Second one.\n\nAnother document.\n")
        fs.pipe(
            "bucket/corpus/part-00000-of-00001.txt",
            b"One sentence.\nTwo sentences.\n\nA new document.\n",
        )
        yield refused


def build_stage(stage: str, beam_args: list[str]) -> beam.Pipeline:
    """The stage's real graph (its `build_pipeline`) on a pipeline with `beam_args`."""
    module = stage_module(stage)
    pipeline = beam.Pipeline(options=pipeline_options(beam_args))
    if stage == "segment":
        config = module.SegmentConfig(
            input=["gs://bucket/raw/*.txt"], output="gs://bucket/out/corpus"
        )
        module.build_pipeline(pipeline, ["gs://bucket/raw/doc.txt"], config, config.output)
    elif stage == "predict":
        from flows.predict import load_model
        from pipelines.predict.handler import BlockModelHandler
        from pipelines.predict.rows import Columns
        from pipelines.predict.stage import build_pipeline

        config = config_class(stage)(
            model="gs://bucket/model", input=[CORPUS], output="gs://bucket/out/predictions"
        )
        handler = BlockModelHandler(functools.partial(load_model, config.model, config))
        columns = Columns({"text": ()}, {"text": 1})
        build_pipeline(pipeline, [CORPUS], config, columns, handler, {}, config.output)
    elif stage == "vocab":
        config = module.VocabConfig(input=CORPUS, output="gs://bucket/out/vocab", vocab_size=100)
        module.build_pipeline(pipeline, config, config.output, start_time=0.0)
    else:
        config = module.TFRecordsConfig(
            input=CORPUS,
            spm_model="gs://bucket/out/vocab/spiece.model",
            output="gs://bucket/out/tfrecords",
        )
        module.build_pipeline(
            pipeline,
            [f"{CORPUS}/part-00000-of-00001.txt"],
            config,
            "gs://bucket/out/tfrecords/data",
            module.Vocabulary(size=100, sha256="0" * 64),  # run() reads them from the model
        )
    return pipeline


@pytest.mark.parametrize("stage", sorted(flex_template.DATAFLOW_STAGES))
def test_stage_translates_for_dataflow_offline(stage, offline_gcs):
    pipeline = build_stage(
        stage, harness.dataflow_dry_run_args("bucket", f"--sdk_container_image={IMAGE}")
    )
    assert not pipeline.options.view_as(SetupOptions).save_main_session
    stage_transforms = {part.full_label for part in pipeline.transforms_stack[0].parts}
    result = pipeline.run()

    assert result.state == "DONE"
    proto = result.job.proto_pipeline
    environments = list(proto.components.environments.values())
    assert environments and all(IMAGE in env.payload.decode("latin-1") for env in environments)
    labels = {t.unique_name for t in proto.components.transforms.values()}
    assert stage_transforms and stage_transforms <= labels, stage_transforms - labels
    job = json.loads(result.job.json())
    assert job["type"] == "JOB_TYPE_BATCH"
    assert offline_gcs == [], f"non-loopback traffic: {offline_gcs}"


@pytest.mark.parametrize("stage", sorted(flex_template.DATAFLOW_STAGES))
def test_every_user_function_pickles_without_main_session(stage, offline_gcs):
    pipeline = build_stage(stage, harness.dataflow_dry_run_args("bucket"))
    functions = harness.pipeline_dofns(pipeline)
    assert functions, "no DoFns found"
    for label, fn in functions.items():
        payload = cloudpickle.dumps(fn)
        assert b"__main__" not in payload, f"{label} depends on the main session"
        restored = cloudpickle.loads(payload)
        assert type(restored).__name__ == type(fn).__name__, label


def test_setup_file_route_builds_our_sdist_offline(offline_gcs, tmp_path):
    """--setup_file=pyproject.toml (Beam 2.77): the sdist is built locally (no isolation, no
    index)."""
    pytest.importorskip(
        "build", reason="the setup_file route needs `build` (pip install build==1.3.0)"
    )
    args = harness.dataflow_dry_run_args(
        "bucket", f"--setup_file={harness.REPO_ROOT / 'pyproject.toml'}"
    )
    args = [a for a in args if a != "--sdk_location=container"] + ["--sdk_location=container"]
    pipeline = build_stage("vocab", args)
    result = pipeline.run()
    assert result.state == "DONE"
    environment = next(iter(result.job.proto_pipeline.components.environments.values()))
    staged = [d.role_payload for d in environment.dependencies]
    assert any(b"workflow.tar.gz" in payload for payload in staged), staged
    assert offline_gcs == []


def test_dockerfile_matches_the_pinned_stack():
    dockerfile = (harness.INFRA_DIR / "dataflow" / "Dockerfile").read_text()
    constraints = (harness.REPO_ROOT / "constraints.txt").read_text()
    beam_pin = re.search(r"^apache-beam==(\S+)$", constraints, re.MULTILINE).group(1)
    requires = re.search(
        r'requires-python = ">=3\.(\d+)', (harness.REPO_ROOT / "pyproject.toml").read_text()
    ).group(1)
    base = re.search(r"^FROM (\S+)", dockerfile, re.MULTILINE).group(1)
    assert base == f"apache/beam_python3.{requires}_sdk:{beam_pin}"
    assert "pip install --no-cache-dir -c constraints.txt ." in dockerfile
    assert 'ENTRYPOINT ["/opt/apache/beam/boot"]' in dockerfile
    for copied in (
        "constraints.txt",
        "pyproject.toml",
        "albert",
        "pipelines",
        "model",
        "flows",
        "infra",
    ):
        assert re.search(rf"^COPY .*\b{copied}\b", dockerfile, re.MULTILINE), copied
    flex_file = re.search(r"FLEX_TEMPLATE_PYTHON_PY_FILE=\$\{WORKDIR\}/(\S+)", dockerfile).group(1)
    assert (harness.REPO_ROOT / flex_file).is_file()


@pytest.mark.parametrize("stage", sorted(flex_template.DATAFLOW_STAGES))
def test_flex_template_metadata_lists_every_stage_parameter(stage):
    committed = json.loads((harness.INFRA_DIR / "dataflow" / f"{stage}-metadata.json").read_text())
    assert committed == flex_template.flex_template_metadata(stage), (
        "run `python -m pipelines.common.flex_template infra/dataflow` to refresh"
    )
    fields = config_class(stage).model_fields
    assert [p["name"] for p in committed["parameters"]] == list(fields)
    for parameter in committed["parameters"]:
        assert set(parameter) >= {"name", "label", "helpText", "isOptional"}
        assert parameter["isOptional"] == (not fields[parameter["name"]].is_required())


def test_flex_parameters_become_stage_flags():
    argv = flex_template.flex_argv(
        "segment",
        [
            "--input=gs://b/a/*.bz2,gs://b/c/*.txt",
            "--output=gs://b/out",
            "--num_shards=16",
            "--runner=DataflowRunner",
        ],
    )
    assert argv == [
        "--input=gs://b/a/*.bz2",
        "--input=gs://b/c/*.txt",
        "--output=gs://b/out",
        "--num-shards=16",
        "--runner=DataflowRunner",
    ]
    config, beam_args = harness.parse_stage_command("pipelines.segment", argv)
    assert config.input == ["gs://b/a/*.bz2", "gs://b/c/*.txt"] and config.num_shards == 16
    assert beam_args == ["--runner=DataflowRunner"]
    tf_argv = flex_template.flex_argv(
        "tfrecords", ["--do_lower_case=false", "--input=x", "--spm_model=m", "--output=o"]
    )
    config, _ = harness.parse_stage_command("pipelines.tfrecords", tf_argv)
    assert config.do_lower_case is False


def test_launch_script_runs_the_stage_modules_with_every_required_dataflow_flag():
    script = (harness.INFRA_DIR / "dataflow" / "launch.sh").read_text()
    for flag in (
        "--runner=DataflowRunner",
        "--project=",
        "--region=",
        "--temp_location=",
        "--staging_location=",
        "--sdk_container_image=",
        "--sdk_location=container",
        "--setup_file=",
        "--no_save_main_session",
    ):
        assert flag in script, flag
    assert 'module="pipelines.$stage"' in script and 'python -m "$module"' in script
    assert Path(harness.INFRA_DIR / "dataflow" / "launch.sh").stat().st_mode & 0o111


@pytest.mark.parametrize("route", ["container", "setup_file"])
def test_launch_script_command_parses_with_the_stage_and_beam(route, tmp_path):
    """Run launch.sh with a `python` that records its argv; the stage and Beam accept every flag."""
    recorded = tmp_path / "argv"
    shim = tmp_path / "bin" / "python"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {recorded}\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shim.parent}:{os.environ['PATH']}",
        "PROJECT": "test-project",
        "REGION": "us-central1",
        "BUCKET": "bucket",
        "IMAGE": IMAGE,
        "ROUTE": route,
    }
    subprocess.run(
        [
            str(harness.INFRA_DIR / "dataflow" / "launch.sh"),
            "tfrecords",
            "--input=gs://bucket/corpus",
            "--spm-model=gs://bucket/vocab/spiece.model",
            "--output=gs://bucket/tfrecords",
            "--num-shards=2048",
        ],
        env=env,
        check=True,
    )
    argv = recorded.read_text().splitlines()
    module, args = harness.module_command(["python", *argv])
    assert module == "pipelines.tfrecords"
    config, beam_args = harness.parse_stage_command(module, args)
    assert config.output == "gs://bucket/tfrecords" and config.num_shards == 2048
    options = PipelineOptions(beam_args)
    known = options.get_all_options()
    everything = options.get_all_options(retain_unknown_options=True)
    assert set(everything) == set(known), f"Beam would discard {set(everything) - set(known)}"
    assert known["runner"] == "DataflowRunner" and known["project"] == "test-project"
    assert (
        known["temp_location"] == "gs://bucket/dataflow/tmp" and known["save_main_session"] is False
    )
    if route == "container":
        assert known["sdk_container_image"] == IMAGE and known["sdk_location"] == "container"
    else:
        assert known["setup_file"] == str(harness.REPO_ROOT / "pyproject.toml")


def test_flex_entry_point_dispatches_on_albert_stage(monkeypatch, capsys):
    import runpy

    flex = runpy.run_path(str(harness.INFRA_DIR / "dataflow" / "flex_main.py"))
    monkeypatch.delenv("ALBERT_STAGE", raising=False)
    assert flex["main"]([]) == 2
    assert "set ALBERT_STAGE" in capsys.readouterr().err
    monkeypatch.setenv("ALBERT_STAGE", "tfrecords")
    with pytest.raises(SystemExit) as exit_info:
        flex["main"](["--help"])
    assert exit_info.value.code == 0
    assert "--spm-model" in capsys.readouterr().out
