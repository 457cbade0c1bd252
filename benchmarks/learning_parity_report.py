"""The comparison of benchmarks/learning_parity.py's rows, and their plot.

python -m benchmarks.learning_parity_report LOG [LOG ...] [--plot PLOT.png]
    (rereads runs' printed lines: rows of several runs, e.g. one per seed, are compared together)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

KEYS = ("masked_lm_accuracy", "masked_lm_loss", "sop_accuracy")


def compare(rows: list[dict]) -> dict:
    """Per side against Hugging Face: held-out gaps against the HF seed spread, training-loss gaps
    (same seed; the first 200 steps and all), and training seconds to HF's final masked-LM
    accuracy. Empty without Hugging Face rows."""
    hf = [r for r in rows if r["side"] == "hf"]
    if not hf:
        return {}
    hf_by_seed = {r["seed"]: r for r in hf}
    summary = {}
    for side in sorted({r["side"] for r in rows} - {"hf"}):
        ours = [r for r in rows if r["side"] == side]
        gaps, outside = {}, []
        for key in KEYS:
            per_point = []
            for i, point in enumerate(hf[0]["heldout"]):
                theirs = [r["heldout"][i][key] for r in hf]
                mine = np.mean([r["heldout"][i][key] for r in ours])
                # within Hugging Face's seed-to-seed range, or better than all of it
                if not (mine >= min(theirs) if key.endswith("accuracy") else mine <= max(theirs)):
                    outside.append(f"{key}@{point['step']}")
                per_point.append(round(float(mine - np.mean(theirs)), 4))
            gaps[key] = per_point
        loss_gaps = [
            (int(step), abs(loss / hf_by_seed[o["seed"]]["train_loss"][step] - 1))
            for o in ours
            if o["seed"] in hf_by_seed
            for step, loss in o["train_loss"].items()
        ]
        early = [gap for step, gap in loss_gaps if step <= 200]
        target = np.mean([r["heldout"][-1]["masked_lm_accuracy"] for r in hf])
        reached = [
            next(
                (p["train_seconds"] for p in r["heldout"] if p["masked_lm_accuracy"] >= target),
                None,
            )
            for r in ours
        ]
        hf_seconds = np.mean([r["heldout"][-1]["train_seconds"] for r in hf])
        summary[side] = {
            "heldout_gap_vs_hf_mean": gaps,
            "within_hf_seed_spread_or_better": not outside,
            "outside_hf_seed_spread": outside,
            "max_train_loss_gap_first_200_steps": round(max(early), 4) if early else None,
            "max_train_loss_gap": round(max(g for _, g in loss_gaps), 4) if loss_gaps else None,
            "train_seconds_to_hf_final_mlm_acc": reached,
            "hf_train_seconds": round(float(hf_seconds), 1),
            "speed_ratio": [round(float(hf_seconds / s), 2) if s else None for s in reached],
            "mean_wall_seconds": round(float(np.mean([r["wall_seconds"] for r in ours])), 1),
        }
    return summary


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib  # optional: the plot only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # optional: the plot only

    figure, axes = plt.subplots(1, 3, figsize=(15, 4))
    for r in rows:
        label = f"{r['side']} seed {r['seed']}"
        steps = [int(s) for s in r["train_loss"]]
        axes[0].plot(steps, list(r["train_loss"].values()), label=label, lw=0.8)
        for axis, key in zip(axes[1:], ("masked_lm_accuracy", "sop_accuracy")):
            axis.plot([p["step"] for p in r["heldout"]], [p[key] for p in r["heldout"]], "o-")
            axis.set_title(f"held-out {key}")
    axes[0].set_title("training loss")
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def rows_of(log: Path) -> list[dict]:
    """The row lines (side, seed) of a learning_parity.py log, steps as ints."""
    rows = []
    for line in log.read_text().splitlines():
        if line.startswith('{"side"'):
            row = json.loads(line)
            row["train_loss"] = {int(step): loss for step, loss in row["train_loss"].items()}
            rows.append(row)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="learning_parity.py logs, rows joined")
    parser.add_argument("--plot", type=Path, help="write the curves here (PNG)")
    args = parser.parse_args()
    found = [row for log in args.logs for row in rows_of(log)]
    if args.plot:
        plot(found, args.plot)
    print(json.dumps({"summary": compare(found)}))
