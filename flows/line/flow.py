"""A night of a model line as a Prefect flow, `albert-model-line`: the documents new since the
line's current version, further pretraining from it with replay against forgetting, the promotion
gate, a new version kept whether promoted or refused, and the line's report (flows.line.night).
`--base` makes a new line's first version. What the nightly deployment in prefect.yaml runs.

    python -m flows.line.flow --line LINE --input GLOB [--base BASE]
    python -m flows.domain.flow --line LINE --input GLOB [--base BASE]   (the same)

The input files are hashed once, before Prefect starts: a night with nothing new is answered
then (what killed commits left removed, the line checked), and the flow takes the digests.
Stages are cached and retried as in flows.pipeline.flow.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from prefect import flow

from albert.config import ConfigError
from albert.errors import Interrupted
from albert.locks import output_lock
from flows.engine import tasks
from flows.engine.entry import flow_main
from flows.line.check import require_sound
from flows.line.config import LineConfig
from flows.line.inputs import NOTHING_NEW, input_digests, novelty
from flows.line.night import remove_leftovers, run_night
from flows.line.records import ModelLine
from flows.line.report import line_report_path

FLOW_NAME = "albert-model-line"


@flow(name=FLOW_NAME, log_prints=True)
def model_line_night(
    config: LineConfig,
    beam_args: list[str] | None = None,
    digests: dict[str, str] | None = None,
) -> Any:
    """A night of the line (it ends Completed whether its candidate was promoted or not: the
    message says which) on the input files' `digests` (path -> sha256; None: hashed here, as a
    scheduled run does). Further pretraining stopped by a signal (its checkpoint saved) ends the
    flow run Cancelled, named "Interrupted" (`tasks.interrupted`): the same command resumes the
    night.

    Args:
        config: the line and the night (`python -m flows.line.flow`'s flags)
        beam_args: Apache Beam pipeline options for the Beam stages, e.g. `--runner=DataflowRunner`,
            `--project=P`, `--region=R`, `--temp_location=gs://B/tmp` (default: none, Beam's
            in-process FnApiRunner)
        digests: set by `python -m flows.line.flow`, which hashes the input files before Prefect
            starts (path -> sha256); leave it empty: the night hashes them
    """
    try:
        if digests is None:
            digests = input_digests(config.input)
        return run_night(config, digests, list(beam_args or []))
    except Interrupted as stop:
        return tasks.interrupted(stop)


def run(config: LineConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    """A night of the line. Before Prefect starts, under the line's lock: what killed commits
    left is removed, the line checked (flows.line.check) and, when nothing is new, the night
    answered. Then the flow, its summary, its one-line outcome, the line and its report."""
    if config.process_id is not None or config.coordinator is not None:
        raise ConfigError(
            "LineConfig.line: a line's night trains on one host (several JAX hosts: one "
            "adaptation with python -m flows.domain.flow --base)"
        )
    line = ModelLine(config.line)
    if not line.exists() and config.base is None:
        raise ConfigError(
            f"LineConfig.line: {line.url} is not a model line yet (no line.json); "
            "pass --base to make it"
        )
    digests = input_digests(config.input)
    if line.exists():
        with output_lock(line.url):
            remove_leftovers(line)
            if line.current() is not None:  # else: killed while being made; the night makes it
                require_sound(line)
                _, nothing_new = novelty(config, line, digests)
                if nothing_new:
                    print(nothing_new)
                    return {"line": line.url, "status": NOTHING_NEW, "message": nothing_new}
    summary = tasks.resumable_flow_run(
        model_line_night, config, list(beam_args or []), dict(digests)
    )
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    print(summary["message"])
    print(f"line: {summary['line']}\nreport: {line_report_path(summary['line'])}")
    return summary


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.line.flow") -> int:
    return flow_main(LineConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
