"""A model line's pure logic, without Prefect or Keras: lineage, what is new (by content), the
gate, pruning, atomic versions and the pointer (on a disk and on an object store), the replay mix,
and `albert line show|prune`."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import fsspec
import pytest
from test_line_check import SETTINGS

from albert import cli
from albert.errors import StageError
from albert.fs import file_digest
from albert.tfrecord_framing import tfrecord_records
from flows.line.gate import TaskGate, decide
from flows.line.records import (
    PROMOTED,
    REFUSED,
    VERSION_FILE,
    ModelLine,
    ancestry,
    new_files,
    next_version,
    prune_plan,
    seen_files,
    version_name,
    write_json,
    written_night,
)
from model.input.replay import (
    ReplayConfig,
    count_records,
    draw,
    drawn_records,
    replay_counts,
    stream_order,
    write_records,
)
from model.input.replay import run as replay_run

pytestmark = pytest.mark.backend_free


def record(parent, status=PROMOTED, files=()):
    return {
        "parent": parent,
        "status": status,
        "corpus": {"files": [{"path": p, "sha256": d} for p, d in files]},
    }


RECORDS = {
    "v0001": record(None, "base"),
    "v0002": record("v0001", files=[("a.txt", "A")]),
    "v0003": record("v0002", REFUSED, files=[("bad.txt", "BAD")]),
    "v0004": record("v0002", files=[("b.txt", "B"), ("c.txt", "C")]),
}


def test_lineage_what_is_new_and_pruning():
    assert version_name(7) == "v0007" and next_version(RECORDS) == "v0005"
    assert next_version({}) == "v0001"
    assert ancestry(RECORDS, "v0004") == ["v0004", "v0002", "v0001"]
    with pytest.raises(StageError, match="v0009: no such version"):
        ancestry(RECORDS, "v0009")
    seen = seen_files(RECORDS, "v0004")
    assert set(seen) == {"A", "B", "C", "BAD"} and seen["BAD"]["version"] == "v0003"
    assert set(seen_files(RECORDS, "v0004", retry_refused=True)) == {"A", "B", "C"}
    # renamed (same content) is not new; two copies of one new content count once
    digests = {"renamed-a.txt": "A", "d.txt": "D", "d-copy.txt": "D", "e.txt": "E"}
    assert new_files(digests, seen) == {"d-copy.txt": "D", "e.txt": "E"}
    assert written_night(RECORDS, "v0002", ["C", "B"]) == "v0004"
    assert written_night(RECORDS, "v0004", ["C", "B"]) is None
    assert prune_plan(RECORDS, "v0004") == ["v0003"]
    assert prune_plan(RECORDS, "v0004", ["v0003"]) == ["v0003"]
    with pytest.raises(StageError, match="v0002: is an ancestor of v0004"):
        prune_plan(RECORDS, "v0004", ["v0002"])
    with pytest.raises(StageError, match="v0004: is the current version"):
        prune_plan(RECORDS, "v0004", ["v0004"])


def test_the_gate_promotes_only_better_in_domain_within_the_tolerance():
    parent = {"domain": {"masked_lm_loss": 3.0}, "general": {"masked_lm_loss": 2.5}}

    def candidate(domain, general):
        return {"domain": {"masked_lm_loss": domain}, "general": {"masked_lm_loss": general}}

    kw = {"min_improvement": 0.01, "max_forgetting": 0.05}
    good = decide(candidate(2.9, 2.54), parent, **kw)
    assert good.promoted and math.isclose(good.domain_change, -0.1)
    assert "in-domain masked-LM loss 3.0000 -> 2.9000 (-0.1000)" in good.reason
    small = decide(candidate(2.995, 2.5), parent, **kw)
    assert not small.promoted and "does not improve by the margin 0.01" in small.reason
    forgot = decide(candidate(2.5, 2.6), parent, **kw)
    assert not forgot.promoted and "worsens by more than the tolerance 0.05" in forgot.reason
    assert not decide(candidate(math.nan, 2.5), parent, **kw).promoted
    assert not decide({"general": {"masked_lm_loss": 2.5}}, parent, **kw).promoted


def test_a_night_that_makes_the_team_s_task_worse_is_not_promoted(tmp_path: Path):
    from albert.config import ConfigError, load_config
    from flows.line.config import LineConfig

    held_out = {"domain": {"masked_lm_loss": 2.9}, "general": {"masked_lm_loss": 2.5}}
    parent = {"domain": {"masked_lm_loss": 3.0}, "general": {"masked_lm_loss": 2.5}}
    kw = {"min_improvement": 0.01, "max_forgetting": 0.05}

    def night(candidate_f1, tolerance=0.0, metric="macro_f1"):
        candidate = {**held_out, "task": {"accuracy": 0.9, "macro_f1": candidate_f1}}
        gate = TaskGate("tickets", metric, tolerance)
        return decide(candidate, {**parent, "task": {"macro_f1": 0.8}}, **kw, task=gate)

    better = night(0.82)
    assert better.promoted and math.isclose(better.task_change, 0.02)
    assert "tickets dev macro_f1 0.8000 -> 0.8200 (+0.0200), tolerance 0" in better.reason
    worse = night(0.79)
    assert not worse.promoted and "tickets dev macro_f1 0.8000 -> 0.7900" in worse.reason
    assert night(0.79, tolerance=0.02).promoted
    assert (
        not night(math.nan).promoted and not night(0.9, metric="accuracy").promoted
    )  # no parent's
    config = {"line": str(tmp_path / "line"), "input": ["unused"]}
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    (tickets / "task.yaml").write_text("train: train.csv\ntext_column: text\n")
    line = load_config(LineConfig, overrides={**config, "gate_task": f"tickets={tickets}"})
    assert line.task_gate("accuracy") == TaskGate("tickets", "accuracy", 0.0)
    line = line.model_copy(update={"gate_metric": "macro_f1", "gate_tolerance": 0.01})
    assert line.task_gate("accuracy") == TaskGate("tickets", "macro_f1", 0.01)
    from flows.line.gate_task import gate_configs

    run = line.model_copy(update={"run_dir": str(tmp_path / "night")})
    gated = line.model_copy(update={"gate_finetune": {"train_steps": 5}})
    sides = {"parent": "v0001.keras", "candidate": "new.keras"}
    fine_tunes = gate_configs(gated, run, "spiece.model", sides)
    assert list(fine_tunes) == ["gate-parent", "gate-candidate"]
    assert [(c.init, c.task, c.train_steps, c.seed) for c in fine_tunes.values()] == [
        (model, "tickets", 5, line.seed) for model in sides.values()
    ]
    assert fine_tunes["gate-parent"].output == run.stage_dir("gate-parent")
    with pytest.raises(ConfigError, match="--gate-task 'tickets=.*holds no task.yaml"):
        load_config(LineConfig, overrides={**config, "gate_task": f"tickets={tmp_path}"})
    with pytest.raises(ConfigError, match="--gate-metric and --gate-finetune need --gate-task"):
        load_config(LineConfig, overrides={**config, "gate_metric": "macro_f1"})


@pytest.mark.parametrize("root", ["disk", "memory"])
def test_versions_appear_whole_and_the_pointer_moves_last(tmp_path: Path, root: str):
    url = str(tmp_path / "line") if root == "disk" else "memory://lines/line"
    line = ModelLine(url)
    write_json(line.path("line.json"), {"format": "albert-model-line-v1"})

    def fill(directory: str) -> None:
        with fsspec.open(f"{directory}/export/model.keras", "wb") as handle:
            handle.write(b"weights")

    def broken(directory: str) -> None:
        fill(directory)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        line.commit("v0001", {"parent": None, "status": "base"}, broken, promote=True)
    assert line.entries() == [] and line.records() == {} and line.current() is None
    line.commit("v0001", {"parent": None, "status": "base"}, fill, promote=True)
    assert line.current() == "v0001" and line.records()["v0001"]["version"] == "v0001"
    # a version copied in part (object stores) has no version.json: invisible, then replaced
    write_json(line.path("v0002", "export", "partial.json"), {})
    assert list(line.records()) == ["v0001"] and line.entries() == ["v0001", "v0002"]
    line.commit("v0002", {"parent": "v0001", "status": REFUSED}, fill, promote=False)
    assert line.current() == "v0001" and line.records()["v0002"]["status"] == REFUSED
    fs, path = fsspec.core.url_to_fs(line.path("v0002"))
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.find(path)) == ["model.keras", VERSION_FILE]
    with pytest.raises(StageError, match="versions are never rewritten"):
        line.commit("v0002", {"parent": "v0001"}, fill, promote=True)
    assert line.model("v0002") == line.path("v0002", "export", "model.keras")


def test_file_digest_is_of_the_bytes_as_stored(tmp_path: Path):
    plain, packed = tmp_path / "a.txt", tmp_path / "a.txt.bz2"
    plain.write_bytes(b"text\n")
    packed.write_bytes(b"not really bz2")
    assert file_digest(str(plain)) == hashlib.sha256(b"text\n").hexdigest()
    assert file_digest(str(packed)) == hashlib.sha256(b"not really bz2").hexdigest()


def _records(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(count)]


def _night(directory: Path, shards: list[list[bytes]], heldout: list[bytes]) -> Path:
    directory.mkdir(parents=True)
    names = []
    for index, records in enumerate(shards):
        name = f"data-{index:05d}-of-{len(shards):05d}.tfrecord"
        write_records(str(directory / name), records)
        names.append(name)
    write_records(str(directory / "heldout-00000-of-00001.tfrecord"), heldout)
    metadata = {
        "max_seq_length": 64,
        "counts": {"instances": sum(map(len, shards))},
        "heldout": {"files": ["heldout-00000-of-00001.tfrecord"], "documents": 1},
    }
    (directory / "metadata.json").write_text(json.dumps(metadata))
    return directory


def test_replay_counts_draws_and_order_come_from_the_seed():
    assert replay_counts(60, [0.2, 0.2], [1000, 1000]) == (20, 20)
    assert replay_counts(60, [0.2, 0.2], [5, 1000]) == (5, 20)
    assert replay_counts(60, [0.0, 0.0], [5, 5]) == (0, 0)
    first = draw(100, 10, 7)
    assert list(first) == sorted(set(first)) and len(first) == 10
    assert list(draw(100, 10, 7)) == list(first) and list(draw(100, 10, 8)) != list(first)
    order = stream_order([5, 2, 1], 3)
    assert sorted(order.tolist()) == [0] * 5 + [1] * 2 + [2]
    assert stream_order([5, 2, 1], 3).tolist() == order.tolist()


def test_replay_mix_holds_every_new_record_and_the_shares(tmp_path: Path):
    new = _night(tmp_path / "new", [_records("n0-", 30), _records("n1-", 30)], [b"h-new"])
    earlier = _night(tmp_path / "earlier", [_records("e-", 50)], [b"h-old"])
    general = _night(tmp_path / "general", [_records("g0-", 40), _records("g1-", 40)], [b"h-g"])
    pools = {
        "domain_shards": [str(earlier / "data-00000-of-00001.tfrecord")],
        "domain_counts": [50],
        "general_shards": [str(general / f"data-0000{i}-of-00002.tfrecord") for i in range(2)],
        "general_counts": [40, 40],
    }
    assert [count_records(p) for p in pools["general_shards"]] == [40, 40]
    drawn = list(drawn_records(pools["general_shards"], [40, 40], draw(80, 5, 1)))
    assert len(drawn) == 5 and all(r.startswith(b"g") for r in drawn)

    def mix(output: str, **shares) -> tuple[dict, list[list[bytes]]]:
        config = ReplayConfig(
            data=str(new),
            heldout=[str(earlier / "heldout-00000-of-00001.tfrecord")],
            output=output,
            seed=5,
            **pools,
            **shares,
        )
        summary = replay_run(config)
        shards = [
            list(tfrecord_records(f"{output}/data-0000{i}-of-00002.tfrecord")) for i in range(2)
        ]
        return summary, shards

    summary, shards = mix(str(tmp_path / "mix"), domain_share=0.2, general_share=0.3)
    assert (summary["new"], summary["replay_domain"], summary["replay_general"]) == (60, 24, 36)
    everything = [r for shard in shards for r in shard]
    assert sorted(r for r in everything if r.startswith(b"n")) == sorted(
        _records("n0-", 30) + _records("n1-", 30)
    )
    assert len({r for r in everything if r.startswith(b"e")}) == 24
    assert len({r for r in everything if r.startswith(b"g")}) == 36
    assert shards[0][:10] != _records("n0-", 10)  # interleaved, not appended
    # the in-domain held-out set is the earlier nights' (tonight's own only on a first night)
    heldout = list(tfrecord_records(str(tmp_path / "mix" / "heldout-00000-of-00001.tfrecord")))
    assert heldout == [b"h-old"]
    metadata = json.loads((tmp_path / "mix" / "metadata.json").read_text())
    assert metadata["heldout"]["files"] == ["heldout-00000-of-00001.tfrecord"]
    assert metadata["counts"]["instances"] == 120 and metadata["max_seq_length"] == 64
    assert not list((tmp_path / "mix").glob(".spool-*"))
    again, again_shards = mix(str(tmp_path / "mix-again"), domain_share=0.2, general_share=0.3)
    assert again_shards == shards and again == summary  # deterministic from the seed
    none, none_shards = mix(str(tmp_path / "mix-none"))
    assert none["sequences"] == 60 and all(r.startswith(b"n") for s in none_shards for r in s)
    first_night = ReplayConfig(data=str(new), output=str(tmp_path / "first"), **pools)
    assert replay_run(first_night)["heldout_sequences"] == 1
    first = tmp_path / "first" / "heldout-00000-of-00001.tfrecord"
    assert list(tfrecord_records(str(first))) == [b"h-new"]
    with pytest.raises(ValueError, match="must be below 1"):
        ReplayConfig(data="d", output="o", domain_share=0.5, general_share=0.5)


def test_line_show_and_prune_keep_current_and_its_ancestors(tmp_path: Path, capsys):
    line = ModelLine(str(tmp_path / "line"))
    write_json(line.path("line.json"), SETTINGS)
    for name, rec in RECORDS.items():
        work = line.path("nights", f"{name}-work")
        write_json(f"{work}/x.json", {})
        files = [
            {**f, "sha256": hashlib.sha256(f["sha256"].encode()).hexdigest()}
            for f in rec["corpus"]["files"]
        ]
        rec = {
            **rec,
            "corpus": {"files": files},
            "night": {"work_dir": work},
            "scores": {"domain": {"masked_lm_loss": 2.0}},
        }

        def fill(directory: str) -> None:
            write_json(f"{directory}/export/model.json", {})

        line.commit(name, rec, fill, promote=rec["status"] != REFUSED)
    assert line.current() == "v0004"
    assert cli.main(["line", "show", line.url]) == 0
    shown = capsys.readouterr().out
    assert "* v0004  promoted" in shown and "refused: " in shown and "in-domain 2.0000" in shown
    assert cli.main(["line", "prune", line.url]) == 0  # a dry run
    assert "would remove" in capsys.readouterr().out and (tmp_path / "line" / "v0003").exists()
    assert cli.main(["line", "prune", line.url, "v0002", "--yes"]) == 2
    assert "v0002: is an ancestor of v0004" in capsys.readouterr().err
    assert cli.main(["line", "prune", line.url, "--yes"]) == 0
    assert sorted(line.records()) == ["v0001", "v0002", "v0004"]
    assert not (tmp_path / "line" / "nights" / "v0003-work").exists()
    assert (tmp_path / "line" / "nights" / "v0004-work").exists()
    assert cli.main(["line", "prune", line.url, "--nights", "--yes"]) == 0
    assert not (tmp_path / "line" / "nights" / "v0004-work").exists()
    assert sorted(line.records()) == ["v0001", "v0002", "v0004"]
    assert cli.main(["line", "show", str(tmp_path / "nothing")]) == 2
