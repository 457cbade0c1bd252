"""End-to-end ALBERT pretraining as a Prefect flow: segment [-> decontaminate] -> vocab -> tfrecords
-> pretrain -> heldout.

Each stage is a Prefect task that calls the stage's library `run` function and writes its own
directory under the run directory (RUN_DIR/segment, vocab, tfrecords, pretrain, heldout);
`--downstream TASK=DIR` adds fine-tuning of the pretrained model and of a randomly initialised twin
(RUN_DIR/finetune-TASK[-random]); `--eval PATH` adds decontamination after segment
(RUN_DIR/decontaminate: how many examples of each evaluation set share a 13-gram with the corpus, in
the report; with `--remove-contaminated` vocab and tfrecords read the corpus without those
sentences), and so does `--downstream` for the dev sets its fine-tunes are scored on (unless
`--no-check-downstream`). Held-out figures are on whole documents training never reads
(pipelines.tfrecords). The run ends with RUN_DIR/report.md + report.html + plots
(flows.pipeline.report: a headline block, then one section per stage) and a Prefect markdown
artifact, and prints the held-out scores beside their baselines. Stages are cached across runs on
(input manifest, stage config, code version): re-running with nothing changed skips every stage,
changing one parameter re-runs that stage and the ones after it. Transient failures are retried.

With no --input, the corpus is the demo corpus shipped with the package (a real Wikipedia dump
sample, see flows.pipeline.default_corpus), so `make run` works offline on a fresh machine.
With no Prefect server configured, the flow runs against Prefect's temporary local server.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow

from albert.config import StageConfig, build_config
from albert.errors import Interrupted
from albert.fs import join
from flows.engine import tasks
from flows.engine.entry import flow_main
from flows.piece_baseline import piece_baseline
from flows.pipeline.config import PretrainPipelineConfig
from flows.pipeline.default_corpus import default_corpus
from flows.pipeline.downstream import downstream_results, downstream_steps
from flows.pipeline.report import format_headline_line, run_report_markdown
from flows.report.render import TrainingProgress, write_report
from flows.report.text import (
    SHORT_FINETUNE_STEPS,
    files_text,
    finetune_command,
    short_finetune_text,
)
from flows.run_plan import cpu_seconds, run_plan
from flows.run_summary import print_summary, stage_summary, training_facts
from flows.secondary_process import pretrain_as_secondary_process
from pipelines.decontaminate.eval_sets import eval_splits
from pipelines.vocab.config import VocabConfig


def stage_configs(config: PretrainPipelineConfig) -> dict[str, StageConfig]:
    """The validated config of every stage (ConfigError names the stage's bad field)."""
    corpus, vocab_dir = config.corpus_dir(), config.stage_dir("vocab")
    spm_model = join(vocab_dir, "spiece.model")
    checked = config.evaluation_sets()
    decontaminate = {"decontaminate": decontaminate_config(config)} if checked else {}
    return {
        "segment": config.segment_config(config.input or default_corpus()),
        **decontaminate,
        "vocab": build_config(
            VocabConfig,
            {
                "input": corpus,
                "output": vocab_dir,
                "vocab_size": config.vocab_size,
                "seed": config.seed,
                **config.vocab,
            },
        ),
        "tfrecords": config.tfrecords_config(corpus, spm_model),
        "pretrain": config.pretrain_config(
            spm_model, jit_compile=config.jit_compile, eval_every=max(1, config.steps // 4)
        ),
        "heldout": config.held_out_eval_config(config.trained_model(), "heldout"),
    }


def decontaminate_config(config: PretrainPipelineConfig) -> StageConfig:
    """albert decontaminate on segment's output against --eval (--remove-contaminated: --remove)."""
    from pipelines.decontaminate.stage import DecontaminateConfig  # heavy: loads Beam

    return build_config(
        DecontaminateConfig,
        {
            "corpus": config.stage_dir("segment"),
            "eval": config.evaluation_sets(),
            "output": config.stage_dir("decontaminate"),
            "remove": config.remove_contaminated,
        },
    )


def next_command(config: PretrainPipelineConfig) -> str:
    """The fine-tune the report suggests: a short one (`SHORT_FINETUNE_STEPS` at the run's
    sequence length), which ends in minutes on the machine that ran the demo."""
    return finetune_command(
        config.trained_model(),
        join(config.stage_dir("vocab"), "spiece.model"),
        config.run_dir,
        train_steps=SHORT_FINETUNE_STEPS,
        max_seq_length=config.max_seq_length,
    )


def run_facts(
    config: PretrainPipelineConfig,
    outcomes: dict[str, tasks.StageOutcome],
    *,
    wall_seconds: float,
    cpu_seconds: float,
    baseline: dict,
    downstream: list[dict],
) -> dict[str, Any]:
    """What the report says, from the stages' returned summaries (a cached stage returns its
    cached one)."""
    files = config.input or [Path(path).name for path in default_corpus()]
    facts = training_facts(config, outcomes)
    return {
        **facts,
        "inputs": files_text(files, "" if config.input else "; the demo corpus"),
        "vocab_size": facts["vocab_size"] or config.vocab_size,
        "evaluation": outcomes["heldout"].result,
        "baseline": baseline,
        "wall_seconds": wall_seconds,
        "cpu_seconds": cpu_seconds,
        "downstream": downstream,
        "next_command": next_command(config),
        "next_text": short_finetune_text(SHORT_FINETUNE_STEPS, config.max_seq_length),
        "summaries": {
            name: outcomes[name].result
            for name in ("segment", "decontaminate", "vocab", "tfrecords")
            if name in outcomes
        },
    }


@flow(name="albert-pretrain-pipeline", log_prints=True)
def pretrain_pipeline(
    config: PretrainPipelineConfig, beam_args: list[str] | None = None
) -> dict[str, Any]:
    """segment -> vocab -> tfrecords -> pretrain -> heldout [-> fine-tune pretrained and random
    twins], then the report; returns the summary. Pretraining stopped by a signal (its checkpoint
    saved) ends the flow run Cancelled, named "Interrupted" (`tasks.interrupted`).

    Args:
        config: the run (`albert run`'s flags; default: the demo corpus into runs/enwiki-sample)
        beam_args: Apache Beam pipeline options for the Beam stages, e.g. `--runner=DataflowRunner`,
            `--project=P`, `--region=R`, `--temp_location=gs://B/tmp` (default: none, Beam's
            in-process FnApiRunner)
    """

    start, cpu_start = time.monotonic(), cpu_seconds()
    configs = stage_configs(config)
    downstream = downstream_steps(config)
    beam = {"beam_args": list(beam_args or [])}
    plan = [
        (tasks.segment, "segment", beam),
        *([(tasks.decontaminate, "decontaminate", beam)] if "decontaminate" in configs else []),
        (tasks.vocab, "vocab", beam),
        (tasks.tfrecords, "tfrecords", beam),
        (
            tasks.pretrain,
            "pretrain",
            {
                "on_metrics": TrainingProgress(
                    "albert-pretrain",
                    configs["pretrain"].steps,
                    total_seconds=configs["pretrain"].budget_seconds,
                )
            },
        ),
        (tasks.heldout, "heldout", {}),
        *[(step.stage_task.with_options(name=name), name, {}) for name, step in downstream.items()],
    ]
    try:
        outcomes = run_plan(
            plan,
            {**configs, **{name: step.config for name, step in downstream.items()}},
            config.result_storage(),
        )
    except Interrupted as stop:  # pretraining saved a checkpoint: the same command resumes it
        return tasks.interrupted(stop)
    baseline = piece_baseline(config, join(config.stage_dir("vocab"), "spiece.model"))
    facts = run_facts(
        config,
        outcomes,
        wall_seconds=time.monotonic() - start,
        cpu_seconds=cpu_seconds() - cpu_start,
        baseline=baseline,
        downstream=downstream_results(downstream, outcomes),
    )
    report = write_report(
        config.run_dir,
        "ALBERT pretraining run",
        "albert-pretrain",
        lambda run_dir: run_report_markdown(run_dir, facts),
        {"held-out documents": facts["evaluation"]},
        facts["baseline"],
    )
    print(format_headline_line(facts), flush=True)
    return {
        "run_dir": config.run_dir,
        "report": str(report) if report else None,
        "evaluation": outcomes["heldout"].result,
        "baseline": {k: baseline[k] for k in ("masked_lm_accuracy", "sop_accuracy", "piece")},
        "downstream": facts["downstream"],
        "stages": stage_summary(outcomes),
    }


def run(config: PretrainPipelineConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    """Validate every stage's config, run the flow, print where the run directory and report are."""
    configs = stage_configs(config)  # bad values fail here, before Prefect starts
    downstream_steps(config)
    for path in config.evaluation_sets():  # a set in no known format, before segment runs
        eval_splits(path)
    if config.process_id:  # another host of a several-host run: process 0 runs the flow
        return pretrain_as_secondary_process(
            config, (tasks.tfrecords, configs["tfrecords"]), configs["pretrain"]
        )
    start = time.monotonic()
    summary = tasks.resumable_flow_run(pretrain_pipeline, config, list(beam_args or []))
    summary["seconds"] = round(time.monotonic() - start, 1)
    print_summary(summary, config.run_dir, format_headline_line(summary))
    return summary


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.pipeline.flow") -> int:
    return flow_main(PretrainPipelineConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
