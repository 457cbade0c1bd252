"""Parameter counts against the paper (Lan et al. 2020), computed without allocating weights."""

from __future__ import annotations

import pytest

from model.network.config import PAPER_PARAMETERS, get_preset, parameter_counts

# Exact counts (embeddings + encoder + pooler, vocab 30000), printed by benchmarks/model_params.py.
EXACT_BACKBONE = {
    "ALBERT base": 11_683_584,  # = Hugging Face albert-base-v2 AlbertModel
    "ALBERT large": 17_683_968,
    "ALBERT xlarge": 58_724_864,
    "ALBERT xxlarge": 222_595_584,
    "BERT base": 109_081_344,
    "BERT large": 334_607_360,
}


@pytest.mark.parametrize("row", PAPER_PARAMETERS, ids=[row[0] for row in PAPER_PARAMETERS])
def test_counts_match_the_paper(row):
    label, preset, overrides, paper_millions, convention = row
    counts = parameter_counts(get_preset(preset, **overrides))
    print(
        f"{label}: {counts['backbone']:,} (without pooler {counts['backbone_without_pooler']:,}); "
        f"paper {paper_millions}M"
    )
    if label in EXACT_BACKBONE:
        assert counts["backbone"] == EXACT_BACKBONE[label]
    if convention is None:
        # The published architecture cannot give the paper's figure (see model.network.config).
        assert round(counts["backbone"] / 1e6) != paper_millions
    else:
        assert round(counts[convention] / 1e6) == paper_millions


def test_counting_function_matches_albert_base_built_once():
    from model.network.pretraining_model import AlbertPretrainingModel

    config = get_preset("albert-base")
    model = AlbertPretrainingModel(config)
    counts = parameter_counts(config)
    assert model.count_params() == counts["pretraining"]
    assert model.backbone.count_params() == counts["backbone"] == 11_683_584
