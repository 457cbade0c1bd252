"""`albert ablate`: the grid, the tables' arithmetic, and a nano grid end to end under Prefect
(second run fully cached, added cells the only ones trained, tables equal to the per-cell
files)."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest
from conftest import prefect_server
from test_flows_pipeline import write_corpus

from albert.config import add_config_arguments, config_from_namespace
from flows.ablation.flow import AblationConfig, grid
from flows.ablation.report import (
    axis_rows,
    direction,
    summarize_variants,
    write_ablation_report,
)


def parse(*flags: str) -> AblationConfig:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, AblationConfig)
    return config_from_namespace(AblationConfig, parser.parse_args(list(flags)))


def test_grid_varies_one_axis_at_a_time_from_the_baseline() -> None:
    config = parse(
        "--objective",
        "sop,nsp",
        "--sharing",
        "all,attention",
        "--sharing",
        "ffn",
        "--embedding-size",
        "64,128",
        "--seeds",
        "2",
        "--seed",
        "7",
    )
    variants = list(dict.fromkeys(cell.variant for cell in grid(config)))
    assert variants == [
        "sop · all · E=64",
        "nsp · all · E=64",
        "sop · attention · E=64",
        "sop · ffn · E=64",
        "sop · all · E=128",
    ]
    assert [cell.seed for cell in grid(config)][:2] == [7, 8]
    with pytest.raises(Exception, match="repeat"):
        parse("--sharing", "all,all")


def record(
    variant: str, objective: str, sharing: str, seed: int, mlm: float, sop: float, nsp: float
) -> dict:
    return {
        "variant": variant,
        "objective": objective,
        "sharing": sharing,
        "embedding_size": None,
        "seed": seed,
        "parameters": 1000,
        "masked_lm_accuracy": mlm,
        "sop_accuracy": sop,
        "nsp_accuracy": nsp,
    }


def test_variant_means_spreads_and_the_papers_directions() -> None:
    records = [
        record("sop · all", "sop", "all", 0, 0.30, 0.80, 0.70),
        record("sop · all", "sop", "all", 1, 0.32, 0.84, 0.72),
        record("nsp · all", "nsp", "all", 0, 0.31, 0.52, 0.90),
        record("nsp · all", "nsp", "all", 1, 0.31, 0.50, 0.88),
        record("sop · none", "sop", "none", 0, 0.36, 0.85, 0.70),
        record("sop · none", "sop", "none", 1, 0.36, 0.85, 0.71),
    ]
    rows = summarize_variants(records)
    assert [row["variant"] for row in rows] == ["sop · all", "nsp · all", "sop · none"]
    assert rows[0]["masked_lm_accuracy"] == pytest.approx(0.31)
    assert rows[0]["masked_lm_accuracy_sd"] == pytest.approx(0.01414, abs=1e-4)
    objective = axis_rows(rows, "objective")
    assert [row["variant"] for row in objective] == ["sop · all", "nsp · all"]
    assert direction("objective", objective).count(": holds;") == 1
    sharing = axis_rows(rows, "sharing")
    assert direction("sharing", sharing) == "not-shared beats all-shared on masked-LM acc: holds"
    assert axis_rows(rows, "embedding_size") == []


def test_the_tables_have_a_section_and_a_plot_per_varied_axis(tmp_path: Path) -> None:
    records = [
        {**record("sop · all", "sop", "all", 0, 0.30, 0.80, 0.70), "steps": 3},
        {**record("nsp · all", "nsp", "all", 0, 0.31, 0.52, 0.90), "steps": 3},
        {**record("sop · none", "sop", "none", 0, 0.36, 0.85, 0.70), "steps": 3},
    ]
    config = AblationConfig(input=["corpus.txt"], run_dir=str(tmp_path))
    written = write_ablation_report(config, records)
    report = written["markdown"].read_text(encoding="utf-8")
    assert (
        "## Pretraining objective (paper Table 5)" in report
        and "## Cross-layer sharing (paper Table 4)" in report
        and "Embedding size" not in report
    )
    for axis in ("objective", "sharing"):
        assert (tmp_path / "plots" / f"ablation-{axis}.png").stat().st_size > 0
    rows = list(csv.DictReader(written["csv"].open(encoding="utf-8")))
    assert [row["variant"] for row in rows] == [r["variant"] for r in records]


@pytest.mark.slow
def test_nano_grid_end_to_end_cached_and_incremental(tmp_path: Path) -> None:
    """The baseline cell alone, the same grid again (all cached), then one added cell (the only one
    trained); the sections of a grid over two axes:
    test_the_tables_have_a_section_and_a_plot_per_varied_axis."""
    from flows.ablation.flow import ablation

    config = AblationConfig(
        input=[str(write_corpus(tmp_path / "corpus.txt"))],
        run_dir=str(tmp_path / "run"),
        preset="albert-nano",
        vocab_size=60,
        max_seq_length=64,
        num_shards=2,
        steps=1,
        batch_size=8,
        eval_batches=1,
        objective=["sop"],
        sharing=["all"],
        segment={"format": "text", "num_shards": 2, "quality": False},
        pretrain={"jit_compile": False, "progress": False},
    )
    with prefect_server():
        first = ablation(config)  # the baseline cell alone; the data of both objectives
        trained = {
            name: stage["cached"]
            for name, stage in first["stages"].items()
            if name.startswith("pretrain-")
        }
        assert trained == {"pretrain-sop-all-epreset-seed12345": False}

        second = ablation(config)
        assert all(stage["cached"] for stage in second["stages"].values()), second["stages"]
        assert second["cells"] == [{**cell, "cached": True} for cell in first["cells"]]

        third = ablation(config.model_copy(update={"sharing": ["all", "none"]}))
        fresh = [name for name, stage in third["stages"].items() if not stage["cached"]]
        assert fresh == ["pretrain-sop-none-epreset-seed12345"], third["stages"]

    run = tmp_path / "run"
    rows = list(csv.DictReader((run / "ablation.csv").open(encoding="utf-8")))
    assert [row["cell"] for row in rows] == [c["cell"] for c in third["cells"]]
    for row in rows:  # every model scored on the SOP and the NSP held-out pairs
        for name, column in (("sop", "sop_accuracy"), ("nsp", "nsp_accuracy")):
            metrics = json.loads(
                (run / "cells" / row["cell"] / f"heldout-{name}" / "metrics.json").read_text()
            )
            assert float(row[column]) == pytest.approx(metrics["sop_accuracy"])
    report = (run / "ablation.md").read_text(encoding="utf-8")
    assert "## Cross-layer sharing (paper Table 4)" in report
    assert (run / "plots" / "ablation-sharing.png").stat().st_size > 0
    nano_params = {row["sharing"]: int(row["parameters"]) for row in rows}
    assert nano_params["none"] > nano_params["all"]  # sharing "ffn": tests/test_model_core.py


def test_the_token_objective_axis_adds_an_rtd_cell_with_its_replaced_token_accuracy(
    tmp_path: Path,
) -> None:
    from flows.ablation.flow import cell_configs

    config = parse("--objective", "sop", "--token-objective", "mlm,rtd", "--run-dir", str(tmp_path))
    cells = grid(config)
    assert [(cell.variant, cell.name) for cell in cells] == [
        ("sop · all · E=preset", "sop-all-epreset-seed12345"),
        ("sop · rtd · all · E=preset", "sop-rtd-all-epreset-seed12345"),
    ]
    assert cell_configs(config, cells[1])["pretrain"].objective == "rtd"
    records = [
        {**record("sop · all", "sop", "all", 0, 0.30, 0.80, 0.70), "steps": 3},
        {
            **record("sop · rtd · all", "sop", "all", 0, 0.20, 0.82, 0.71),
            "token_objective": "rtd",
            "replaced_token_accuracy": 0.91,
            "steps": 3,
        },
    ]
    rows = axis_rows(summarize_variants(records), "token_objective")
    assert [row["replaced_token_accuracy"] for row in rows] == [None, 0.91]
    report = write_ablation_report(config, records)["markdown"].read_text(encoding="utf-8")
    assert "## Token objective" in report and "replaced-token acc" in report
    assert "| 0.910 |" in report and "| — |" in report
