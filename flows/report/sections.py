"""One report section per stage (segment, vocab, tfrecords, pretrain, held-out evaluation),
shared by the pretraining and domain-adaptive reports: curated tables and plots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from albert.vocabulary_record import Preprocessing
from flows.report.data_quality import (
    near_duplicate_examples,
    near_duplicate_figure,
    quality_section,
)
from flows.report.render import plot_curves, plot_distribution, read_metrics
from flows.report.text import budget_note, duration, link, millions, number, percent, table

STAGE_TITLES = {
    "segment": "Segment: raw text to sentences",
    "decontaminate": "Decontamination: evaluation sets in the corpus",
    "vocab": "Vocabulary: SentencePiece",
    "tfrecords": "TFRecords: pretraining instances",
    "pretrain": "Pretraining",
    "heldout": "Held-out evaluation",
}


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
        ("near-duplicate documents removed", near_duplicate_figure(stats.get("near_duplicates"))),
        ("bad files", number(len(stats.get("bad_files") or []))),
    ]
    parts = [table(rows, ("figure", "value")), quality_section(stats)]
    examples = near_duplicate_examples(run_dir / "segment")
    if examples:
        parts.append(examples)
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
    recorded = stats.get("preprocessing")
    counts = stats.get("corpus_counts") or {}
    preprocessing = []
    if isinstance(recorded, dict):  # vocabularies written before the record have none
        record = Preprocessing(**recorded)
        language = f"language {record.language or 'not given'}"
        preprocessing.append(("text preprocessing", f"{language}: {record.describe()}"))
    if counts.get("sentences_accents_stripped"):
        stripped, sentences = counts["sentences_accents_stripped"], counts["sentences"]
        share = f"{number(stripped)} of {number(sentences)}: pass --language"
        preprocessing.append(("sentences whose accents were stripped", share))
    return table(
        [
            ("vocabulary size", f"{number(stats.get('vocab_size'))} pieces"),
            *preprocessing,
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
                f"{percent(cut['dropped_fraction'], 0)} of the tokens "
                f"({number(cut['dropped_tokens'])} of {number(cut['corpus_tokens'])} over "
                f"{cut['passes']} pass(es)) do not fit in sequences of "
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
            (
                f"{number(facts.get('steps'))}{budget_note(facts)} × {facts.get('batch_size')} "
                "sequences"
            ),
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


def plots_dir(run_dir: Path) -> Path:
    """RUN_DIR/plots, made if missing: where a report's plots go."""
    plots = run_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    return plots


def segment_stage(run_dir: Path, facts: Mapping[str, Any], title: str) -> str:
    """The segment stage's section (its plots written to RUN_DIR/plots)."""
    stats = (facts.get("summaries") or {}).get("segment") or {}
    body = segment_section(run_dir, stats, plots_dir(run_dir))
    return stage_section(
        run_dir, facts, ("segment",), title, body, [run_dir / "segment" / "stats.json"]
    )


def tfrecords_stage(run_dir: Path, facts: Mapping[str, Any], title: str) -> str:
    """The tfrecords stage's section (its plots written to RUN_DIR/plots)."""
    metadata = (facts.get("summaries") or {}).get("tfrecords") or {}
    return stage_section(
        run_dir,
        facts,
        ("tfrecords",),
        title,
        tfrecords_section(run_dir, metadata, plots_dir(run_dir)),
        [run_dir / "tfrecords" / "metadata.json"],
        heldout_document_list(run_dir, metadata),
    )


def pretrain_stage(run_dir: Path, facts: Mapping[str, Any], title: str) -> str:
    """The pretrain stage's section (its plots written to RUN_DIR/plots)."""
    body = pretrain_section(run_dir, facts, plots_dir(run_dir))
    return stage_section(
        run_dir, facts, ("pretrain",), title, body, [run_dir / "pretrain" / "metrics.jsonl"]
    )


def optional_stage(
    run_dir: Path, facts: Mapping[str, Any], name: str, title: str, body, stats_file: str
) -> list[str]:
    """[stage `name`'s section, `body(summary)` under `title`] where the run ran it (its summary
    is in the facts), else []."""
    summary = (facts.get("summaries") or {}).get(name)
    if not summary:
        return []
    return [
        stage_section(run_dir, facts, (name,), title, body(summary), [run_dir / name / stats_file])
    ]
