"""Beam pipeline options, running, counts as pipeline data and metrics shared by every pipeline.

With no `--runner`, pipelines run on Beam's in-process FnApiRunner (DirectRunner would first try to
download the Prism binary). Any Beam flag can be passed: `--direct_running_mode=multi_processing
--direct_num_workers=2`, or `--runner=DataflowRunner --project=... --region=...
--temp_location=gs://...`.

Statistics are pipeline data, not metrics: a `CountingDoFn` adds its counts up per bundle and emits
them on its COUNTS output, `SumCounts` combines them into one dict, and the stage writes its
statistics file from the pipeline, so the file is complete on any runner, whether or not the driver
reads metrics or even stays alive. Every count also increments a Beam counter, for monitoring only.
`WriteSummary` is that writing step; `run_stage` runs a stage's pipeline into its atomic output
directory and returns the summary file the pipeline wrote.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.transforms.window import GlobalWindows

from albert import reaper
from albert.errors import EXIT_USER_ERROR, StageError, describe_error, refused_write
from albert.fs import join, open_file
from albert.outputs import atomic_output_dir

DEFAULT_RUNNER = "FnApiRunner"
COUNTS = "counts"

Counter = Callable[[str, int], None]
"""inc(name, amount): how pure functions report counts without depending on Beam."""


def check_runner(name: str) -> None:
    """A StageError (one line) for a runner Beam cannot create: an unknown short name or a bad
    class path."""
    known = {runner.lower() for runner in StandardOptions.KNOWN_RUNNER_NAMES}
    if "." not in name:
        if name.lower() in known or f"{name.lower()}runner" in known:
            return
        raise StageError(
            f"--runner={name}: Beam knows no runner by this name; use one of "
            f"{', '.join(sorted(StandardOptions.KNOWN_RUNNER_NAMES))} or a runner's full class path"
        )
    module, attribute = name.rsplit(".", 1)
    try:
        found = hasattr(importlib.import_module(module), attribute)
    except ImportError as error:
        raise StageError(f"--runner={name}: cannot import {module}: {error}") from None
    if not found:
        raise StageError(f"--runner={name}: {module} has no {attribute}")


def pipeline_options(beam_args: Sequence[str] | None = None) -> PipelineOptions:
    """Beam options from command-line style flags, defaulting the runner to FnApiRunner; a runner
    Beam does not know is a StageError naming it."""
    args = list(beam_args or [])
    if not any(arg == "--runner" or arg.startswith("--runner=") for arg in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    options = PipelineOptions(args)
    check_runner(options.view_as(StandardOptions).runner)
    return options


def run_pipeline(pipeline: beam.Pipeline) -> beam.runners.runner.PipelineResult:
    """Run `pipeline` to the end; what a DoFn raised as StageError (or an OSError naming its file)
    comes back as one StageError, anything else as it was raised.
    If the command is killed meanwhile, its watchdog deletes Beam's local scratch directory."""
    reaper.remove_when_gone(pipeline.local_tempdir)
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as error:  # the runner wraps what a DoFn raised, or re-raises it with a suffix
        message, code = describe_error(error)
        if code != EXIT_USER_ERROR or refused_write(error):
            raise  # a bug stays a bug; a refused write is named by the output's commit
        raise StageError(message) from error
    return result


def beam_counter(namespace: str) -> Counter:
    """A Counter that increments Beam metrics counters `namespace:name` (call inside a DoFn)."""
    counters: dict[str, beam.metrics.metricbase.Counter] = {}

    def inc(name: str, amount: int = 1) -> None:
        if name not in counters:
            counters[name] = beam.metrics.Metrics.counter(namespace, name)
        counters[name].inc(amount)

    return inc


class CountingDoFn(beam.DoFn):
    """A DoFn whose `self.inc(name, amount)` counts are pipeline data.

    Each bundle's totals go out on the COUNTS output when the bundle ends (apply it with
    `counted`), so a retried bundle's counts are dropped with its outputs; each count also
    increments the Beam counter `namespace:name`, for monitoring. Subclasses that override
    start_bundle or finish_bundle call the base methods.
    """

    def __init__(self, namespace: str):
        self.namespace = namespace

    def start_bundle(self):
        if not hasattr(self, "_monitor"):
            self._monitor = beam_counter(self.namespace)
        self._counts: dict[str, int] = {}

    def inc(self, name: str, amount: int = 1) -> None:
        self._counts[name] = self._counts.get(name, 0) + amount
        self._monitor(name, amount)

    def finish_bundle(self):
        if self._counts:
            yield beam.pvalue.TaggedOutput(COUNTS, GlobalWindows.windowed_value(self._counts))


def counted(pcoll, label: str, dofn: CountingDoFn, counts: list, *side_inputs, **kwargs):
    """`pcoll | label >> ParDo(dofn)`: returns the main output; appends the COUNTS output to
    `counts`."""
    outputs = pcoll | label >> beam.ParDo(dofn, *side_inputs, **kwargs).with_outputs(
        COUNTS, main="main"
    )
    counts.append(outputs[COUNTS])
    return outputs.main


def add_counts(totals: dict[str, int], counts: dict[str, int]) -> dict[str, int]:
    for name, amount in counts.items():
        totals[name] = totals.get(name, 0) + amount
    return totals


class _SumCountsFn(beam.CombineFn):
    def create_accumulator(self):
        return {}

    def add_input(self, accumulator, counts):
        return add_counts(accumulator, counts)

    def merge_accumulators(self, accumulators):
        totals: dict[str, int] = {}
        for accumulator in accumulators:
            add_counts(totals, accumulator)
        return totals

    def extract_output(self, accumulator):
        return dict(sorted(accumulator.items()))


def sum_counts(counts: list, label: str = "SumCounts"):
    """The COUNTS outputs of a pipeline's counting DoFns -> one dict of totals, sorted by name, as
    a side input (`AsSingleton`; `{}` when nothing was counted).

    A name appears once it was counted, amount 0 included, as with Beam counters."""
    return (
        tuple(counts)
        | f"{label}Flatten" >> beam.Flatten()
        | label >> beam.CombineGlobally(_SumCountsFn()).as_singleton_view()
    )


class WriteSummary(beam.PTransform):
    """`pipeline | label >> WriteSummary(write, counts, **arguments)`: calls
    `write(counts=totals, **arguments)` once, on one worker, after the pipeline's COUNTS outputs
    (`counts`, summed) and every side input among `arguments` (AsList, AsSingleton ...) are
    complete: how a stage writes its summary file (stats.json, metadata.json ...) from the
    pipeline itself."""

    def __init__(self, write: Callable[..., None], counts: list, **arguments):
        super().__init__()
        self.write, self.counts, self.arguments = write, counts, arguments

    def expand(self, pbegin):
        return (
            pbegin
            | "Trigger" >> beam.Create([None])
            | "Write"
            >> beam.Map(
                _call_writer,
                self.write,
                counts=sum_counts(self.counts),
                **self.arguments,
            )
        )


def _call_writer(_, write: Callable[..., None], **arguments) -> None:
    write(**arguments)


def run_stage(
    output: str,
    beam_args: Sequence[str] | None,
    build: Callable[[beam.Pipeline, str], None],
    summary_file: str,
    check: Callable[[dict], None] | None = None,
) -> dict:
    """Run a stage's pipeline into `output` atomically and return the summary it wrote.

    `build(pipeline, temp_dir)` adds the stage's transforms (writing into `temp_dir`); the pipeline
    runs to the end; `summary_file` (JSON, written by the pipeline into `temp_dir`) is read back;
    `check(summary)` may raise a StageError, and the output is then not committed (left absent).
    A bad runner flag fails before the output directory is touched."""
    options = pipeline_options(beam_args)
    with atomic_output_dir(output) as temp_dir:
        pipeline = beam.Pipeline(options=options)
        build(pipeline, temp_dir)
        run_pipeline(pipeline)
        with open_file(join(temp_dir, summary_file), "r", encoding="utf-8") as handle:
            summary = json.load(handle)
        if check is not None:
            check(summary)
    return summary
