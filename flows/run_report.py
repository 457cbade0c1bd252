"""The pretraining run's report: a headline a person reads in 30 seconds, then one section per stage.

`run_report_markdown` turns what the stages returned (segment's statistics, vocab's, tfrecords'
metadata: the contents of their stats.json, vocab_stats.json and metadata.json, in `facts["summaries"]`),
pretrain's metrics.jsonl, the evaluation, the baselines and optional downstream fine-tuning results into curated tables — human labels and units, formatted numbers, links to the
full JSON files instead of option dumps — and readable plots (flows.report draws them).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.report import format_value, plot_curves, plot_distribution, read_metrics

METRIC_NAMES = {  # the official names of the fine-tuning tasks' primary metrics
    "accuracy": "accuracy",
    "f1": "F1",
    "mcc": "Matthews correlation",
    "pearson": "Pearson correlation",
    "spearman": "Spearman correlation",
    "exact": "exact match",
}
STAGE_TITLES = {
    "segment": "Segment: raw text to sentences",
    "vocab": "Vocabulary: SentencePiece",
    "tfrecords": "TFRecords: pretraining instances",
    "pretrain": "Pretraining",
    "heldout": "Held-out evaluation",
}


def number(value: Any) -> str:
    """1234 -> '1,234'; 2_525_116 -> '2.53 M'; 0.18234 -> '0.182'; None -> '–'."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        return f"{value / 1e6:.3g} M" if abs(value) >= 10_000_000 else f"{int(value):,}"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def millions(value: float | None) -> str:
    return "–" if value is None else f"{value / 1e6:.2f} M"


def percent(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def duration(seconds: float | None) -> str:
    """19.04 -> '19.0 s'; 252 -> '4 min 12 s'."""
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows
    ]
    return "\n".join(lines)


def link(run_dir: Path, path: Path, text: str | None = None) -> str:
    relative = path.relative_to(run_dir).as_posix()
    return f"[{text or relative}]({relative})"


def files_text(files: list[str], note: str = "") -> str:
    """'2 files (`a.txt`, `b.txt`)': how many input files, the first three named, and `note`."""
    named = ", ".join(f"`{f}`" for f in files[:3]) + (", …" if len(files) > 3 else "")
    return f"{len(files)} file{'s' if len(files) != 1 else ''} ({named}{note})"


def corpus_text(facts: Mapping[str, Any]) -> str:
    """'97 documents, 18,234 sentences, 594,947 tokens': what the corpus became."""
    return (
        f"{number(facts.get('documents'))} documents, {number(facts.get('sentences'))} "
        f"sentences, {number(facts.get('tokens'))} tokens"
    )


def budget_note(facts: Mapping[str, Any]) -> str:
    """' (time budget 10m)' when the run pretrained under --time-budget, else ''."""
    return f" (time budget {facts['time_budget']})" if facts.get("time_budget") else ""


def training_text(facts: Mapping[str, Any]) -> str:
    """'300 steps × 32 sequences of 128 tokens → `…/model.keras` (Hugging Face: `…/hf`)'."""
    return (
        f"{number(facts.get('steps'))} steps{budget_note(facts)} × {facts.get('batch_size')} "
        f"sequences of "
        f"{facts.get('max_seq_length')} tokens → `{facts['export']}` "
        f"(Hugging Face: `{facts['export_hf']}`)"
    )


def heldout_line(facts: Mapping[str, Any], unseen: str = "the model never trained on") -> str:
    """The held-out split: whole documents training never saw (`unseen` says whose), and the stage's
    note when the corpus has fewer documents than the held-out minimum."""
    documents = facts.get("heldout_documents")
    line = (
        f"**Held out:** {number(documents)} whole document{'' if documents == 1 else 's'} "
        f"{unseen} ({number(facts.get('heldout_sequences'))} sequences scored)"
    )
    return line + (f". **Note:** {facts['heldout_note']}" if facts.get("heldout_note") else "")


def time_line(facts: Mapping[str, Any]) -> str:
    stages = ", ".join(
        f"{name} {duration(t['seconds'])}{' (cached)' if t['cached'] else ''}"
        for name, t in facts["stages"].items()
    )
    return (
        f"**Time:** {duration(facts.get('wall_seconds'))} wall, "
        f"{duration(facts.get('cpu_seconds'))} CPU — {stages}"
    )


def kept_lines(facts: Mapping[str, Any]) -> list[str]:
    return [
        f"**Kept:** the previous `{name}` output (other inputs or parameters) was moved aside to "
        f"`{path}`, not deleted."
        for name, path in (facts.get("moved_aside") or {}).items()
    ]


def next_block(what: str, command: str) -> str:
    return f"**Next:** {what}:\n\n```bash\n{command}\n```"


def piece_baseline_text(baseline: Mapping[str, Any]) -> str:
    return (
        f"{number(baseline.get('masked_lm_accuracy'))} (always the most frequent piece, "
        f"`{baseline.get('piece', '?')}`)"
    )


def headline(facts: Mapping[str, Any]) -> str:
    """The block a person reads first: in, out, held-out scores beside baselines, time, next command."""
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
    if facts.get("downstream"):
        lines.append(downstream_table(facts["downstream"]))
    lines.append(
        next_block(
            "fine-tune it on a task (any task `albert finetune` knows)", facts["next_command"]
        )
    )
    return "\n\n".join(lines)


def finetune_command(
    model: str,
    spm_model: str,
    run_dir: str,
    task: str = "sst2",
    data_dir: str = "../shared/data/glue/SST-2",
) -> str:
    """`albert finetune` of `model` on a task, written to RUN_DIR/finetune-TASK."""
    return " ".join(
        [
            "albert finetune",
            "--task",
            task,
            "--data-dir",
            shlex.quote(data_dir),
            "--init",
            shlex.quote(model),
            "--spm-model",
            shlex.quote(spm_model),
            "--output",
            shlex.quote(f"{run_dir}/finetune-{task}"),
        ]
    )


def downstream_table(results: list[Mapping[str, Any]]) -> str:
    """Pretrained vs randomly initialised twin, per task, under the metric's official name."""
    rows = []
    for result in results:
        metric = result["metric"]
        pretrained, random = result["pretrained"].get(metric), result["random"].get(metric)
        gain = (
            pretrained - random
            if isinstance(pretrained, float) and isinstance(random, float)
            else None
        )
        rows.append(
            (
                result["task"],
                METRIC_NAMES.get(metric, metric),
                f"**{number(pretrained)}**",
                number(random),
                f"{gain:+.3f}" if gain is not None else "–",
                number(result.get("steps")),
            )
        )
    return "**Downstream (dev set, same budget and seed):**\n\n" + table(
        rows, ("task", "metric", "pretrained", "random init", "gain", "fine-tuning steps")
    )


def segment_section(run_dir: Path, stats: Mapping[str, Any], plots: Path) -> str:
    skipped = {k.replace("_", " "): v for k, v in (stats.get("skipped") or {}).items() if v}
    rows = [
        ("input files read", number(stats.get("files_read"))),
        (
            "documents in → kept",
            f"{number(stats.get('documents_in'))} → {number(stats.get('documents_out'))}",
        ),
        ("documents skipped", ", ".join(f"{k} {number(v)}" for k, v in skipped.items()) or "none"),
        (
            "characters in → kept",
            f"{number(stats.get('characters_in'))} → {number(stats.get('characters_out'))}",
        ),
        ("sentences kept", number(stats.get("sentences_out"))),
        ("duplicate paragraphs removed", number(stats.get("paragraphs_duplicate"))),
        ("bad files", number(len(stats.get("bad_files") or []))),
    ]
    parts = [table(rows, ("figure", "value"))]
    if len(skipped) >= 2:
        image = plot_distribution(
            "Documents skipped, by reason",
            skipped,
            plots / "segment-skipped.png",
            xlabel="documents",
        )
        parts.append(f"![documents skipped by reason]({image.relative_to(run_dir).as_posix()})")
    return "\n\n".join(parts)


def vocab_section(stats: Mapping[str, Any]) -> str:
    return table(
        [
            ("vocabulary size", f"{number(stats.get('vocab_size'))} pieces"),
            (
                "sentences sampled to train it",
                (
                    f"{number(stats.get('sample_sentences'))} of "
                    f"{number(stats.get('corpus_sentences'))}"
                ),
            ),
            ("unknown pieces on held-out sentences", percent(stats.get("unk_rate"), 3)),
            ("pieces per word (held-out)", number(stats.get("pieces_per_word"))),
            ("training time", duration(stats.get("training_seconds"))),
        ],
        ("figure", "value"),
    )


def tfrecords_section(run_dir: Path, metadata: Mapping[str, Any], plots: Path) -> str:
    counts, heldout = metadata.get("counts") or {}, metadata.get("heldout") or {}
    instances = counts.get("instances", 0)
    rows = [
        (
            "documents (training + held out)",
            (
                f"{number(counts.get('documents'))} "
                f"({number(heldout.get('documents'))} held out whole)"
            ),
        ),
        (
            "sequences (training + held out)",
            f"{number(instances)} ({number(heldout.get('instances'))} held out)",
        ),
        ("passes with different masks (dupe factor)", number(metadata.get("dupe_factor"))),
        (
            "tokens per sequence (mean / max)",
            (
                f"{number(metadata.get('mean_tokens_per_instance'))} / "
                f"{metadata.get('max_seq_length')}"
            ),
        ),
        *truncation_rows(metadata.get("truncation")),
        (
            "masked pieces per sequence (mean / max)",
            (
                f"{number(metadata.get('mean_predictions_per_instance'))} / "
                f"{metadata.get('max_predictions_per_seq')}"
            ),
        ),
        ("sentence pairs swapped (SOP label 1)", percent(metadata.get("sop_label_balance"))),
        (
            "masking",
            f"{metadata.get('masking')}, whole words, n-grams up to {metadata.get('ngram')}",
        ),
    ]
    parts = [table(rows, ("figure", "value"))]
    histogram = metadata.get("masked_ngram_histogram")
    if histogram:
        shares = {
            f"{n} word{'s' if n > 1 else ''}": 100 * share
            for n, share in enumerate(histogram, start=1)
        }
        image = plot_distribution(
            "Masked spans by length",
            shares,
            plots / "tfrecords-masked-ngrams.png",
            xlabel="share of masked spans (%)",
        )
        parts.append(f"![masked spans by length]({image.relative_to(run_dir).as_posix()})")
    return "\n\n".join(parts)


def truncation_rows(cut: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The row saying how much text the sequence length cut (metadata.json's `truncation`); none
    for data without the figure (NSP, or written before it was recorded)."""
    if not cut:
        return []
    return [
        (
            "corpus text cut by the sequence length",
            (
                f"{percent(cut['dropped_fraction'], 0)} of the tokens ({number(cut['dropped_tokens'])} of "
                f"{number(cut['corpus_tokens'])} over {cut['passes']} pass(es)) do not fit in sequences of "
                f"{cut['max_seq_length']} tokens; a longer --max-seq-length keeps more"
            ),
        )
    ]


def pretrain_section(run_dir: Path, facts: Mapping[str, Any], plots: Path) -> str:
    records = read_metrics(run_dir / "pretrain" / "metrics.jsonl")
    train = next((r for r in reversed(records) if r.get("split", "train") == "train"), {})
    rows = [
        ("model", f"{facts['preset']}, {millions(facts.get('parameters'))} parameters"),
        (
            "steps × batch",
            f"{number(facts.get('steps'))}{budget_note(facts)} × {facts.get('batch_size')} "
            "sequences",
        ),
        ("throughput", f"{number(facts.get('sequences_per_second'))} sequences/s"),
        (
            "last training batches: masked-LM / SOP accuracy",
            f"{number(train.get('masked_lm_accuracy'))} / {number(train.get('sop_accuracy'))}",
        ),
    ]
    parts = [table(rows, ("figure", "value"))]
    baseline = facts.get("baseline") or {}
    image = plot_curves(
        records,
        plots / "training-curves.png",
        baselines={"masked_lm_accuracy": baseline.get("masked_lm_accuracy"), "sop_accuracy": 0.5},
    )
    if image is not None:
        parts.append(
            f"![training curves: lines are training batches, points held-out documents]"
            f"({image.relative_to(run_dir).as_posix()})"
        )
    return "\n\n".join(parts)


def evaluation_section(models: Mapping[str, Mapping[str, Any]], baseline: Mapping[str, Any]) -> str:
    """Held-out metrics, a column per model ({"model": metrics}, or the base and the adapted one),
    and the baseline."""

    def row(label: str, key: str, reference: str) -> tuple[str, ...]:
        return (label, *(number(metrics.get(key)) for metrics in models.values()), reference)

    return table(
        [
            row(
                "masked-LM accuracy",
                "masked_lm_accuracy",
                number(baseline.get("masked_lm_accuracy")),
            ),
            row("masked-LM perplexity", "perplexity", "–"),
            row("sentence-order (SOP) accuracy", "sop_accuracy", "0.5"),
            row("SOP loss", "sop_loss", f"{0.6931:.3g} (chance)"),
        ],
        ("held-out metric", *models, "baseline"),
    )


def stage_section(
    run_dir: Path,
    facts: Mapping[str, Any],
    stages: tuple[str, ...],
    title: str,
    body: str,
    files: list[Path],
    heldout_list: Path | None = None,
) -> str:
    """One `## title` section: its stages' time, the body, links to the full figures that exist."""
    timings = [facts["stages"][stage] for stage in stages if stage in facts["stages"]]
    when = ""
    if timings:
        cached = all(t["cached"] for t in timings)
        when = f" — {duration(sum(t['seconds'] for t in timings))}{', cached' if cached else ''}"
    found = [link(run_dir, path) for path in files if path.exists()]
    links = f"Full figures: {', '.join(found)}" if found else ""
    if heldout_list is not None and heldout_list.is_file():
        links += f"; held-out documents: {link(run_dir, heldout_list)}"
    return f"## {title}{when}\n\n{body}\n\n{links}".rstrip()


def heldout_document_list(run_dir: Path, metadata: Mapping[str, Any]) -> Path:
    """tfrecords' list of the held-out documents (it may not exist)."""
    return run_dir / "tfrecords" / ((metadata.get("heldout") or {}).get("document_list") or "-")


def run_report_markdown(run_dir: Path, facts: Mapping[str, Any]) -> str:
    """The whole report (plots written to RUN_DIR/plots)."""
    plots = run_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    summaries = facts.get("summaries") or {}
    metadata = summaries.get("tfrecords") or {}
    parts = [f"# ALBERT pretraining run: `{run_dir.name}`", headline(facts)]
    parts += [
        stage_section(
            run_dir,
            facts,
            ("segment",),
            STAGE_TITLES["segment"],
            segment_section(run_dir, summaries.get("segment") or {}, plots),
            [run_dir / "segment" / "stats.json"],
        ),
        stage_section(
            run_dir,
            facts,
            ("vocab",),
            STAGE_TITLES["vocab"],
            vocab_section(summaries.get("vocab") or {}),
            [run_dir / "vocab" / "vocab_stats.json"],
        ),
        stage_section(
            run_dir,
            facts,
            ("tfrecords",),
            STAGE_TITLES["tfrecords"],
            tfrecords_section(run_dir, metadata, plots),
            [run_dir / "tfrecords" / "metadata.json"],
            heldout_document_list(run_dir, metadata),
        ),
        stage_section(
            run_dir,
            facts,
            ("pretrain",),
            STAGE_TITLES["pretrain"],
            pretrain_section(run_dir, facts, plots),
            [run_dir / "pretrain" / "metrics.jsonl"],
        ),
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
    return "\n\n".join(parts) + "\n"


def format_headline_line(facts: Mapping[str, Any]) -> str:
    """One line for the terminal: the final held-out scores beside their baselines (from the facts
    or the flow's summary: both have `evaluation` and `baseline`)."""
    heldout, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    return (
        f"held-out documents: masked-LM accuracy {format_value(heldout.get('masked_lm_accuracy'))} "
        f"(baseline {format_value(baseline.get('masked_lm_accuracy'))}), SOP accuracy "
        f"{format_value(heldout.get('sop_accuracy'))} (chance 0.5)"
    )
