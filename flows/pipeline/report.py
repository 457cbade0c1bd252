"""The pretraining run's report: a headline a person reads in 30 seconds, then a section per stage.

`run_report_markdown` turns what the stages returned (segment's statistics, vocab's, tfrecords'
metadata: the contents of their stats.json, vocab_stats.json and metadata.json, in
`facts["summaries"]`), pretrain's metrics.jsonl, the evaluation, the baselines and optional
downstream fine-tuning results into curated tables — human labels and units, formatted numbers,
links to the full JSON files instead of option dumps — and readable plots (flows.report.render draws
them). The sections come from flows.report.sections, the shared sentences and tables from
flows.report.text."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.report.data_quality import contamination_line, decontamination_section
from flows.report.render import format_value, plot_confusion
from flows.report.sections import (
    STAGE_TITLES,
    evaluation_section,
    optional_stage,
    pretrain_stage,
    segment_stage,
    stage_section,
    tfrecords_stage,
    vocab_section,
)
from flows.report.text import (
    corpus_text,
    distilled_table,
    downstream_table,
    heldout_line,
    kept_lines,
    link,
    millions,
    next_block,
    number,
    per_class_tables,
    piece_baseline_text,
    predicted_table,
    table,
    time_line,
    training_text,
)


def headline(facts: Mapping[str, Any]) -> str:
    """The block a person reads first: in, out, held-out scores beside baselines, time, next
    command."""
    heldout, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    scores = table(
        [
            (
                "masked-LM accuracy",
                f"**{number(heldout.get('masked_lm_accuracy'))}**",
                piece_baseline_text(baseline),
            ),
            (
                "sentence-order (SOP) accuracy",
                f"**{number(heldout.get('sop_accuracy'))}**",
                "0.5 (chance)",
            ),
        ],
        ("held-out score", "this model", "baseline"),
    )
    lines = [
        (
            f"**In:** {facts['inputs']} → {corpus_text(facts)} "
            f"({number(facts.get('vocab_size'))}-piece vocabulary)"
        ),
        (
            f"**Out:** {facts['preset']}, {millions(facts.get('parameters'))} parameters, trained "
            f"{training_text(facts)}"
        ),
        heldout_line(facts),
        scores,
        time_line(facts),
        *kept_lines(facts),
    ]
    contamination = (facts.get("summaries") or {}).get("decontaminate")
    if contamination:
        lines.insert(2, contamination_line(contamination))
    if facts.get("downstream"):
        lines.append(downstream_table(facts["downstream"]))
        lines += per_class_tables(facts["downstream"])
        distilled = distilled_table(facts["downstream"])
        lines += [distilled] if distilled else []
        predicted = predicted_table(facts["downstream"])
        lines += [predicted] if predicted else []
    lines.append(
        next_block(
            facts.get("next_text") or "fine-tune it on a task (any task `albert finetune` knows)",
            facts["next_command"],
        )
    )
    return "\n\n".join(lines)


def run_report_markdown(run_dir: Path, facts: Mapping[str, Any]) -> str:
    """The whole report (plots written to RUN_DIR/plots)."""
    summaries = facts.get("summaries") or {}
    parts = [
        f"# ALBERT pretraining run: `{run_dir.name}`",
        headline(facts),
        segment_stage(run_dir, facts, STAGE_TITLES["segment"]),
        *optional_stage(
            run_dir,
            facts,
            "decontaminate",
            STAGE_TITLES["decontaminate"],
            decontamination_section,
            "contamination.json",
        ),
        stage_section(
            run_dir,
            facts,
            ("vocab",),
            STAGE_TITLES["vocab"],
            vocab_section(summaries.get("vocab") or {}),
            [run_dir / "vocab" / "vocab_stats.json"],
        ),
        tfrecords_stage(run_dir, facts, STAGE_TITLES["tfrecords"]),
        pretrain_stage(run_dir, facts, STAGE_TITLES["pretrain"]),
        stage_section(
            run_dir,
            facts,
            ("heldout",),
            STAGE_TITLES["heldout"],
            evaluation_section(
                {"model": facts.get("evaluation") or {}}, facts.get("baseline") or {}
            ),
            [run_dir / "heldout" / "metrics.json"],
        ),
    ]
    if facts.get("downstream"):
        parts.append(
            "## Downstream fine-tuning\n\nThe headline's table; full results: "
            + ", ".join(
                link(run_dir, run_dir / output / "results.json")
                for r in facts["downstream"]
                for output in (r["pretrained_output"], r["random_output"])
            )
        )
        parts += confusion_pictures(run_dir, facts["downstream"])
    return "\n\n".join(parts) + "\n"


def confusion_pictures(run_dir: Path, downstream: list[Mapping[str, Any]]) -> list[str]:
    """The pretrained fine-tune's dev confusion matrix of each downstream task that has one (a
    user's classification task), drawn in RUN_DIR/plots/confusion-TASK.png."""
    images = []
    for result in downstream:
        details = result.get("pretrained_details") or {}
        if not details.get("confusion_matrix"):
            continue
        plots = run_dir / "plots"
        plots.mkdir(parents=True, exist_ok=True)
        image = plot_confusion(
            f"{result['task']}: dev confusion matrix (pretrained)",
            details["confusion_matrix"],
            list(details["per_class"]),
            plots / f"confusion-{result['task']}.png",
        )
        relative = image.relative_to(run_dir).as_posix()
        images.append(f"![{result['task']} confusion matrix]({relative})")
    return images


def format_headline_line(facts: Mapping[str, Any]) -> str:
    """One line for the terminal: the final held-out scores beside their baselines (from the facts
    or the flow's summary: both have `evaluation` and `baseline`)."""
    heldout, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    return (
        f"held-out documents: masked-LM accuracy {format_value(heldout.get('masked_lm_accuracy'))} "
        f"(baseline {format_value(baseline.get('masked_lm_accuracy'))}), SOP accuracy "
        f"{format_value(heldout.get('sop_accuracy'))} (chance 0.5)"
    )
