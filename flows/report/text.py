"""The reports' words and tables: numbers, durations and sizes formatted for people, the
sentences and tables both run reports share, the fine-tuning command and its results table."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

METRIC_NAMES = {  # the official names of the fine-tuning tasks' primary metrics
    "accuracy": "accuracy",
    "f1": "F1",
    "mcc": "Matthews correlation",
    "pearson": "Pearson correlation",
    "spearman": "Spearman correlation",
    "exact": "exact match",
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
        "sequences of "
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


SHORT_FINETUNE_STEPS = 300
"""The steps of the fine-tune a run's report suggests: minutes on a CPU for the demo's model."""


def finetune_command(
    model: str,
    spm_model: str,
    run_dir: str,
    task: str = "sst2",
    data_dir: str = "../shared/data/glue/SST-2",
    train_steps: int | None = None,
    max_seq_length: int | None = None,
) -> str:
    """`albert finetune` of `model` on a task, written to RUN_DIR/finetune-TASK; `train_steps` and
    `max_seq_length` replace the paper's recipe (Table 14) when given."""
    short = [
        *(["--train-steps", str(train_steps)] if train_steps else []),
        *(["--max-seq-length", str(max_seq_length)] if max_seq_length else []),
    ]
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
            *short,
        ]
    )


def short_finetune_text(train_steps: int, max_seq_length: int, task: str = "sst2") -> str:
    """What the report says of its short fine-tune, with the paper's recipe beside it."""
    from model.tasks import get_task  # the task registry only: no Keras

    recipe = get_task(task).defaults
    return (
        f"fine-tune it on a task (any task `albert finetune` knows): {number(train_steps)} steps "
        f"at the run's length, {max_seq_length}, minutes on a CPU for a model this size. For a "
        f"real model, the paper's recipe (Table 14; {task}: {number(recipe.train_steps)} steps at "
        f"length {recipe.max_seq_length}, hours on a GPU) is the same command without "
        "`--train-steps` and `--max-seq-length`"
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


def per_class_tables(results: list[Mapping[str, Any]]) -> list[str]:
    """Per downstream task with a per-class table (a user's classification task): each class's
    F1 of the pretrained model and of the random twin, the pretrained model's precision and
    recall, and the class's dev rows."""
    tables = []
    for result in results:
        pretrained = (result.get("pretrained_details") or {}).get("per_class")
        if not pretrained:
            continue
        random = (result.get("random_details") or {}).get("per_class") or {}
        rows = [
            (
                name,
                f"**{number(scores['f1'])}**",
                number(random.get(name, {}).get("f1")),
                number(scores["precision"]),
                number(scores["recall"]),
                number(scores["support"]),
            )
            for name, scores in pretrained.items()
        ]
        columns = ("class", "F1", "F1, random init", "precision", "recall", "dev rows")
        tables.append(f"**{result['task']}, per class (dev set):**\n\n" + table(rows, columns))
    return tables


def distilled_table(results: list[Mapping[str, Any]]) -> str:
    """`--distill`'s students beside their teachers (the pretrained fine-tunes), per task: dev
    score, parameters, FLOPs per token, CPU sequences/s at batch 1 and 32 (empty: no --distill)."""
    rows = []
    for result in results:
        if "distilled" not in result:
            continue
        metric, facts = result["metric"], result["distilled"]
        for name in ("teacher", "student"):
            side = facts["distillation"][name]
            rates = side.get("sequences_per_second") or {}
            rows.append(
                (
                    result["task"],
                    name,
                    number(side["dev"].get(metric)),
                    f"{side['parameters']:,}",
                    f"{side['flops_per_token']:,}",
                    number(rates.get("1")),
                    number(rates.get("32")),
                )
            )
    if not rows:
        return ""
    head = ("task", "model", "dev", "parameters", "FLOPs/token", "seq/s at 1", "seq/s at 32")
    return "**Distilled (albert distill, dev set):**\n\n" + table(rows, head)


def predicted_table(results: list[Mapping[str, Any]]) -> str:
    """`--predict`'s predictions by each pretrained fine-tune, per task: rows, the predicted label
    distribution, the share under the confidence bound, rows/s (empty: no --predict)."""
    rows = []
    for result in results:
        if "predicted" not in result:
            continue
        facts = result["predicted"]
        predicted = facts.get("predicted") or 0
        labels = facts.get("labels") or {}
        distribution = ", ".join(
            f"{label} {count / predicted:.1%}" for label, count in sorted(labels.items())
        )
        below = facts.get("below_confidence_bound", 0) / predicted if predicted else 0.0
        rows.append(
            (
                result["task"],
                f"{predicted:,}",
                distribution or "–",
                f"{below:.1%} (< {facts.get('confidence_bound')})",
                number(facts.get("rows_per_second")),
            )
        )
    if not rows:
        return ""
    head = ("task", "rows", "predicted labels", "under the confidence bound", "rows/s")
    return "**Predictions (albert predict on --predict's files):**\n\n" + table(rows, head)
