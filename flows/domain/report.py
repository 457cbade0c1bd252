"""The domain-adaptive run's report: a headline to read in 30 seconds, then a section per stage.

Built from the run report's blocks (flows.report.sections, flows.report.text: stage sections,
headline lines, tables, plots): the held-out in-domain scores of the base model before and of
the adapted model after further pretraining, beside the unigram baseline; what went in (the
base, the new-domain corpus, the selection); the export; time per stage; the next command.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.report.render import format_value, plot_distribution
from flows.report.sections import (
    STAGE_TITLES,
    evaluation_section,
    optional_stage,
    plots_dir,
    pretrain_stage,
    segment_stage,
    stage_section,
    tfrecords_stage,
)
from flows.report.text import (
    corpus_text,
    heldout_line,
    kept_lines,
    millions,
    next_block,
    number,
    piece_baseline_text,
    table,
    time_line,
    training_text,
)

MODELS = {"base": "base model (before)", "adapted": "adapted (after)"}


def change(before: Any, after: Any) -> str:
    """After minus before as a person writes it ('+0.022', '-1,150', '0'); '–' for a non-number."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)):
        return "–"
    delta = after - before
    return "0" if delta == 0 else f"{delta:+,.0f}" if abs(delta) >= 100 else f"{delta:+.3g}"


def scores_table(evaluation: Mapping[str, Mapping[str, Any]], baseline: Mapping[str, Any]) -> str:
    """Held-out in-domain scores: the base model before, the adapted one after, the change, the
    baseline."""
    before, after = evaluation.get("base") or {}, evaluation.get("adapted") or {}

    def row(label: str, key: str, reference: str) -> tuple[str, ...]:
        return (
            label,
            number(before.get(key)),
            f"**{number(after.get(key))}**",
            change(before.get(key), after.get(key)),
            reference,
        )

    return table(
        [
            row("masked-LM accuracy", "masked_lm_accuracy", piece_baseline_text(baseline)),
            row("masked-LM perplexity", "perplexity", "–"),
            row("sentence-order (SOP) accuracy", "sop_accuracy", "0.5 (chance)"),
        ],
        ("held-out in-domain score", *MODELS.values(), "change", "baseline"),
    )


def selection_text(selection: Mapping[str, Any]) -> str:
    """'25 of 60 documents (the 25 most in-domain by the domain classifier)'."""
    rule = (
        f"the {number(selection['top_k'])} most in-domain"
        if selection.get("top_k") is not None
        else f"P(in-domain) ≥ {format_value(selection.get('threshold'))}"
    )
    return (
        f"{number(selection.get('selected'))} of {number(selection.get('documents'))} "
        f"documents ({rule} by the domain classifier)"
    )


def headline(facts: Mapping[str, Any]) -> str:
    """The block a person reads first: in, out, before → after beside the baseline, time, next."""
    lines = [
        (
            f"**In:** the base model `{facts['base']}` (its "
            f"{number(facts.get('vocab_size'))}-piece "
            f"vocabulary `{facts['base_spm']}`) and the new-domain corpus: {facts['inputs']} → "
            f"{corpus_text(facts)}"
        ),
    ]
    if facts.get("selection"):
        lines.append(f"**Selected:** {selection_text(facts['selection'])}")
    lines += [
        (
            f"**Out:** {facts['preset']}, {millions(facts.get('parameters'))} parameters, further "
            f"pretrained {training_text(facts)}"
        ),
        heldout_line(facts, "of the new corpus that further pretraining never saw"),
        scores_table(facts.get("evaluation") or {}, facts.get("baseline") or {}),
        time_line(facts),
        *kept_lines(facts),
        next_block(
            "fine-tune the adapted model on a task (any task `albert finetune` knows)",
            facts["next_command"],
        ),
    ]
    return "\n\n".join(lines)


def selection_section(selection: Mapping[str, Any]) -> str:
    rows = [
        ("documents scored", number(selection.get("documents"))),
        ("documents kept", selection_text(selection)),
    ]
    if selection.get("classifier"):
        rows.append(("classifier", f"`{selection['classifier']}`"))
    return table(rows, ("figure", "value"))


def evaluation_body(run_dir: Path, facts: Mapping[str, Any], plots: Path) -> str:
    """The before/after table and a bar chart of masked-LM accuracy beside the baseline."""
    evaluation, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    parts = [evaluation_section({MODELS[k]: evaluation.get(k) or {} for k in MODELS}, baseline)]
    bars = {
        "baseline (most frequent piece)": baseline.get("masked_lm_accuracy"),
        **{MODELS[k]: (evaluation.get(k) or {}).get("masked_lm_accuracy") for k in MODELS},
    }
    if all(isinstance(v, (int, float)) for v in bars.values()):
        image = plot_distribution(
            "Held-out in-domain masked-LM accuracy",
            bars,
            plots / "heldout-before-after.png",
            xlabel="masked-LM accuracy",
            ordered=True,
        )
        parts.append(
            f"![held-out masked-LM accuracy: baseline, base model, adapted model]"
            f"({image.relative_to(run_dir).as_posix()})"
        )
    return "\n\n".join(parts)


def domain_report_markdown(run_dir: Path, facts: Mapping[str, Any]) -> str:
    """The whole report (plots written to RUN_DIR/plots)."""
    parts = [
        f"# ALBERT domain-adaptive run: `{run_dir.name}`",
        headline(facts),
        segment_stage(run_dir, facts, "Segment: new-domain corpus to sentences"),
        *optional_stage(
            run_dir,
            facts,
            "select",
            "Domain-classifier selection",
            selection_section,
            "selection.json",
        ),
        tfrecords_stage(run_dir, facts, f"{STAGE_TITLES['tfrecords']} (the base's vocabulary)"),
        pretrain_stage(run_dir, facts, "Further pretraining from the base model"),
        stage_section(
            run_dir,
            facts,
            ("heldout-before", "heldout-after"),
            "Held-out in-domain evaluation: before and after",
            evaluation_body(run_dir, facts, plots_dir(run_dir)),
            [run_dir / name / "metrics.json" for name in ("heldout-before", "heldout-after")],
        ),
    ]
    return "\n\n".join(parts) + "\n"


def format_headline_line(facts: Mapping[str, Any]) -> str:
    """One line for the terminal: held-out in-domain masked-LM accuracy and perplexity, before ->
    after, beside the baseline."""
    evaluation, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    before, after = evaluation.get("base") or {}, evaluation.get("adapted") or {}
    return (
        f"held-out in-domain documents: masked-LM accuracy "
        f"{format_value(before.get('masked_lm_accuracy'))} -> "
        f"{format_value(after.get('masked_lm_accuracy'))} (baseline "
        f"{format_value(baseline.get('masked_lm_accuracy'))}), perplexity "
        f"{format_value(before.get('perplexity'))} -> {format_value(after.get('perplexity'))}"
    )
