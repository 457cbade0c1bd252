"""benchmarks/learning_parity_report.compare: the side-by-side verdicts, from printed rows alone."""

import pytest

from benchmarks.learning_parity_report import compare

pytestmark = pytest.mark.backend_free


def row(side: str, seed: int, accuracies: list[float], losses: dict[int, float]) -> dict:
    return {
        "side": side,
        "seed": seed,
        "wall_seconds": 100.0 if side == "hf" else 20.0,
        "heldout": [
            {
                "step": 100 * (i + 1),
                "train_seconds": (50.0 if side == "hf" else 10.0) * (i + 1),
                "masked_lm_accuracy": accuracy,
                "masked_lm_loss": 7.0 - accuracy,
                "sop_accuracy": 0.5,
            }
            for i, accuracy in enumerate(accuracies)
        ],
        "train_loss": losses,
    }


def test_losses_pair_by_seed_whatever_the_row_order():
    rows = [
        row("hf", 1, [0.05, 0.10], {100: 8.0, 300: 6.0}),
        row("hf", 2, [0.04, 0.08], {100: 9.0, 300: 7.0}),
        row("tf", 2, [0.04, 0.08], {100: 9.09, 300: 7.0}),  # seed 2 first: paired with HF seed 2
        row("tf", 1, [0.05, 0.10], {100: 8.0, 300: 6.06}),
    ]
    summary = compare(rows)["tf"]
    assert summary["max_train_loss_gap_first_200_steps"] == 0.01
    assert summary["max_train_loss_gap"] == 0.01
    assert summary["within_hf_seed_spread_or_better"] is True
    assert summary["outside_hf_seed_spread"] == []
    # HF's final accuracy, the mean of its seeds, is 0.09: seed 1 reaches it at its second point
    assert summary["train_seconds_to_hf_final_mlm_acc"] == [None, 20.0]
    assert summary["speed_ratio"] == [None, 5.0]


def test_below_hugging_face_seed_range_is_reported():
    rows = [
        row("hf", 1, [0.05, 0.10], {100: 8.0}),
        row("hf", 2, [0.04, 0.08], {100: 9.0}),
        row("jax", 1, [0.03, 0.07], {100: 8.0}),
    ]
    summary = compare(rows)["jax"]
    assert summary["within_hf_seed_spread_or_better"] is False
    # accuracy below both HF seeds at both points; loss (7 - accuracy) above both
    assert summary["outside_hf_seed_spread"] == [
        "masked_lm_accuracy@100", "masked_lm_accuracy@200",
        "masked_lm_loss@100", "masked_lm_loss@200",
    ]  # fmt: skip


def test_no_hugging_face_rows_no_comparison():
    assert compare([row("lamb", 1, [0.05], {100: 8.0})]) == {}
