"""A model line night after night through the real flow (Prefect's temporary server, Beam, Keras
on TensorFlow), on small corpora of our own, in one line: a first night SIGKILLed mid-training (a
real process) leaves the line as it was, and the same command run again completes it from the
night's cache and checkpoints; then a night whose pointer move was lost, a renamed file that is not
new, a night that finds nothing new (no new file, or near-copies only), and a second trained
night, refused, that keeps `current`, with its lineage and replay."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import prefect_server, session_api_url
from line_inputs import base, documents, write_docs  # noqa: F401  (`base`: a fixture)

REPO = Path(__file__).resolve().parents[1]
FLAGS = [
    *("--preset", "albert-nano", "--batch-size", "8", "--num-shards", "2", "--eval-batches", "1"),
    *("--epochs", "0.5"),  # steps counted from the night's sequences: 15, a checkpoint every 4
    *("--min-improvement", "-10", "--max-forgetting", "10"),
    *("--segment", json.dumps({"format": "text", "num_shards": 2, "quality": False})),
    *("--pretrain", json.dumps({"jit_compile": False, "progress": False, "checkpoint_every": 4})),
]


def committed_checkpoint(line: Path) -> bool:
    """Whether the first night's training has committed a checkpoint (one being written is a
    `ckpt-<step>.tmp-<id>` sibling, which a resume does not see)."""
    from model.checkpoints.store import list_checkpoints

    nights = (line / "nights").glob("v0001-*/pretrain/checkpoints")
    return any(list_checkpoints(str(directory)) for directory in nights)


def killed_night(argv: list[str], line: Path, tmp_path: Path) -> None:
    """`python -m flows.domain.flow ARGV` (the line's first night) SIGKILLed once its training
    committed a checkpoint; the night's process uses the session's Prefect server."""
    api = session_api_url()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": api,
    }
    killed = subprocess.Popen(
        [sys.executable, "-m", "flows.domain.flow", *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not committed_checkpoint(line):
            assert killed.poll() is None, "the night ended before it could be killed"
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()


@contextlib.contextmanager
def trainer_log() -> Iterator[list[str]]:
    """The trainer's (model.pretrain's) INFO lines while the block runs (a handler of its own:
    Prefect's and our commands' logging set-ups replace the root's handlers, caplog's too)."""
    said: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: said.append(record.getMessage())
    logger = logging.getLogger("model.pretrain")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.slow
def test_a_line_night_after_night_from_a_killed_night(
    tmp_path: Path,
    base: Path,  # noqa: F811
) -> None:
    from albert.config import add_config_arguments, config_from_namespace
    from flows.domain.flow import main
    from flows.line.config import LineConfig
    from flows.line.flow import model_line_night, run
    from flows.line.records import ModelLine

    inbox, line = tmp_path / "inbox", ModelLine(str(tmp_path / "line"))
    night_one = documents(40, 1)
    write_docs(inbox / "n1.txt", night_one)
    argv = ["--line", line.url, "--base", str(base), "--input", str(inbox / "*.txt"), *FLAGS]
    killed_night(argv, Path(line.url), tmp_path)
    assert sorted(line.records()) == ["v0001"] and line.current() == "v0001"
    assert [p.name for p in Path(line.url).iterdir() if p.name.startswith("v")] == ["v0001"]

    parser = argparse.ArgumentParser()
    add_config_arguments(parser, LineConfig)
    config = config_from_namespace(LineConfig, parser.parse_args(argv))
    with prefect_server():
        with trainer_log() as said:
            first = run(config)  # the same command again, in this process
        assert any(line.startswith("resumed from") for line in said), said
        assert first["message"].startswith(f"{line.url}: v0002 promoted, current is now v0002")
        assert (first["version"], first["current"]) == ("v0002", "v0002")
        assert not list(Path(line.url).glob("*.tmp-*"))
        assert not list(Path(line.url).glob("v*.lock"))
        records = line.records()
        assert records["v0001"]["status"] == "base" and records["v0001"]["parent"] is None
        assert records["v0001"]["scores"]["general"]["masked_lm_loss"] > 0
        v2 = records["v0002"]
        stages = v2["night"]["stages"]
        assert all(stages[s]["cached"] for s in ("segment", "tfrecords", "replay")), stages
        assert not stages["pretrain"]["cached"]
        trained_on = v2["trained_on"]
        assert trained_on["steps"] == math.ceil(0.5 * trained_on["sequences"] / 8) > 4
        assert v2["parent"] == "v0001" and v2["git"]["commit"] and trained_on["replay_general"] > 0
        settings = line.settings()
        assert settings["preset"] == "albert-nano" and settings["tfrecords"]["max_seq_length"] == 64
        assert sum(settings["general"]["counts"]) > 0

        (inbox / "n1.txt").rename(inbox / "n1-renamed.txt")  # not new: the same content
        line.set_current("v0001")  # a night killed after writing v0002, before moving the pointer
        rerun = model_line_night(config)
        assert rerun["current"] == "v0002" and "written by a killed night" in rerun["message"]
        assert sorted(line.records()) == ["v0001", "v0002"] and line.current() == "v0002"

        nothing = model_line_night(config)
        assert nothing["status"] == "nothing new" and max(line.records()) == "v0002"

        # a file holding near-copies of night one's documents (upper case, a notice added) + new
        # ones: the copies are near-duplicates of a document of current's lineage, not new
        copies = [f"{doc.upper()}\nA scanner's notice." for doc in night_one]
        write_docs(inbox / "n2.txt", copies + documents(20, 2))
        # and a team's task in the gate: the candidate and its parent fine-tuned on it alike
        tickets = tmp_path / "tickets"
        tickets.mkdir()
        rows = [f"{doc.split('.')[0]},{i % 2}\n" for i, doc in enumerate(night_one)]
        (tickets / "train.csv").write_text("".join(rows))
        (tickets / "task.yaml").write_text(
            "train: train.csv\ntext_column: '0'\nlabel_column: '1'\n"
        )
        gate = {"train_steps": 2, "max_seq_length": 16, "batch_size": 4, "dev_fraction": 0.25}
        refusing = config.model_copy(
            update={
                "min_improvement": 100.0,
                "epochs": 0.1,
                "gate_task": f"tickets={tickets}",
                "gate_finetune": {**gate, "quiet": True},
            }
        )
        state = model_line_night(refusing, return_state=True)
        assert state.is_completed() and "v0003 not promoted, current stays v0002" in state.message
        v3, second = line.records()["v0003"], state.result()
        assert v3["status"] == "refused" and "does not improve by the margin 100" in v3["reason"]
        assert {"accuracy", "macro_f1"} <= set(v3["scores"]["task"]) & set(
            v3["parent_scores"]["task"]
        )
        assert (v3["gate"]["task"], v3["gate"]["task_metric"]) == ("tickets", "accuracy")
        assert v3["gate"]["task_change"] == pytest.approx(
            v3["scores"]["task"]["accuracy"] - v3["parent_scores"]["task"]["accuracy"]
        )
        assert line.current() == "v0002" and v3["parent"] == "v0002"
        assert [f["path"] for f in v3["corpus"]["files"]] == [str(inbox / "n2.txt")]
        assert v3["corpus"]["near_duplicates_of_lineage"] == len(night_one)
        assert v3["trained_on"]["replay_domain"] > 0 and v3["trained_on"]["replay_general"] > 0
        assert v3["git"]["commit"] and v3["settings"]["line"] == line.url
        for part in ("export/model.keras", "vocab/spiece.model", "data/metadata.json"):
            assert Path(line.path("v0003", part)).is_file()
        assert v3["scores"]["domain"]["masked_lm_loss"] == pytest.approx(
            second["scores"]["domain"]["masked_lm_loss"]
        )
        kept = sorted(p.name for p in Path(line.path("v0002", "near_dup")).iterdir())
        assert "near_dup_signatures.json" in kept and kept[0].endswith(".minhash")
        assert (
            model_line_night(config)["status"] == "nothing new"
        )  # a refused night's files are taken
        # a file of near-copies only: nothing new, nothing written
        write_docs(inbox / "n3.txt", [f"{doc.lower()}\nAnother notice." for doc in night_one])
        copied = model_line_night(config)
        assert copied["status"] == "nothing new" and max(line.records()) == "v0003"
        assert "near-copies of the reference corpus: 40" in copied["message"]

    # a base that is a TF1 checkpoint or a Hugging Face directory is saved as .keras for v0001
    from flows.line.base import save_keras
    from model.conversion.convert import load_pretrained

    save_keras(str(base / "pretrain" / "export" / "hf"), str(tmp_path / "saved" / "model.keras"))
    saved = load_pretrained(str(tmp_path / "saved" / "model.keras"))
    assert saved.config == load_pretrained(str(base / "pretrain" / "export" / "model.keras")).config

    report = (tmp_path / "line" / "report.md").read_text()
    assert (
        "| **v0002** | v0001 | promoted (current) |" in report
        and "| v0003 | v0002 | refused |" in report
    )
    assert (tmp_path / "line" / "plots" / "line-history.png").stat().st_size > 0
    assert (tmp_path / "line" / "report.html").is_file()
    from albert import cli

    assert cli.main(["line", "check", line.url]) == 0  # real nights list their files: all sound
    no_line = str(tmp_path / "no-line")
    assert main(["--line", no_line, "--input", str(inbox / "*.txt")]) == 2  # no line, no --base
