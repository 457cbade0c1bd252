"""End-to-end ALBERT pretraining as a Prefect flow: segment -> vocab -> tfrecords -> pretrain -> evaluate.

Each stage is a Prefect task that calls the stage's library `run` function and writes its own
directory under the run directory (RUN_DIR/segment, vocab, tfrecords, pretrain, evaluate); the run
ends with RUN_DIR/report.md (+ plots) and a Prefect markdown artifact. Stages are cached across runs
on (input manifest, stage config, code version): re-running with nothing changed skips every stage,
changing one parameter re-runs that stage and the ones after it. Transient failures are retried.

With no --input, the corpus is the real Wikipedia dump sample shipped inside gensim (see
flows.default_corpus), so `make run` works offline on a fresh machine. With no Prefect server
configured, the flow runs against Prefect's temporary local server.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow
from pydantic import Field

import flows  # noqa: F401  (Prefect defaults before Prefect is imported)
from albert.config import JsonDict, StageConfig, build_config
from albert.fileio import join
from albert.stage import stage_main
from flows import tasks
from flows.default_corpus import default_corpus
from flows.run_config import RunConfig, run_plan, stage_summary

STAGES = ("segment", "vocab", "tfrecords", "pretrain", "evaluate")


class PretrainPipelineConfig(RunConfig):
    """Parameters of the end-to-end flow; per-stage dicts set any other field of a stage's config."""

    input: list[str] = Field(
        default_factory=list,
        description="raw corpus files or globs (Wikipedia dumps, books, text); default: the Wikipedia "
        "sample shipped in gensim",
    )
    run_dir: str = Field("runs/enwiki-sample", description="run directory (local or gs://); one subdirectory per stage")
    vocab_size: int = Field(8000, gt=5, description="SentencePiece vocabulary size")
    vocab: JsonDict = Field(default_factory=dict, description="other VocabConfig fields (YAML or JSON)")


def stage_configs(config: PretrainPipelineConfig) -> dict[str, StageConfig]:
    """The validated config of every stage (ConfigError names the stage's bad field)."""
    from pipelines.vocab import VocabConfig

    segment_dir, vocab_dir = config.stage_dir("segment"), config.stage_dir("vocab")
    spm_model = join(vocab_dir, "spiece.model")
    return {
        "segment": config.segment_config(config.input or [default_corpus()]),
        "vocab": build_config(VocabConfig, {"input": segment_dir, "output": vocab_dir,
                                            "vocab_size": config.vocab_size, "seed": config.seed, **config.vocab}),
        "tfrecords": config.tfrecords_config(segment_dir, spm_model),
        "pretrain": config.pretrain_config(spm_model),
        "evaluate": config.held_out_eval_config(config.trained_model(), "evaluate"),
    }


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def write_run_report(config: PretrainPipelineConfig, outcomes: dict[str, tasks.StageOutcome]) -> Path | None:
    """report.md + plots in the run directory and the Prefect artifacts (local run directories)."""
    from flows.report import Section, publish_report, with_sop_labels, write_report

    if "://" in config.run_dir:
        return None
    run_dir = Path(config.run_dir)
    timing = {name: {"seconds": round(o.seconds, 1), "cached": o.cached} for name, o in outcomes.items()}
    sections = [
        Section("Corpus statistics", _read_json(run_dir / "segment" / "stats.json") or outcomes["segment"].result),
        Section("Vocabulary statistics", _read_json(run_dir / "vocab" / "vocab_stats.json") or outcomes["vocab"].result),
        Section("Instance statistics", with_sop_labels(
            _read_json(run_dir / "tfrecords" / "metadata.json") or outcomes["tfrecords"].result)),
        Section("Stages", {"stages": timing}),
    ]
    evaluation = {"held-out": outcomes["evaluate"].result} if "evaluate" in outcomes else None
    path, markdown = write_report(run_dir, "ALBERT pretraining run", sections,
                                  metrics_file=run_dir / "pretrain" / "metrics.jsonl", evaluation=evaluation)
    publish_report("albert-pretrain", markdown, evaluation)
    return path


@flow(name="albert-pretrain-pipeline", log_prints=True)
def pretrain_pipeline(config: PretrainPipelineConfig, beam_args: list[str] | None = None) -> dict[str, Any]:
    """segment -> vocab -> tfrecords -> pretrain -> evaluate, then the report; returns the summary."""
    from flows.report import TrainingProgress

    configs = stage_configs(config)
    beam = {"beam_args": list(beam_args or [])}
    plan = [
        (tasks.segment, "segment", "stats.json", beam),
        (tasks.vocab, "vocab", "spiece.model", beam),
        (tasks.tfrecords, "tfrecords", "metadata.json", beam),
        (tasks.pretrain, "pretrain", join("export", "model.keras"),
         {"on_metrics": TrainingProgress("albert-pretrain", configs["pretrain"].steps)}),
        (tasks.evaluate, "evaluate", "metrics.json", {}),
    ]
    outcomes = run_plan(plan, configs, config.result_storage())
    report = write_run_report(config, outcomes)
    return {
        "run_dir": config.run_dir,
        "report": str(report) if report else None,
        "evaluation": outcomes["evaluate"].result,
        "stages": stage_summary(outcomes),
    }


def run(config: PretrainPipelineConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    """Validate every stage's config, run the flow, print where the run directory and report are."""
    stage_configs(config)  # bad values fail here, before Prefect starts
    start = time.monotonic()
    summary = pretrain_pipeline(config, list(beam_args or []))
    summary["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    print(f"run directory: {Path(config.run_dir).resolve() if '://' not in config.run_dir else config.run_dir}")
    print(f"report: {Path(summary['report']).resolve() if summary['report'] else None}")
    return summary


def _run_cli(config: PretrainPipelineConfig, beam_args: Sequence[str] | None = None) -> None:
    run(config, beam_args)  # prints its own summary, ending with the run directory and the report


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.pretrain_pipeline") -> int:
    return stage_main(PretrainPipelineConfig, _run_cli, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
