"""What `check.py` prints: its table (a run a line) and the goal ratios at the end.

The goals: >= 1.5x Hugging Face's `torch.compile`d `AlbertForPreTraining` at albert-base s128 and
albert-large s512, and real-token MFU >= 50% at albert-large s512. The ratio compares real
(non-padding) tokens a second, on the same device and shape: ours, the steady steps' of a run on
the kit's shards (`steady_real_tokens_per_second`: a packed row holds several instances, so its
sequences a second are rows, not instances); Hugging Face's, its sequences a second times the
sequence length times the real-token share of our plain row on the same shards (it pads every
instance to the full length, whatever the data: its rate on generated full-length batches is its
rate on ours). For a plain row that is our sequences a second over Hugging Face's.
"""

from __future__ import annotations

SPEEDUP_GOAL = 1.5
MFU_GOAL = 0.50
MFU_ROW = ("albert-large", 512)

COLUMNS = (
    "run", "batch", "rc", "seconds", "exit_after_summary_s", "steady_seq_per_s", "loop_seq_per_s",
    "synthetic_seq_per_s", "steady_over_synthetic", "input_wait_share", "input_workers_from_step",
    "real_token_share", "real_token_mfu", "over_hf_compiled", "step_compilations",
    "length_buckets", "packing", "dev_accuracy", "eager", "compile", "skipped",
)  # fmt: skip


def print_table(rows: list[dict], install_seconds: float) -> None:
    """One Markdown table: a run a line, the columns any row has."""
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    print(f"kit installed in {install_seconds:.1f} s")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")


def over_huggingface(row: dict, plain: dict | None, hf_compiled, seq: int) -> float | None:
    """A run's real tokens a second over Hugging Face compiled's on the same shards (module doc);
    None without either figure."""
    ours = row.get("steady_real_tok_per_s")
    share = (plain or {}).get("real_token_share")
    if not ours or not share or not isinstance(hf_compiled, float):
        return None
    return round(ours / (hf_compiled * seq * share), 3)


def goals(rows: list[dict], shapes: list[tuple[str, int, int]], hf_rows: list[dict]) -> dict:
    """Each shape's best ratio to Hugging Face compiled (and the run that reached it; each run's
    own ratio is set on its row as `over_hf_compiled`), and the best real-token MFU at
    albert-large s512, each against its goal."""
    result = {}
    for (preset, seq, _), hf in zip(shapes, hf_rows):
        runs = [r for r in rows if r.get("shape") == (preset, seq) and "layout" in r]
        plain = next((r for r in runs if r["layout"] == "plain"), None)
        for run in runs:
            run["over_hf_compiled"] = over_huggingface(run, plain, hf.get("compile"), seq)
        ratios = [(r["over_hf_compiled"], r["run"]) for r in runs if r["over_hf_compiled"]]
        best = max(ratios, default=(None, None))
        result[f"{preset} s{seq} over Hugging Face compiled"] = {
            "best": best[0], "run": best[1], "goal": SPEEDUP_GOAL,
            "met": best[0] is not None and best[0] >= SPEEDUP_GOAL,
            **({"why_none": hf.get("skipped") or f"Hugging Face: {hf.get('compile')}"}
               if best[0] is None else {}),
        }  # fmt: skip
    mfu = [
        (r["real_token_mfu"], r["run"])
        for r in rows
        if r.get("shape") == MFU_ROW and r.get("real_token_mfu")
    ]
    best = max(mfu, default=(None, None))
    result["albert-large s512 real-token MFU"] = {
        "best": best[0], "run": best[1], "goal": MFU_GOAL,
        "met": best[0] is not None and best[0] >= MFU_GOAL,
        **({"why_none": "no albert-large s512 run with a device peak"} if best[0] is None else {}),
    }  # fmt: skip
    return result


def print_goals(result: dict) -> None:
    """The goal lines, one each: the best figure, the run that reached it, met or not."""
    print("goals:")
    for name, goal in result.items():
        figure = "n/a" if goal["best"] is None else f"{goal['best']}"
        where = f" ({goal['run']})" if goal["run"] else f" ({goal['why_none']})"
        verdict = "met" if goal["met"] else "not met"
        print(f"  {name}: {figure}{where}, goal >= {goal['goal']}: {verdict}")
