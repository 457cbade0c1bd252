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
    "accuracy": "accuracy", "f1": "F1", "mcc": "Matthews correlation", "pearson": "Pearson correlation",
    "spearman": "Spearman correlation", "exact": "exact match",
}
STAGE_TITLES = {
    "segment": "Segment: raw text to sentences", "vocab": "Vocabulary: SentencePiece",
    "tfrecords": "TFRecords: pretraining instances", "pretrain": "Pretraining", "heldout": "Held-out evaluation",
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
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def link(run_dir: Path, path: Path, text: str | None = None) -> str:
    relative = path.relative_to(run_dir).as_posix()
    return f"[{text or relative}]({relative})"


def headline(facts: Mapping[str, Any]) -> str:
    """The block a person reads first: in, out, held-out scores beside baselines, time, next command."""
    heldout, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    scores = table([
        ("masked-LM accuracy", f"**{number(heldout.get('masked_lm_accuracy'))}**",
         (f"{number(baseline.get('masked_lm_accuracy'))} (always the most frequent piece, "
         f"`{baseline.get('piece', '?')}`)")),
        ("sentence-order (SOP) accuracy", f"**{number(heldout.get('sop_accuracy'))}**", "0.5 (chance)"),
    ], ("held-out score", "this model", "baseline"))
    stages = ", ".join(
        f"{name} {duration(t['seconds'])}{' (cached)' if t['cached'] else ''}" for name, t in facts["stages"].items())
    lines = [
        (f"**In:** {facts['inputs']} → {number(facts.get('documents'))} documents, "
        f"{number(facts.get('sentences'))} sentences, {number(facts.get('tokens'))} tokens "
        f"({number(facts.get('vocab_size'))}-piece vocabulary)"),
        (f"**Out:** {facts['preset']}, {millions(facts.get('parameters'))} parameters, trained "
        f"{number(facts.get('steps'))} steps × {facts.get('batch_size')} sequences of {facts.get('max_seq_length')} "
        f"tokens → `{facts['export']}` (Hugging Face: `{facts['export_hf']}`)"),
        (f"**Held out:** {number(facts.get('heldout_documents'))} whole documents the model never trained on "
        f"({number(facts.get('heldout_sequences'))} sequences scored)"),
        scores,
        (f"**Time:** {duration(facts.get('wall_seconds'))} wall, {duration(facts.get('cpu_seconds'))} CPU "
        f"— {stages}"),
    ]
    lines += [f"**Kept:** the previous `{name}` output (another training run) was moved aside to `{path}`, "
              "not deleted." for name, path in (facts.get("moved_aside") or {}).items()]
    if facts.get("downstream"):
        lines.append(downstream_table(facts["downstream"]))
    lines.append("**Next:** fine-tune it on a task (any task `albert finetune` knows):\n\n"
                 f"```bash\n{facts['next_command']}\n```")
    return "\n\n".join(lines)


def finetune_command(run_dir: str, task: str = "sst2", data_dir: str = "../shared/data/glue/SST-2") -> str:
    return " ".join([
        "albert finetune", "--task", task, "--data-dir", shlex.quote(data_dir),
        "--init", shlex.quote(f"{run_dir}/pretrain/export/model.keras"),
        "--spm-model", shlex.quote(f"{run_dir}/vocab/spiece.model"),
        "--output", shlex.quote(f"{run_dir}/finetune-{task}")])


def downstream_table(results: list[Mapping[str, Any]]) -> str:
    """Pretrained vs randomly initialised twin, per task, under the metric's official name."""
    rows = []
    for result in results:
        metric = result["metric"]
        pretrained, random = result["pretrained"].get(metric), result["random"].get(metric)
        gain = pretrained - random if isinstance(pretrained, float) and isinstance(random, float) else None
        rows.append((result["task"], METRIC_NAMES.get(metric, metric), f"**{number(pretrained)}**", number(random),
                     f"{gain:+.3f}" if gain is not None else "–", number(result.get("steps"))))
    return "**Downstream (dev set, same budget and seed):**\n\n" + table(
        rows, ("task", "metric", "pretrained", "random init", "gain", "fine-tuning steps"))


def segment_section(run_dir: Path, stats: Mapping[str, Any], plots: Path) -> str:
    skipped = {k.replace("_", " "): v for k, v in (stats.get("skipped") or {}).items() if v}
    rows = [
        ("input files read", number(stats.get("files_read"))),
        ("documents in → kept", f"{number(stats.get('documents_in'))} → {number(stats.get('documents_out'))}"),
        ("documents skipped", ", ".join(f"{k} {number(v)}" for k, v in skipped.items()) or "none"),
        ("characters in → kept", f"{number(stats.get('characters_in'))} → {number(stats.get('characters_out'))}"),
        ("sentences kept", number(stats.get("sentences_out"))),
        ("duplicate paragraphs removed", number(stats.get("paragraphs_duplicate"))),
        ("bad files", number(len(stats.get("bad_files") or []))),
    ]
    parts = [table(rows, ("figure", "value"))]
    if len(skipped) >= 2:
        image = plot_distribution("Documents skipped, by reason", skipped, plots / "segment-skipped.png",
                                  xlabel="documents")
        parts.append(f"![documents skipped by reason]({image.relative_to(run_dir).as_posix()})")
    return "\n\n".join(parts)


def vocab_section(stats: Mapping[str, Any]) -> str:
    return table([
        ("vocabulary size", f"{number(stats.get('vocab_size'))} pieces"),
        ("sentences sampled to train it", (f"{number(stats.get('sample_sentences'))} of "
                                          f"{number(stats.get('corpus_sentences'))}")),
        ("unknown pieces on held-out sentences", percent(stats.get("unk_rate"), 3)),
        ("pieces per word (held-out)", number(stats.get("pieces_per_word"))),
        ("training time", duration(stats.get("training_seconds"))),
    ], ("figure", "value"))


def tfrecords_section(run_dir: Path, metadata: Mapping[str, Any], plots: Path) -> str:
    counts, heldout = metadata.get("counts") or {}, metadata.get("heldout") or {}
    instances = counts.get("instances", 0)
    rows = [
        ("documents (training + held out)", (f"{number(counts.get('documents'))} "
                                             f"({number(heldout.get('documents'))} held out whole)")),
        ("sequences (training + held out)", f"{number(instances)} ({number(heldout.get('instances'))} held out)"),
        ("passes with different masks (dupe factor)", number(metadata.get("dupe_factor"))),
        ("tokens per sequence (mean / max)", (f"{number(metadata.get('mean_tokens_per_instance'))} / "
                                             f"{metadata.get('max_seq_length')}")),
        *truncation_rows(metadata.get("truncation")),
        ("masked pieces per sequence (mean / max)", (f"{number(metadata.get('mean_predictions_per_instance'))} / "
                                                    f"{metadata.get('max_predictions_per_seq')}")),
        ("sentence pairs swapped (SOP label 1)", percent(metadata.get("sop_label_balance"))),
        ("masking", f"{metadata.get('masking')}, whole words, n-grams up to {metadata.get('ngram')}"),
    ]
    parts = [table(rows, ("figure", "value"))]
    histogram = metadata.get("masked_ngram_histogram")
    if histogram:
        shares = {f"{n} word{'s' if n > 1 else ''}": 100 * share for n, share in enumerate(histogram, start=1)}
        image = plot_distribution("Masked spans by length", shares, plots / "tfrecords-masked-ngrams.png",
                                  xlabel="share of masked spans (%)")
        parts.append(f"![masked spans by length]({image.relative_to(run_dir).as_posix()})")
    return "\n\n".join(parts)


def truncation_rows(cut: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The row saying how much text the sequence length cut (metadata.json's `truncation`); none
    for data without the figure (NSP, or written before it was recorded)."""
    if not cut:
        return []
    return [("corpus text cut by the sequence length", (
        f"{percent(cut['dropped_fraction'], 0)} of the tokens ({number(cut['dropped_tokens'])} of "
        f"{number(cut['corpus_tokens'])} over {cut['passes']} pass(es)) do not fit in sequences of "
        f"{cut['max_seq_length']} tokens; a longer --max-seq-length keeps more"))]


def pretrain_section(run_dir: Path, facts: Mapping[str, Any], plots: Path) -> str:
    records = read_metrics(run_dir / "pretrain" / "metrics.jsonl")
    train = next((r for r in reversed(records) if r.get("split", "train") == "train"), {})
    rows = [
        ("model", f"{facts['preset']}, {millions(facts.get('parameters'))} parameters"),
        ("steps × batch", f"{number(facts.get('steps'))} × {facts.get('batch_size')} sequences"),
        ("throughput", f"{number(facts.get('sequences_per_second'))} sequences/s"),
        ("last training batches: masked-LM / SOP accuracy",
         f"{number(train.get('masked_lm_accuracy'))} / {number(train.get('sop_accuracy'))}"),
    ]
    parts = [table(rows, ("figure", "value"))]
    baseline = facts.get("baseline") or {}
    image = plot_curves(records, plots / "training-curves.png",
                        baselines={"masked_lm_accuracy": baseline.get("masked_lm_accuracy"), "sop_accuracy": 0.5})
    if image is not None:
        parts.append(f"![training curves: lines are training batches, points held-out documents]"
                     f"({image.relative_to(run_dir).as_posix()})")
    return "\n\n".join(parts)


def evaluation_section(heldout: Mapping[str, Any], baseline: Mapping[str, Any]) -> str:
    return table([
        ("masked-LM accuracy", number(heldout.get("masked_lm_accuracy")), number(baseline.get("masked_lm_accuracy"))),
        ("masked-LM perplexity", number(heldout.get("perplexity")), "–"),
        ("sentence-order (SOP) accuracy", number(heldout.get("sop_accuracy")), "0.5"),
        ("SOP loss", number(heldout.get("sop_loss")), f"{0.6931:.3g} (chance)"),
    ], ("held-out metric", "model", "baseline"))


def run_report_markdown(run_dir: Path, facts: Mapping[str, Any]) -> str:
    """The whole report (plots written to RUN_DIR/plots)."""
    plots = run_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    summaries = facts.get("summaries") or {}
    metadata = summaries.get("tfrecords") or {}
    sections = [
        ("segment", segment_section(run_dir, summaries.get("segment") or {}, plots), run_dir / "segment" / "stats.json"),
        ("vocab", vocab_section(summaries.get("vocab") or {}), run_dir / "vocab" / "vocab_stats.json"),
        ("tfrecords", tfrecords_section(run_dir, metadata, plots), run_dir / "tfrecords" / "metadata.json"),
        ("pretrain", pretrain_section(run_dir, facts, plots), run_dir / "pretrain" / "metrics.jsonl"),
        ("heldout", evaluation_section(facts.get("evaluation") or {}, facts.get("baseline") or {}),
         run_dir / "heldout" / "metrics.json"),
    ]
    parts = [f"# ALBERT pretraining run: `{run_dir.name}`", headline(facts)]
    for stage, body, source in sections:
        timing = facts["stages"].get(stage)
        when = f" — {duration(timing['seconds'])}{', cached' if timing['cached'] else ''}" if timing else ""
        links = f"Full figures: {link(run_dir, source)}" if source.exists() else ""
        if stage == "tfrecords":
            listed = source.parent / ((metadata.get("heldout") or {}).get("document_list") or "-")
            if listed.is_file():
                links += f"; held-out documents: {link(run_dir, listed)}"
        parts.append(f"## {STAGE_TITLES[stage]}{when}\n\n{body}\n\n{links}".rstrip())
    if facts.get("downstream"):
        parts.append("## Downstream fine-tuning\n\nThe headline's table; full results: " + ", ".join(
            link(run_dir, run_dir / output / "results.json")
            for r in facts["downstream"] for output in (r["pretrained_output"], r["random_output"])))
    return "\n\n".join(parts) + "\n"


def format_headline_line(facts: Mapping[str, Any]) -> str:
    """One line for the terminal: the final held-out scores beside their baselines (from the facts
    or the flow's summary: both have `evaluation` and `baseline`)."""
    heldout, baseline = facts.get("evaluation") or {}, facts.get("baseline") or {}
    return (f"held-out documents: masked-LM accuracy {format_value(heldout.get('masked_lm_accuracy'))} "
            f"(baseline {format_value(baseline.get('masked_lm_accuracy'))}), SOP accuracy "
            f"{format_value(heldout.get('sop_accuracy'))} (chance 0.5)")
