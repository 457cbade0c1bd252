"""Each Beam stage run the ways the README documents gives the same bytes, statistics included.

`python -m pipelines.X --direct_running_mode=multi_processing --direct_num_workers=2` (a process of
its own, whose `__main__` must pickle the DoFns so that the two worker processes can unpickle them,
with Beam metrics), against `albert X` (the dispatcher, calling the stage's `main`, in this process)
with Beam metrics made unavailable (as on runners without metrics support): the statistics files
are computed and written by the pipelines, so they are complete anyway. The `albert` console script
itself runs as a command in test_entry_point_errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner.fn_runner import RunnerResult

from albert import cli
from albert.errors import StageError
from pipelines.common.runner import check_runner, pipeline_options, run_pipeline
from pipelines.segment import stage as segment
from pipelines.segment import stats as segment_stats
from pipelines.tfrecords import metadata as tfrecords_metadata
from pipelines.tfrecords import stage as tfrecords

pytestmark = pytest.mark.backend_free

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "segment"
TWO_PROCESSES = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
TIMINGS = ("training_seconds", "wall_seconds")


def counter_totals(result, namespace: str) -> dict[str, int]:
    """Committed (or attempted, where a runner has no committed values) Beam counters of
    `namespace`, summed by name: what the stages' statistics files are checked against."""
    query = result.metrics().query(MetricsFilter().with_namespace(namespace))
    totals: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(totals.items()))


def stage_flags(stage: str, inputs: dict[str, Path]) -> list[str]:
    """The flags of one stage on the tiny chain: fixtures -> segment -> vocab -> tfrecords."""
    return {
        "segment": [
            "--input",
            str(FIXTURES / "*"),
            "--on-error",
            "skip",
            "--min-document-chars",
            "50",
            "--num-shards",
            "2",
        ],
        "vocab": [
            "--input",
            str(inputs.get("segment")),
            "--vocab-size",
            "120",
            "--heldout-sentences",
            "3",
            "--num-threads",
            "1",
        ],
        "tfrecords": [
            "--input",
            str(inputs.get("segment")),
            "--spm-model",
            f"{inputs.get('vocab')}/spiece.model",
            "--max-seq-length",
            "32",
            "--max-predictions-per-seq",
            "5",
            "--dupe-factor",
            "2",
            "--num-shards",
            "2",
        ],
    }[stage]


def comparable(directory: Path) -> dict[str, object]:
    """Every output file's bytes; statistics files parsed, without timings and the output path."""
    files: dict[str, object] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            for key in TIMINGS:
                data.pop(key, None)
            data.get("options", {}).pop("output", None)
            files[path.name] = data
        else:
            files[path.name] = path.read_bytes()
    return files


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, Path]:
    """The chain run in this process by `albert X` (each stage's `main`), with Beam metrics
    unavailable."""
    root = tmp_path_factory.mktemp("reference")
    outputs: dict[str, Path] = {}

    def no_metrics(self):
        raise NotImplementedError("collecting metrics will come later!")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunnerResult, "metrics", no_metrics)
        for stage in ("segment", "vocab", "tfrecords"):
            outputs[stage] = root / stage
            argv = [stage, *stage_flags(stage, outputs), "--output", str(outputs[stage])]
            assert cli.main(argv) == 0
    return outputs


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["segment", "vocab", "tfrecords"])
def test_python_m_on_two_processes_and_albert_in_process_give_the_same_bytes(
    stage, reference, tmp_path
):
    """`albert X` in this process is the reference (its run there is the module's fixture)."""
    expected = comparable(reference[stage])
    flags = stage_flags(stage, reference)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", f"pipelines.{stage}", *TWO_PROCESSES, *flags]
    done = subprocess.run(
        [*command, "--output", str(tmp_path / "python-m")],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert comparable(tmp_path / "python-m") == expected


def test_statistics_written_by_the_pipeline_are_what_the_beam_counters_say(reference, tmp_path):
    """The files equal what the counters (the stages' former source) give, on the same input."""
    config = segment.SegmentConfig(
        input=[str(FIXTURES / "*")],
        output=str(tmp_path),
        on_error="skip",
        min_document_chars=50,
        num_shards=2,
    )
    paths = segment.match_inputs(config.input)
    pipeline = segment.beam.Pipeline(options=pipeline_options([]))
    segment.build_pipeline(pipeline, paths, config, str(tmp_path / "segment"))
    counters = counter_totals(run_pipeline(pipeline), segment.NAMESPACE)
    written = (reference["segment"] / "stats.json").read_text()
    stats = json.loads(written)
    assert (
        written
        == json.dumps(
            segment_stats.summarize(
                counters,
                stats["bad_files"],
                paths,
                stats["shards"],
                stats["near_duplicates"]["settings"],
                stats["quality"]["settings"],
                [
                    record
                    for group in ("examples", "kept_examples")
                    for rule in stats["quality"][group].values()
                    for record in rule
                ],
            ),
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    assert stats["documents_out"] > 0 and stats["warnings"] == []
    assert sum(stats["sentence_length_histogram"].values()) == stats["sentences_out"]

    metadata_path = reference["tfrecords"] / "metadata.json"
    config = tfrecords.TFRecordsConfig.model_validate(
        json.loads(metadata_path.read_text())["options"]
    )
    vocabulary, config = tfrecords.load_vocabulary(config)
    pipeline = tfrecords.beam.Pipeline(options=pipeline_options([]))
    tfrecords.build_pipeline(
        pipeline,
        tfrecords.input_files(config.input),
        config,
        str(tmp_path / "tfrecords"),
        vocabulary,
    )
    counts = counter_totals(run_pipeline(pipeline), tfrecords.NAMESPACE)
    metadata = json.loads(metadata_path.read_text())
    assert metadata["counts"] == counts and counts["instances"] > 0
    with open(metadata_path) as handle:
        assert handle.read() == json.dumps(
            tfrecords_metadata.summarize(
                config,
                counts,
                vocabulary,
                metadata["files"],
                metadata["heldout"]["document_list"],
            ),
            indent=2,
            sort_keys=True,
        )
    vocab_stats = json.loads((reference["vocab"] / "vocab_stats.json").read_text())
    assert vocab_stats["corpus_counts"]["sentences"] == vocab_stats["corpus_sentences"] > 0


def test_an_unknown_runner_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(
        StageError, match=r"^--runner=DaskRunner: Beam knows no runner by this name; use one of"
    ):
        check_runner("DaskRunner")
    with pytest.raises(StageError, match=r"^--runner=no.such.Runner: cannot import no.such"):
        check_runner("no.such.Runner")
    check_runner("FnApiRunner")
    check_runner("direct")
    argv = [*stage_flags("segment", {}), "--output", str(tmp_path / "out"), "--runner=DaskRunner"]
    assert segment.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--runner=DaskRunner: Beam knows no runner by this name" in err[0]
    assert not (tmp_path / "out").exists()
