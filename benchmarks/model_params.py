"""Parameter counts of the presets and the paper's ablation rows against the paper's figures.

Counts come from `model.network.config.parameter_counts` (no weights are allocated); ALBERT-base is
also built once to check the counting function against `model.count_params()`. Prints one JSON line.
"""

from __future__ import annotations

import json
import time

from model.network.config import PAPER_PARAMETERS, get_preset, parameter_counts


def table() -> list[dict]:
    rows = []
    for label, preset, overrides, paper, convention in PAPER_PARAMETERS:
        counts = parameter_counts(get_preset(preset, **overrides))
        shown = counts[convention or "backbone"]
        rows.append(
            {
                "model": label,
                "paper_M": paper,
                "backbone": counts["backbone"],
                "backbone_without_pooler": counts["backbone_without_pooler"],
                "pretraining_with_heads": counts["pretraining"],
                "convention": convention or "backbone",
                "ours_M": round(shown / 1e6, 2),
                "matches_paper": round(shown / 1e6) == paper,
            }
        )
    return rows


def main() -> None:
    from model.network.pretraining_model import AlbertPretrainingModel  # heavy: Keras

    start = time.perf_counter()
    base = AlbertPretrainingModel(get_preset("albert-base"))
    built = base.count_params()
    print(
        json.dumps(
            {
                "benchmark": "model_params",
                "rows": table(),
                "albert_base_built_count_params": built,
                "albert_base_counting_function": parameter_counts(get_preset("albert-base"))[
                    "pretraining"
                ],
                "build_seconds": round(time.perf_counter() - start, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
