"""Domain-adaptive pretraining as a Prefect flow: one adaptation of a base.

A base model + a new-domain corpus -> segment -> tfrecords (the base vocabulary) -> held-out
metrics of the base -> further pretraining -> held-out metrics again. The base is an earlier run
directory of flows.pipeline.flow (its pretrain/export/model.keras and vocab/spiece.model) or an
imported model (.keras, Hugging Face dir, TF1 checkpoint) with --spm-model. Before/after figures
are held-out in-domain masked-LM accuracy and perplexity (on whole documents of the new corpus that
further pretraining never sees: pipelines.tfrecords' held-out split), beside the unigram baseline.
The run ends with RUN_DIR/report.md + report.html + plots (flows.domain.report: a headline block,
then one section per stage) and a Prefect markdown artifact, and prints the before -> after scores.

`--line LINE --input GLOB` (night after night: a model line) hands the command over to the model
line's own flow (flows.line.flow, `python -m flows.line.flow --help` for its flags): a night of
the line, what the nightly deployment in prefect.yaml runs.

Stages are cached and retried as in flows.pipeline.flow; `albert deploy` applies the
deployment."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from prefect import flow

from albert.config import StageConfig
from albert.errors import Interrupted
from flows.domain.report import MODELS, domain_report_markdown, format_headline_line
from flows.domain_config import DomainAdaptiveConfig, data_configs, resolve_base
from flows.engine import tasks
from flows.engine.entry import flow_main
from flows.piece_baseline import piece_baseline
from flows.report.render import TrainingProgress, write_report
from flows.report.text import files_text, finetune_command
from flows.run_plan import cpu_seconds, run_plan
from flows.run_summary import print_summary, stage_summary, training_facts
from flows.secondary_process import pretrain_as_secondary_process


def stage_configs(config: DomainAdaptiveConfig) -> dict[str, StageConfig]:
    """The validated config of every stage of one adaptation (ConfigError names the stage's bad
    field)."""
    base_model, spm = resolve_base(config)
    return data_configs(config, config.input, spm) | {
        "heldout-before": config.held_out_eval_config(base_model, "heldout-before"),
        "pretrain": config.pretrain_config(spm, init=base_model),
        "heldout-after": config.held_out_eval_config(config.trained_model(), "heldout-after"),
    }


def domain_facts(
    config: DomainAdaptiveConfig,
    outcomes: dict[str, tasks.StageOutcome],
    *,
    baseline: dict,
    wall_seconds: float,
    cpu_seconds: float,
) -> dict[str, Any]:
    """What the report says, from the stages' returned summaries (a cached stage returns its
    cached one)."""
    base_model, spm = resolve_base(config)
    summaries = {
        name: outcomes[name].result
        for name in ("segment", "select", "tfrecords")
        if name in outcomes
    }
    return {
        **training_facts(config, outcomes),
        "base": base_model,
        "base_spm": spm,
        "inputs": files_text(config.input),
        "selection": summaries.get("select"),
        "evaluation": {
            "base": outcomes["heldout-before"].result,
            "adapted": outcomes["heldout-after"].result,
        },
        "baseline": baseline,
        "wall_seconds": wall_seconds,
        "cpu_seconds": cpu_seconds,
        "next_command": finetune_command(config.trained_model(), spm, config.run_dir),
        "summaries": summaries,
    }


@flow(name="albert-domain-adaptive", log_prints=True)
def domain_adaptive(config: DomainAdaptiveConfig, beam_args: list[str] | None = None) -> Any:
    """One adaptation of --base. Further pretraining stopped by a signal (its checkpoint saved)
    ends the flow run Cancelled, named "Interrupted" (`tasks.interrupted`): the same command
    resumes it.

    Args:
        config: the adaptation (`python -m flows.domain.flow`'s flags): the base run or model, the
            new domain's files, the further pretraining
        beam_args: Apache Beam pipeline options for the Beam stages, e.g. `--runner=DataflowRunner`,
            `--project=P`, `--region=R`, `--temp_location=gs://B/tmp` (default: none, Beam's
            in-process FnApiRunner)
    """
    try:
        return adapt(config, beam_args)
    except Interrupted as stop:
        return tasks.interrupted(stop)


def adapt(config: DomainAdaptiveConfig, beam_args: list[str] | None = None) -> dict[str, Any]:
    """segment -> [select] -> tfrecords -> heldout (base) -> pretrain -> heldout (adapted), then
    the report."""

    start, cpu_start = time.monotonic(), cpu_seconds()
    configs = stage_configs(config)
    beam = {"beam_args": list(beam_args or [])}
    selection = [(tasks.domain_select, "select", beam)] if "select" in configs else []
    plan = [
        (tasks.segment, "segment", beam),
        *selection,
        (tasks.tfrecords, "tfrecords", beam),
        (tasks.heldout.with_options(name="heldout-before"), "heldout-before", {}),
        (
            tasks.pretrain,
            "pretrain",
            {"on_metrics": TrainingProgress("albert-domain-adaptive", configs["pretrain"].steps)},
        ),
        (tasks.heldout.with_options(name="heldout-after"), "heldout-after", {}),
    ]
    outcomes = run_plan(plan, configs, config.result_storage())
    baseline = piece_baseline(config, resolve_base(config)[1])
    facts = domain_facts(
        config,
        outcomes,
        baseline=baseline,
        wall_seconds=time.monotonic() - start,
        cpu_seconds=cpu_seconds() - cpu_start,
    )
    report = write_report(
        config.run_dir,
        "ALBERT domain-adaptive run",
        "albert-domain-adaptive",
        lambda run_dir: domain_report_markdown(run_dir, facts),
        {MODELS[k]: facts["evaluation"][k] for k in MODELS},
        facts["baseline"],
    )
    print(format_headline_line(facts), flush=True)
    return {
        "run_dir": config.run_dir,
        "report": str(report) if report else None,
        "evaluation": facts["evaluation"],
        "baseline": {k: baseline[k] for k in ("masked_lm_accuracy", "sop_accuracy", "piece")},
        "stages": stage_summary(outcomes),
    }


def run(config: DomainAdaptiveConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    """Validate every stage's config, run the flow, print the summary, the before -> after scores,
    the run directory and the report."""
    configs = stage_configs(config)  # bad values fail here, before Prefect starts
    if config.process_id:  # another host of a several-host run: process 0 runs the flow
        return pretrain_as_secondary_process(
            config, (tasks.tfrecords, configs["tfrecords"]), configs["pretrain"]
        )
    summary = tasks.resumable_flow_run(domain_adaptive, config, list(beam_args or []))
    print_summary(summary, config.run_dir, format_headline_line(summary))
    return summary


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.domain.flow") -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg == "--line" or arg.startswith("--line=") for arg in args):
        from flows.line.flow import main as line_main  # a night of a model line

        return line_main(args, prog=prog)
    return flow_main(DomainAdaptiveConfig, run, args, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
