"""A model line night after night through the real flow (Prefect's temporary server, Beam, Keras
on TensorFlow), on small corpora of our own: three nights with their lineage and pointer, a renamed
file that is not new, a night that finds nothing new (no new file, or near-copies only), a refused
night that keeps `current`, a night whose pointer move was lost, and a night SIGKILLed
mid-training: the line is as it was, and the same command run again completes the night from the
night's cache and checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import prefect_server
from line_inputs import base, documents, write_docs  # noqa: F401  (`base`: a fixture)

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "batch_size": 8,
    "num_shards": 2,
    "segment": {"format": "text", "num_shards": 2},
    "pretrain": {"jit_compile": False, "progress": False},
}


def test_a_line_over_three_nights(tmp_path: Path, base: Path) -> None:  # noqa: F811
    from flows.domain.flow import main
    from flows.line.config import LineConfig
    from flows.line.flow import model_line_night
    from flows.line.records import ModelLine

    inbox, line = tmp_path / "inbox", ModelLine(str(tmp_path / "line"))
    assert main(["--line", line.url, "--input", str(inbox / "*.txt")]) == 2  # no line, no --base
    night_two = documents(40, 2)
    config = LineConfig(
        line=line.url,
        base=str(base),
        input=[str(inbox / "*.txt")],
        preset="albert-nano",
        min_improvement=-10,
        max_forgetting=10,
        epochs=0.1,  # a few steps, still counted from the night's sequences
        **TINY,
    )
    with prefect_server():
        write_docs(inbox / "n1.txt", documents(40, 1))
        first = model_line_night(config)
        assert (first["status"], first["version"], first["current"]) == (
            "promoted",
            "v0002",
            "v0002",
        )
        records = line.records()
        assert records["v0001"]["status"] == "base" and records["v0001"]["parent"] is None
        assert records["v0001"]["scores"]["general"]["masked_lm_loss"] > 0
        settings = line.settings()
        assert settings["preset"] == "albert-nano" and settings["tfrecords"]["max_seq_length"] == 64
        assert sum(settings["general"]["counts"]) > 0

        (inbox / "n1.txt").rename(inbox / "n1-renamed.txt")  # not new: the same content
        write_docs(inbox / "n2.txt", night_two)
        second = model_line_night(config)
        assert (second["version"], second["current"]) == ("v0003", "v0003")
        v3 = line.records()["v0003"]
        assert v3["parent"] == "v0002"
        assert [f["path"] for f in v3["corpus"]["files"]] == [str(inbox / "n2.txt")]
        assert v3["trained_on"]["replay_domain"] > 0 and v3["trained_on"]["replay_general"] > 0
        assert v3["git"]["commit"] and v3["settings"]["line"] == line.url
        for part in ("export/model.keras", "vocab/spiece.model", "data/metadata.json"):
            assert Path(line.path("v0003", part)).is_file()
        assert v3["scores"]["domain"]["masked_lm_loss"] == pytest.approx(
            second["scores"]["domain"]["masked_lm_loss"]
        )

        line.set_current("v0002")  # a night killed after writing v0003, before moving the pointer
        rerun = model_line_night(config)
        assert rerun["current"] == "v0003" and "written by a killed night" in rerun["message"]
        assert sorted(line.records()) == ["v0001", "v0002", "v0003"] and line.current() == "v0003"

        nothing = model_line_night(config)
        assert nothing["status"] == "nothing new" and max(line.records()) == "v0003"

        # a file holding near-copies of night two's documents (upper case, a notice added) + new
        # ones: the copies are near-duplicates of a document of current's lineage, not new
        copies = [f"{doc.upper()}\nA scanner's notice." for doc in night_two]
        write_docs(inbox / "n3.txt", copies + documents(20, 3))
        state = model_line_night(
            config.model_copy(update={"min_improvement": 100.0}), return_state=True
        )
        assert state.is_completed() and "v0004 not promoted, current stays v0003" in state.message
        v4 = line.records()["v0004"]
        assert v4["status"] == "refused" and "does not improve by the margin 100" in v4["reason"]
        assert line.current() == "v0003"
        assert v4["corpus"]["near_duplicates_of_lineage"] == len(night_two)
        kept = sorted(p.name for p in Path(line.path("v0003", "near_dup")).iterdir())
        assert "near_dup_signatures.json" in kept and kept[0].endswith(".minhash")
        assert (
            model_line_night(config)["status"] == "nothing new"
        )  # a refused night's files are taken
        # a file of near-copies only: nothing new, nothing written
        write_docs(inbox / "n4.txt", [f"{doc.lower()}\nAnother notice." for doc in night_two])
        copied = model_line_night(config)
        assert copied["status"] == "nothing new" and max(line.records()) == "v0004"
        assert "near-copies of the reference corpus: 40" in copied["message"]

    # a base that is a TF1 checkpoint or a Hugging Face directory is saved as .keras for v0001
    from flows.line.base import save_keras
    from model.convert import load_pretrained

    save_keras(str(base / "pretrain" / "export" / "hf"), str(tmp_path / "saved" / "model.keras"))
    saved = load_pretrained(str(tmp_path / "saved" / "model.keras"))
    assert saved.config == load_pretrained(str(base / "pretrain" / "export" / "model.keras")).config

    report = (tmp_path / "line" / "report.md").read_text()
    assert (
        "| **v0003** | v0002 | promoted (current) |" in report
        and "| v0004 | v0003 | refused |" in report
    )
    assert (tmp_path / "line" / "plots" / "line-history.png").stat().st_size > 0
    assert (tmp_path / "line" / "report.html").is_file()
    from albert import cli

    assert cli.main(["line", "check", line.url]) == 0  # real nights list their files: all sound


def flow_command(line: Path, base_run: Path, inbox: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "flows.domain.flow", "--line", str(line)),
        *("--base", str(base_run), "--input", str(inbox / "*.txt"), "--preset", "albert-nano"),
        *("--batch-size", "8", "--num-shards", "2", "--steps", "12", "--min-improvement", "-10"),
        *("--segment", json.dumps(TINY["segment"])),
        *("--pretrain", json.dumps({**TINY["pretrain"], "checkpoint_every": 4})),
    ]


def test_a_night_killed_mid_training_leaves_the_line_as_it_was_and_the_rerun_completes_it(
    tmp_path: Path,
    base: Path,  # noqa: F811
) -> None:
    from flows.line.records import ModelLine

    inbox, line = tmp_path / "inbox", ModelLine(str(tmp_path / "line"))
    write_docs(inbox / "n1.txt", documents(40, 1))
    with prefect_server():  # the session's server: the nights' processes start none of their own
        from prefect.settings import PREFECT_API_URL

        api = PREFECT_API_URL.value()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_API_URL": api,
        "PREFECT_LOGGING_LEVEL": "INFO",  # the stages' banners: cached or done
    }
    command = flow_command(Path(line.url), base, inbox)
    killed = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    checkpoints = Path(line.url) / "nights"
    try:
        deadline = time.monotonic() + 240
        while not list(checkpoints.glob("v0001-*/pretrain/checkpoints/ckpt-*")):
            assert killed.poll() is None, "the night ended before it could be killed"
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    assert sorted(line.records()) == ["v0001"] and line.current() == "v0001"
    assert [p.name for p in Path(line.url).iterdir() if p.name.startswith("v")] == ["v0001"]

    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stdout + done.stderr
    for stage in ("segment", "tfrecords", "replay"):
        assert f"{stage}: cached" in output
    assert "resumed from" in output and "v0002 promoted, current is now v0002" in output
    assert sorted(line.records()) == ["v0001", "v0002"] and line.current() == "v0002"
    assert line.records()["v0002"]["trained_on"]["steps"] == 12
    assert not list(Path(line.url).glob("*.tmp-*")) and not list(Path(line.url).glob("v*.lock"))
