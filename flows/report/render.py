"""What the run reports are drawn and published with: tables, PNG plots, HTML, Prefect artifacts.

flows.pipeline.report and flows.domain.report curate the stages' own summaries into report.md; this
module renders: count distributions (histograms, label balance, scores side by side) become bar
charts, the training log (metrics.jsonl) becomes curves, the markdown becomes a standalone HTML page
and a Prefect markdown artifact, training progress a Prefect progress artifact.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import math
import mimetypes
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import markdown
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

logger = logging.getLogger(__name__)

CURVE_KEYS = (
    "loss",
    "masked_lm_loss",
    "masked_lm_accuracy",
    "sop_loss",
    "sop_accuracy",
    "learning_rate",
)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: Iterable[Mapping[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(format_value(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def _sort_labels(mapping: Mapping[str, Any]) -> list[tuple[str, float]]:
    def order(item: tuple[str, Any]) -> tuple[int, float | str]:
        try:
            return (0, float(item[0]))
        except ValueError:
            return (1, item[0])

    return sorted(((str(k), float(v)) for k, v in mapping.items()), key=order)


def plot_distribution(
    name: str, mapping: Mapping[str, Any], path: Path, xlabel: str = "count", ordered: bool = False
) -> Path:
    """A horizontal bar chart of one count distribution: labels on the left, values on the bars;
    sorted by label (numbers by value) unless `ordered` keeps the mapping's order."""
    items = [(str(k), float(v)) for k, v in mapping.items()] if ordered else _sort_labels(mapping)
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.32 * len(items)))
    labels, values = [label for label, _ in items], [count for _, count in items]
    bars = ax.barh(labels, values, color="#4C72B0")
    ax.invert_yaxis()  # first label on top
    ax.bar_label(
        bars,
        labels=[format_value(int(v) if float(v).is_integer() else v) for v in values],
        padding=3,
        fontsize=8,
    )
    ax.set_title(name)
    ax.set_xlabel(xlabel)
    ax.margins(x=0.15)
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_confusion(name: str, matrix: list[list[int]], labels: list[str], path: Path) -> Path:
    """A confusion matrix as a picture: gold classes down, predicted across, each cell's count
    written on it, darker for more."""
    size = 1.6 + 0.45 * len(labels)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    ax.imshow(matrix, cmap="Blues")
    ticks = range(len(labels))
    ax.set_xticks(ticks, labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(ticks, labels, fontsize=8)
    peak = max((max(row) for row in matrix), default=0)
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            color = "white" if peak and count > peak / 2 else "black"
            ax.text(j, i, str(count), ha="center", va="center", fontsize=8, color=color)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    ax.set_title(name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file (one JSON object per line); empty if it does not
    exist."""
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


CURVE_LABELS = {
    "loss": "total loss",
    "masked_lm_loss": "masked-LM loss",
    "masked_lm_accuracy": "masked-LM accuracy",
    "sop_loss": "sentence-order loss",
    "sop_accuracy": "sentence-order accuracy",
    "learning_rate": "learning rate",
}


def plot_curves(
    records: list[Mapping[str, Any]],
    path: Path,
    step_key: str = "step",
    baselines: Mapping[str, float] | None = None,
) -> Path | None:
    """Training curves: one panel per known metric, the training log as a line and held-out
    evaluations (records with split="heldout") as points, against the step; `baselines` draws a
    dashed line per metric (e.g. the unigram baseline of masked-LM accuracy)."""
    keys = [k for k in CURVE_KEYS if any(_is_number(r.get(k)) for r in records)]
    if not keys:
        return None
    columns = min(3, len(keys))
    rows = math.ceil(len(keys) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for split, style, label in (
            ("train", "-", "training batches"),
            ("heldout", "o", "held-out documents"),
        ):
            points = [
                (r.get(step_key, i), r[key])
                for i, r in enumerate(records)
                if _is_number(r.get(key)) and r.get("split", "train") == split
            ]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], style, label=label)
        if baselines and _is_number(baselines.get(key)):
            ax.axhline(baselines[key], linestyle="--", color="grey", label="baseline")
        ax.set_title(CURVE_LABELS.get(key, key))
        ax.set_xlabel("training step")
        ax.set_ylabel(CURVE_LABELS.get(key, key))
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
INLINE_IMAGE_BYTES = 2**20
"""A report's image up to this size is part of its Prefect artifact; a larger one stays a link."""


def inline_images(markdown_text: str, root: Path | None) -> str:
    """The report with each image it shows from `root` (`![alt](plots/x.png)`) as a data: URI: a
    Prefect artifact is shown apart from the run directory, where a relative link leads nowhere
    (Prefect's UI draws the data: URI)."""
    if root is None:
        return markdown_text

    def inline(match: re.Match) -> str:
        alt, src = match.groups()
        path = root / src
        if ":" in src or not path.is_file() or path.stat().st_size > INLINE_IMAGE_BYTES:
            return match.group(0)
        kind = mimetypes.guess_type(path.name)[0] or "image/png"
        return f"![{alt}](data:{kind};base64,{base64.b64encode(path.read_bytes()).decode()})"

    return _IMAGE.sub(inline, markdown_text)


def publish_report(
    key: str,
    markdown: str,
    evaluation: Mapping[str, Mapping[str, Any]] | None,
    root: Path | None = None,
) -> None:
    """Publish the report as a Prefect markdown artifact (its images from `root` inlined) and the
    evaluation as a table artifact."""

    create_markdown_artifact(
        markdown=inline_images(markdown, root), key=_slug(key) + "-report", description="run report"
    )
    if evaluation:
        table = [
            {"model": name, **{k: v for k, v in row.items() if _is_number(v)}}
            for name, row in evaluation.items()
        ]
        create_table_artifact(table=table, key=_slug(key) + "-evaluation", description="evaluation")


class TrainingProgress:
    """An `on_metrics` callback that shows training in Prefect: a progress artifact and a table.

    Updates are throttled to one every `interval` seconds (and always at the last step). With
    `total_seconds` (a time budget) the progress is the records' training_seconds against it.
    """

    def __init__(
        self,
        key: str,
        total_steps: int,
        interval: float = 5.0,
        total_seconds: float | None = None,
    ) -> None:

        self.key = _slug(key)
        self.total_steps = max(1, total_steps)
        self.interval, self.total_seconds = interval, total_seconds
        self.rows: list[dict[str, Any]] = []
        self._last_update = 0.0
        self._progress_id = create_progress_artifact(
            progress=0.0, key=f"{self.key}-progress", description="pretraining progress (%)"
        )

    def __call__(self, metrics: Mapping[str, Any]) -> None:

        row = {k: v for k, v in metrics.items() if _is_number(v)}
        self.rows.append(row)
        step = int(row.get("step", len(self.rows)))
        now = time.monotonic()
        if now - self._last_update < self.interval and step < self.total_steps:
            return
        self._last_update = now
        done = step / self.total_steps
        if self.total_seconds:
            done = row.get("training_seconds", 0.0) / self.total_seconds
        update_progress_artifact(self._progress_id, progress=min(100.0, 100.0 * done))
        create_table_artifact(
            table=self.rows[-20:], key=f"{self.key}-metrics", description="latest training metrics"
        )


HTML_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;"
    "padding:0 1rem;color:#222}\n"
    "table{border-collapse:collapse;margin:.5rem 0}"
    "th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}\n"
    "th{background:#f3f3f3}img{max-width:100%}code,pre{background:#f6f6f6}"
    "pre{padding:.6rem;overflow-x:auto}"
)


def render_html(markdown_text: str, title: str) -> str:
    """The report as a standalone HTML page (the `markdown` package: tables, fenced code)."""

    body = markdown.markdown(markdown_text, extensions=["tables", "fenced_code"])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta '
        f'charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{HTML_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def write_report(
    run_dir: str,
    title: str,
    key: str,
    markdown_of: Callable[[Path], str],
    scores: Mapping[str, Mapping[str, Any]],
    baseline: Mapping[str, Any],
) -> Path | None:
    """RUN_DIR/report.md and report.html (`markdown_of(run_dir)` writes the plots it links) and the
    Prefect artifacts: the report, and `scores` per model beside the baseline's; the report's path,
    or None where RUN_DIR is remote (gs://: the artifacts and the summary stand for it)."""
    if "://" in run_dir:
        return None
    root = Path(run_dir)
    markdown = markdown_of(root)
    path = root / "report.md"
    path.write_text(markdown, encoding="utf-8")
    (root / "report.html").write_text(
        render_html(markdown, f"{title} {root.name}"), encoding="utf-8"
    )
    evaluation = {
        **scores,
        "baseline (most frequent piece; SOP majority)": {
            k: baseline.get(k) for k in ("masked_lm_accuracy", "sop_accuracy")
        },
    }
    publish_report(key, markdown, evaluation, root)
    return path
