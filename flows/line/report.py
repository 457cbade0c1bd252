"""A model line's history as a report: LINE/report.md, the same page as LINE/report.html,
LINE/plots/line-history.png, and Prefect artifacts (`albert-model-line-report`, a markdown page,
and `albert-model-line-history`, the table).

One row per version: its parent, whether it was promoted (and is current) or refused and why, its
held-out in-domain and general masked-LM loss beside its parent's on the same sequences, what it
was trained on (new files and sequences, replayed ones, steps). The plot draws both losses per
version: each night a segment from the parent's loss to the candidate's, a dot for a promoted
candidate and a cross for a refused one. The in-domain held-out set grows with the corpus, so a
night's in-domain figures compare candidate and parent on that night's set. Rewritten after every
night; a remote line (gs://) publishes the artifacts only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext

from flows.line.gate import held_out_loss
from flows.line.records import BASE, PROMOTED, ModelLine, ancestry, version_number
from flows.report.render import inline_images, render_html
from flows.report.text import duration, number, table

MARKER = "<!-- versions: {} -->"


def trained_on(record: Mapping[str, Any]) -> str:
    """'2 new files, 1,234 new + 310 earlier + 310 general sequences, 39 steps' ('–' for the
    base)."""
    files = (record.get("corpus") or {}).get("files") or []
    mix = record.get("trained_on") or {}
    if not files:
        return "–"
    return (
        f"{len(files)} new file{'s' if len(files) != 1 else ''}, {number(mix.get('new'))} new + "
        f"{number(mix.get('replay_domain'))} earlier + {number(mix.get('replay_general'))} "
        f"general sequences, {number(mix.get('steps'))} steps"
    )


def history_rows(records: Mapping[str, Mapping[str, Any]], current: str) -> list[dict[str, Any]]:
    """One dict per version (oldest first): the figures of the table, the plot and the artifact."""
    rows = []
    for name, record in records.items():
        status = record.get("status")
        scores, parent = record.get("scores"), record.get("parent_scores")
        rows.append(
            {
                "version": name,
                "parent": record.get("parent") or "–",
                "status": status + (" (current)" if name == current else ""),
                "promoted": status in (PROMOTED, BASE),
                "domain_loss": held_out_loss(scores, "domain"),
                "parent_domain_loss": held_out_loss(parent, "domain"),
                "general_loss": held_out_loss(scores, "general"),
                "parent_general_loss": held_out_loss(parent, "general"),
                "domain_heldout_documents": (record.get("heldout") or {}).get("domain_documents"),
                "trained_on": trained_on(record),
                "reason": record.get("reason", ""),
                "created": record.get("created", ""),
                "night_seconds": (record.get("night") or {}).get("wall_seconds"),
            }
        )
    return rows


def _pair(row: Mapping[str, Any], key: str) -> str:
    value, parent = row[f"{key}_loss"], row[f"parent_{key}_loss"]
    if value is None:
        return "–"
    return f"{value:.4f}" + (f" (parent {parent:.4f})" if parent is not None else "")


def history_table(rows: list[Mapping[str, Any]]) -> str:
    return table(
        [
            (
                f"**{r['version']}**" if "current" in r["status"] else r["version"],
                r["parent"],
                r["status"],
                _pair(r, "domain"),
                _pair(r, "general"),
                number(r["domain_heldout_documents"]),
                r["trained_on"],
                duration(r["night_seconds"]),
            )
            for r in rows
        ],
        (
            "version",
            "parent",
            "status",
            "in-domain held-out loss",
            "general held-out loss",
            "in-domain held-out documents",
            "trained on",
            "night",
        ),
    )


def plot_history(rows: list[Mapping[str, Any]], path: Path) -> Path:
    """Two panels, in-domain and general held-out masked-LM loss against the version: per night a
    segment from the parent's loss to the candidate's, a dot (promoted) or a cross (refused)."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for ax, key, title in (
        (axes[0], "domain", "in-domain held-out documents"),
        (axes[1], "general", "general held-out set"),
    ):
        for row in rows:
            x, value = version_number(row["version"]), row[f"{key}_loss"]
            if value is None:
                continue
            parent = row[f"parent_{key}_loss"]
            if parent is not None:
                ax.plot([x - 0.35, x], [parent, value], color="grey", linewidth=1)
                ax.plot([x - 0.35], [parent], "o", mfc="none", color="grey", markersize=5)
            style = ("o", "#2a7d2a") if row["promoted"] else ("x", "#c0392b")
            ax.plot([x], [value], style[0], color=style[1], markersize=8)
        ax.set_title(f"masked-LM loss, {title}")
        ax.set_xlabel("version (hollow: its parent on the same set)")
        ax.set_ylabel("masked-LM loss (nats)")
        ax.set_xticks([version_number(r["version"]) for r in rows], [r["version"] for r in rows])
    axes[1].plot([], [], "o", color="#2a7d2a", label="promoted / base")
    axes[1].plot([], [], "x", color="#c0392b", label="refused")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def line_markdown(
    line: ModelLine, records: Mapping[str, Mapping[str, Any]], current: str, rows: list[dict]
) -> str:
    """The whole page, `rows` being `history_rows(records, current)` (the plot is linked as
    plots/line-history.png)."""
    lineage = " ← ".join(ancestry(records, current))
    refused = [r for r in rows if not r["promoted"]]
    parts = [
        f"# ALBERT model line: `{line.url}`",
        (
            f"**Current:** `{current}` (`{line.model(current, records[current])}`); its "
            f"lineage: {lineage}. {len(rows)} versions, {len(refused)} refused."
        ),
        history_table(rows),
        "![held-out masked-LM loss per version, in-domain and general](plots/line-history.png)",
    ]
    if refused:
        parts.append(
            "**Refused:**\n\n" + "\n".join(f"- {r['version']}: {r['reason']}" for r in refused)
        )
    parts.append("## What each version was trained on")
    for name, record in records.items():
        files = (record.get("corpus") or {}).get("files") or []
        listed = "\n".join(
            f"  - `{f['path']}` (sha256 {f['sha256'][:12]}…, {number(f.get('bytes'))} bytes)"
            for f in files[:10]
        )
        more = f"\n  - … and {len(files) - 10} more" if len(files) > 10 else ""
        git = (record.get("git") or {}).get("commit") or "–"
        parts.append(
            f"- **{name}** ({record.get('status')}, {record.get('created', '')}, git "
            f"`{git[:12]}`): {record.get('reason', '')}" + (f"\n{listed}{more}" if files else "")
        )
    return "\n\n".join(parts) + "\n\n" + MARKER.format(" ".join(records)) + "\n"


def line_report_path(url: str) -> str | None:
    """Where a local line's report is (None for a remote line, which has artifacts only)."""
    if "://" in url and not url.startswith("file://"):
        return None
    return str((Path(url.removeprefix("file://")) / "report.md").resolve())


def write_line_report(line: ModelLine, refresh_only: bool = False) -> Path | None:
    """Write the line's report and publish its artifacts; with `refresh_only`, only when the
    report does not show every version yet (a night killed before its report). Returns the
    report's path (None for a remote line or when nothing was refreshed)."""
    records, current = line.records(), line.current()
    path = line_report_path(line.url)
    report = Path(path) if path else None
    if refresh_only and (
        report is None
        or (
            report.exists()
            and MARKER.format(" ".join(records)) in report.read_text(encoding="utf-8")
        )
    ):
        return None
    rows = history_rows(records, current)
    markdown = line_markdown(line, records, current, rows)
    root = report.parent if report is not None else None
    if root is not None:
        (root / "plots").mkdir(parents=True, exist_ok=True)
        plot_history(rows, root / "plots" / "line-history.png")
    if FlowRunContext.get() is not None:
        create_markdown_artifact(
            markdown=inline_images(markdown, root),
            key="albert-model-line-report",
            description="model line history",
        )
        create_table_artifact(
            table=[{k: v for k, v in r.items() if k != "promoted"} for r in rows],
            key="albert-model-line-history",
            description="model line: one row per version",
        )
    if report is None or root is None:
        return None
    report.write_text(markdown, encoding="utf-8")
    (root / "report.html").write_text(
        render_html(markdown, f"ALBERT model line {root.name}"), encoding="utf-8"
    )
    return report
