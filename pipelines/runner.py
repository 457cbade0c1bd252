"""Beam pipeline options and metrics shared by every pipeline.

With no `--runner`, pipelines run on Beam's in-process FnApiRunner (DirectRunner would first try to
download the Prism binary). Any Beam flag can be passed: `--direct_running_mode=multi_processing
--direct_num_workers=2`, or `--runner=DataflowRunner --project=... --region=... --temp_location=gs://...`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import create_runner

from albert.stage import StageError

DEFAULT_RUNNER = "FnApiRunner"

Counter = Callable[[str, int], None]
"""inc(name, amount): how pure functions report counts without depending on Beam."""


def pipeline_options(beam_args: Sequence[str] | None = None) -> PipelineOptions:
    """Beam options from command-line style flags, defaulting the runner to FnApiRunner; a runner Beam
    does not know is a StageError naming it."""
    args = list(beam_args or [])
    if not any(arg == "--runner" or arg.startswith("--runner=") for arg in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    options = PipelineOptions(args)
    runner = options.view_as(StandardOptions).runner
    try:
        create_runner(runner)
    except (ValueError, ImportError) as error:
        raise StageError(f"--runner={runner}: {error}") from None
    return options


def beam_counter(namespace: str) -> Counter:
    """A Counter that increments Beam metrics counters `namespace:name` (call inside a DoFn)."""
    counters: dict[str, beam.metrics.metricbase.Counter] = {}

    def inc(name: str, amount: int = 1) -> None:
        if name not in counters:
            counters[name] = beam.metrics.Metrics.counter(namespace, name)
        counters[name].inc(amount)

    return inc


def counter_totals(result: beam.runners.runner.PipelineResult, namespace: str) -> dict[str, int]:
    """Committed (or attempted, where a runner has no committed values) counters of `namespace`."""
    query = result.metrics().query(MetricsFilter().with_namespace(namespace))
    totals: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(totals.items()))
