"""What a flow's run says when it ends: the facts its report states about the corpus, the
TFRecords, the training and the stages (`training_facts`), each stage's outcome (`stage_summary`)
and its last words (`print_summary`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from albert.fs import join
from flows.engine import tasks
from flows.run_config import RunConfig
from model.network.config import get_preset, parameter_counts


def stage_summary(outcomes: dict[str, tasks.StageOutcome]) -> dict[str, dict[str, Any]]:
    """Per stage: cached or not, seconds, and where a previous output was moved aside (if it
    was)."""
    return {
        name: {
            "cached": o.cached,
            "seconds": round(o.seconds, 2),
            **({"moved_aside": o.result["moved_aside"]} if o.result.get("moved_aside") else {}),
        }
        for name, o in outcomes.items()
    }


def training_facts(config: RunConfig, outcomes: dict[str, tasks.StageOutcome]) -> dict[str, Any]:
    """What both flows' reports state about the corpus, the TFRecords, the training and the stages,
    from the stages' returned summaries (a cached stage returns its cached one)."""

    segment, metadata = outcomes["segment"].result, outcomes["tfrecords"].result
    counts, heldout = metadata.get("counts") or {}, metadata.get("heldout") or {}
    pretrain_result = outcomes["pretrain"].result
    export = pretrain_result.get("export") or {}
    vocab_size = metadata.get("vocab_size")
    return {
        "documents": segment.get("documents_out", counts.get("documents")),
        "sentences": segment.get("sentences_out", counts.get("sentences")),
        "tokens": counts.get("document_tokens"),
        "vocab_size": vocab_size,
        "preset": config.preset,
        "parameters": (
            parameter_counts(get_preset(config.preset, vocab_size=vocab_size)).get("pretraining")
            if vocab_size
            else None
        ),
        "steps": pretrain_result.get("steps", config.steps),
        "time_budget": config.time_budget,
        "batch_size": config.batch_size,
        "max_seq_length": config.max_seq_length,
        "sequences_per_second": pretrain_result.get("sequences_per_second"),
        "export": export.get("keras", config.trained_model()),
        "export_hf": export.get("hf", join(config.stage_dir("pretrain"), "export", "hf")),
        "heldout_documents": heldout.get("documents"),
        "heldout_note": heldout.get("note"),
        "heldout_sequences": min(
            heldout.get("instances") or 0, (config.eval_batches or 10**12) * config.batch_size
        ),
        "stages": {
            name: {"seconds": o.seconds, "cached": o.cached} for name, o in outcomes.items()
        },
        "moved_aside": {
            name: o.result["moved_aside"]
            for name, o in outcomes.items()
            if o.result.get("moved_aside")
        },
    }


def print_summary(summary: dict[str, Any], run_dir: str, headline_line: str) -> None:
    """A flow's last words: the summary as JSON, the headline line, the run directory, report."""
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    print(headline_line)
    print(f"run directory: {Path(run_dir).resolve() if '://' not in run_dir else run_dir}")
    print(f"report: {Path(summary['report']).resolve() if summary['report'] else None}")
