"""The ablation tables: per-cell records -> one table per axis in the paper's layout, ablation.csv,
ablation.md with a line per table on whether the paper's direction holds, and bar charts.

Each row is a variant (mean ± sample standard deviation over its seeds): parameters, held-out
masked-LM accuracy (on the SOP data), SOP accuracy and NSP accuracy (the model's sentence-pair head
scored on held-out SOP and NSP pairs of documents no cell trained on), and for an RTD cell
(`--token-objective rtd`) the replaced-token accuracy beside them. An RTD cell's masked-LM figures
are its generator's, from the run's own held-out evaluation (its export, the discriminator, has an
untrained masked-LM head).
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from flows.report.render import markdown_table
from model.network.config import get_preset, parameter_counts

METRICS = ("masked_lm_accuracy", "sop_accuracy", "nsp_accuracy", "replaced_token_accuracy")
METRIC_LABELS = {
    "masked_lm_accuracy": "masked-LM acc",
    "sop_accuracy": "SOP acc",
    "nsp_accuracy": "NSP acc",
    "replaced_token_accuracy": "replaced-token acc",
}
AXES = {
    "objective": "Pretraining objective (paper Table 5)",
    "token_objective": "Token objective: masked-LM or replaced-token detection (ELECTRA)",
    "sharing": "Cross-layer sharing (paper Table 4)",
    "embedding_size": "Embedding size E (paper Table 3)",
}
CSV_COLUMNS = (
    "cell",
    "variant",
    "objective",
    "token_objective",
    "sharing",
    "embedding_size",
    "seed",
    "parameters",
    "steps",
    *METRICS,
    "masked_lm_loss",
    "cached",
)
PAPER = {
    "objective": "paper (ALBERT-base, 125k steps of 4,096): NSP-trained scores 52.0 on SOP, "
    "SOP-trained 78.9 on NSP "
    "and 86.5 on SOP",
    "sharing": "paper (ALBERT-base, E=128): all-shared costs 1.5 points (Avg) against not-shared; "
    "sharing attention "
    "costs nothing (+0.1), most of the drop comes from sharing the FFN",
    "embedding_size": "paper (ALBERT-base, all-shared): E=128 is the best of 64, 128, 256, 768",
    "token_objective": "ELECTRA (Clark et al. 2020): replaced-token detection beats masked-LM "
    "downstream at equal compute, most at small sizes; docs/measurements.md has it fine-tuned",
}


def cell_record(
    cell: Any, pretrain: Any, vocab_size: int, trained: Any, evaluations: Mapping[str, Any]
) -> dict[str, Any]:
    """One CSV row: the cell's axes, its parameter count, and its held-out scores (an RTD cell's
    masked-LM and replaced-token ones from its run's own held-out evaluation)."""

    sop, nsp = evaluations["heldout-sop"].result, evaluations["heldout-nsp"].result
    token_objective = getattr(cell, "token_objective", "mlm")
    own = (trained.result.get("heldout") or {}) if token_objective == "rtd" else {}
    masked_lm = own if token_objective == "rtd" else sop
    architecture = get_preset(
        pretrain.preset, **{**pretrain.architecture, "vocab_size": vocab_size}
    )
    parameters = parameter_counts(architecture)["pretraining"]
    return {
        "cell": cell.name,
        "variant": cell.variant,
        "objective": cell.objective,
        "token_objective": token_objective,
        "sharing": cell.sharing,
        "embedding_size": cell.embedding_size,
        "seed": cell.seed,
        "parameters": parameters,
        "steps": trained.result.get("steps"),
        "masked_lm_accuracy": masked_lm.get("masked_lm_accuracy"),
        "sop_accuracy": sop["sop_accuracy"],
        "nsp_accuracy": nsp["sop_accuracy"],
        "replaced_token_accuracy": own.get("replaced_token_accuracy"),
        "masked_lm_loss": masked_lm.get("masked_lm_loss"),
        "cached": trained.cached,
    }


def summarize_variants(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant, in first-seen order: the mean and spread of each metric over seeds."""
    variants: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        variants.setdefault(record["variant"], []).append(record)
    rows = []
    for runs in variants.values():
        row: dict[str, Any] = {
            key: runs[0][key]
            for key in ("variant", "objective", "sharing", "embedding_size", "parameters")
        }
        row["token_objective"] = runs[0].get("token_objective") or "mlm"
        row["seeds"] = len(runs)
        for metric in METRICS:  # a metric a cell does not have (an MLM cell's RTD) is None
            values = [float(run[metric]) for run in runs if run.get(metric) is not None]
            row[metric] = statistics.fmean(values) if values else None
            row[f"{metric}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
        rows.append(row)
    return rows


def axis_rows(rows: Sequence[Mapping[str, Any]], axis: str) -> list[Mapping[str, Any]]:
    """The baseline (first row) and the variants that differ from it in `axis` alone."""
    if not rows:
        return []
    base = rows[0]
    others = [k for k in AXES if k != axis]
    selected = [row for row in rows if all(row[k] == base[k] for k in others)]
    return selected if len({row[axis] for row in selected}) > 1 else []


def _with_spread(row: Mapping[str, Any], metric: str) -> str:
    mean, spread = row[metric], row[f"{metric}_sd"]
    if mean is None:
        return "—"
    return f"{mean:.3f} ± {spread:.3f}" if row["seeds"] > 1 else f"{mean:.3f}"


def _value(rows: Sequence[Mapping[str, Any]], axis: str, value: Any) -> Mapping[str, Any] | None:
    return next((row for row in rows if row[axis] == value), None)


def _compare(higher: Mapping[str, Any], lower: Mapping[str, Any], metric: str) -> tuple[bool, bool]:
    """(the means are ordered as claimed, the gap exceeds the larger seed spread)."""
    gap = higher[metric] - lower[metric]
    return gap > 0, gap > max(higher[f"{metric}_sd"], lower[f"{metric}_sd"])


def _verdict(claims: list[tuple[str, bool, bool]]) -> str:
    parts = []
    for text, ordered, clear in claims:
        status = (
            "holds"
            if ordered and clear
            else "holds within the seeds' spread"
            if ordered
            else "does not hold"
        )
        parts.append(f"{text}: {status}")
    return "; ".join(parts)


def direction(axis: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """Whether the paper's direction for `axis` shows in `rows` (that axis's table)."""
    if axis == "objective":
        sop, nsp = _value(rows, axis, "sop"), _value(rows, axis, "nsp")
        if not (sop and nsp):
            return "needs both objectives"
        return _verdict(
            [
                (
                    (
                        "NSP training does not solve SOP (SOP acc of the SOP-trained model above "
                        "the "
                        "NSP-trained one)"
                    ),
                    *_compare(sop, nsp, "sop_accuracy"),
                ),
                (
                    "SOP training transfers to NSP (its NSP acc above chance, 0.5)",
                    sop["nsp_accuracy"] > 0.5,
                    sop["nsp_accuracy"] - 0.5 > sop["nsp_accuracy_sd"],
                ),
            ]
        )
    if axis == "token_objective":
        return (
            "no held-out claim to check: ELECTRA's is downstream, and an RTD cell's masked-LM acc "
            "is its smaller generator's"
        )
    if axis == "sharing":
        claims = []
        none, shared = _value(rows, axis, "none"), _value(rows, axis, "all")
        attention, ffn = _value(rows, axis, "attention"), _value(rows, axis, "ffn")
        if none and shared:
            claims.append(
                (
                    "not-shared beats all-shared on masked-LM acc",
                    *_compare(none, shared, "masked_lm_accuracy"),
                )
            )
        if attention and ffn:
            claims.append(
                (
                    "sharing attention costs less than sharing the FFN",
                    *_compare(attention, ffn, "masked_lm_accuracy"),
                )
            )
        return _verdict(claims) if claims else "needs none + all, or attention + ffn"
    best = max(rows, key=lambda row: row["masked_lm_accuracy"])
    if not any(row["embedding_size"] == 128 for row in rows):
        return f"E=128 not in the grid; best masked-LM acc at E={best['embedding_size']}"
    runner_up = max(
        (row for row in rows if row is not best), key=lambda row: row["masked_lm_accuracy"]
    )
    is_128 = best["embedding_size"] == 128
    return _verdict(
        [
            (
                f"E=128 is best (best here: E={best['embedding_size']})",
                is_128,
                is_128 and _compare(best, runner_up, "masked_lm_accuracy")[1],
            )
        ]
    )


def axis_table(rows: Sequence[Mapping[str, Any]], axis: str) -> str:
    table_rows = [
        {
            "variant": row["variant"],
            "parameters": row["parameters"],
            "seeds": row["seeds"],
            **{METRIC_LABELS[m]: _with_spread(row, m) for m in METRICS},
        }
        for row in rows
    ]
    return markdown_table(table_rows, ["variant", "parameters", "seeds", *METRIC_LABELS.values()])


def plot_axis(rows: Sequence[Mapping[str, Any]], axis: str, path: Path) -> Path:
    """Grouped horizontal bars: one group per variant, one bar per metric, seed spread as error
    bars (matplotlib's Agg backend: `flows.report.render` selects it)."""
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.9 * len(rows)))
    height = 0.8 / len(METRICS)
    for i, metric in enumerate(METRICS):
        positions = [r + i * height for r in range(len(rows))]
        ax.barh(
            positions,
            [row[metric] or 0.0 for row in rows],
            height,
            xerr=[row[f"{metric}_sd"] for row in rows],
            label=METRIC_LABELS[metric],
        )
    ax.set_yticks([r + height for r in range(len(rows))], [row["variant"] for row in rows])
    ax.axvline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("held-out accuracy (documents no model trained on)")
    ax.set_xlim(0, 1)
    ax.set_title(AXES[axis])
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_ablation_report(
    config: Any, records: Sequence[Mapping[str, Any]]
) -> dict[str, Path] | None:
    """RUN_DIR/ablation.csv (one row per cell and seed), ablation.md and plots/ablation-*.png."""
    if "://" in config.run_dir:
        return None
    run_dir = Path(config.run_dir)
    (run_dir / "plots").mkdir(parents=True, exist_ok=True)
    with open(run_dir / "ablation.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows({k: record.get(k) for k in CSV_COLUMNS} for record in records)
    rows = summarize_variants(records)
    steps = records[0]["steps"] if records else None
    lines = [
        "# ALBERT ablations",
        "",
        (
            f"Preset `{config.preset}`, {steps} steps of {config.batch_size} sequences of "
            f"{config.max_seq_length} "
            f"tokens, {config.seeds} seed(s) per variant; held-out scores on documents no model "
            "trained on. "
            "Per-cell figures: `ablation.csv` and `cells/<cell>/heldout-{sop,nsp}/metrics.json`."
        ),
        "",
    ]
    for axis, title in AXES.items():
        selected = axis_rows(rows, axis)
        if not selected:
            continue
        plot = plot_axis(selected, axis, run_dir / "plots" / f"ablation-{axis}.png")
        lines += [
            f"## {title}",
            "",
            axis_table(selected, axis),
            "",
            f"Direction: {direction(axis, selected)}. ({PAPER[axis]}.)",
            "",
            f"![{title}]({plot.relative_to(run_dir).as_posix()})",
            "",
        ]
    markdown = run_dir / "ablation.md"
    markdown.write_text("\n".join(lines), encoding="utf-8")
    return {"markdown": markdown, "csv": run_dir / "ablation.csv"}
