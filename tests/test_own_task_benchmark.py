"""benchmarks/own_task's own pieces: TREC's `LABEL question` lines as the TSV our reader takes, the
flags our CLI gets, and the side-by-side summary of a task's runs."""

import pytest

from albert.labelled_files import read_columns
from benchmarks import own_task
from benchmarks.helpers.classification_data import as_tsv

pytestmark = pytest.mark.backend_free


def test_trec_lines_become_latin1_tsv_our_reader_reads_back(tmp_path):
    source = tmp_path / "train.label"
    source.write_bytes(b'NUM:date When was "it" born ?\r\n\nLOC:city Name the sister\xf0city .\n')
    target = as_tsv(source, tmp_path / "prepared" / "train.tsv", "latin-1")
    rows = [values for _, values in read_columns(str(target), ["0", "1"], False, "latin-1")]
    assert rows == [
        ["NUM:date", 'When was "it" born ?'],
        ["LOC:city", "Name the sister\xf0city ."],
    ]
    csv = tmp_path / "dev.csv"
    assert as_tsv(csv, tmp_path / "dev.tsv", "utf-8") == csv  # read as it is


def test_config_values_are_our_cli_flags():
    values = {"text_column": ["0"], "header": False, "quiet": True, "label_separator": None}
    flags = own_task.own_task_flags({**values, "learning_rate": 0.001})
    assert flags == ["--text-column", "0", "--no-header", "--quiet", "--learning-rate", "0.001"]


def test_side_by_side_spreads_welch_and_speed_ratio():
    def run(ours, hf, ours_wall, hf_wall):
        return {
            "ours": {"dev": {"accuracy": ours}, "wall_seconds": ours_wall},
            "hf": {"dev": {"accuracy": hf}, "wall_seconds": hf_wall},
        }

    runs = [run(0.5, 0.4, 10.0, 20.0), run(0.7, 0.5, 14.0, 28.0)]
    line = own_task.side_by_side(runs, ["accuracy"])
    assert line["ours"]["accuracy"] == {"mean": 0.6, "std": 0.1414}
    assert line["hf"]["accuracy"] == {"mean": 0.45, "std": 0.0707}
    assert line["wall_seconds"]["ours"]["mean"] == 12.0 and line["speed_ratio"] == 2.0
    assert 0 < line["welch_p"]["accuracy"] < 1
    same = own_task.side_by_side([run(0.5, 0.5, 1.0, 1.0)] * 2, ["accuracy"])
    assert same["welch_p"]["accuracy"] is None  # no spread on either side: undefined
