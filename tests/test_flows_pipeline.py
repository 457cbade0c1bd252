"""The whole DAG under prefect_test_harness on a small corpus of our own: second run cached,
one changed parameter re-runs that stage and the ones after it (more steps: a resumed pretrain), a
transient failure is retried, and no run deletes an earlier finished output (new corpus,
vocabulary and model shape: all moved aside); fine-tuning downstream beside a random twin;
keras-hub loads the export; the flow's own defaults warn about nothing; a failed stage leaves no
record behind."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from browser import image_widths
from conftest import prefect_server

RTE = Path(__file__).parent / "fixtures" / "tasks" / "glue" / "RTE"
WORDS = [
    "river",
    "city",
    "stone",
    "music",
    "garden",
    "winter",
    "light",
    "paper",
    "forest",
    "engine",
    "ocean",
    "market",
    "story",
    "teacher",
    "window",
    "bridge",
    "mountain",
    "village",
    "summer",
    "letter",
]


def write_corpus(
    path: Path, documents: int = 60, words: tuple[int, int] = (6, 14), seed: int = 0
) -> Path:
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(documents):
        sentences = [
            " ".join(rng.choice(WORDS, size=rng.integers(*words))).capitalize() + "."
            for _ in range(rng.integers(6, 10))
        ]
        docs.append("\n".join(sentences))
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


def tiny_flow_flags(corpus: Path, run_dir: Path, steps: int = 4) -> list[str]:
    """`albert run`'s flags for a run of seconds on `corpus` (a `write_corpus` file)."""
    return [
        *("--input", str(corpus), "--run-dir", str(run_dir), "--vocab-size", "60"),
        *("--preset", "albert-nano"),
        *("--num-shards", "2", "--steps", str(steps), "--batch-size", "8", "--eval-batches", "2"),
        *("--segment", '{"format": "text", "num_shards": 2, "quality": false}'),
        *("--pretrain", '{"jit_compile": false, "progress": false}'),
    ]


def outputs(run_dir: Path) -> dict[str, str]:
    """Every stage output in `run_dir`, moved-aside ones included: name -> digest of its files."""

    def digest(root: Path) -> str:
        hashed = hashlib.sha256()
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            hashed.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes())
        return hashed.hexdigest()

    stages = (p for p in run_dir.iterdir() if p.is_dir() and p.name not in (".prefect", "plots"))
    return {p.name: digest(p) for p in stages}


@pytest.mark.slow
def test_pipeline_cached_rerun_and_transient_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import keras_hub

    import pipelines.tfrecords.stage
    from albert.errors import StageError
    from flows.pipeline.flow import PretrainPipelineConfig, pretrain_pipeline

    # --max-seq-length is the flow's default (64), not the user's choice; long sentences: it cuts
    corpus = write_corpus(tmp_path / "corpus.txt", words=(10, 40))
    config = PretrainPipelineConfig(
        input=[str(corpus)],
        run_dir=str(tmp_path / "run"),
        vocab_size=60,
        num_shards=2,
        steps=2,
        preset="albert-nano",  # the smallest model: the flow, not the model, is under test
        batch_size=8,
        eval_batches=2,
        segment={"format": "text", "num_shards": 2, "quality": False},
        pretrain={"jit_compile": False, "progress": False},
    )
    with prefect_server():
        no_input = tmp_path / "no-input"
        with pytest.raises(StageError, match="no file matches"):
            pretrain_pipeline(
                config.model_copy(
                    update={"input": [str(tmp_path / "none-*.txt")], "run_dir": str(no_input)}
                )
            )
        assert not [path for path in no_input.rglob("*") if path.is_file()]  # no failed task record

        tfrecords_log = logging.getLogger(
            "pipelines.tfrecords.stage"
        )  # Prefect resets root handlers
        tfrecords_log.addHandler(caplog.handler)
        try:
            with caplog.at_level(logging.INFO, logger=tfrecords_log.name):
                first = pretrain_pipeline(config)
        finally:
            tfrecords_log.removeHandler(caplog.handler)
        cut = [r for r in caplog.records if "--max-seq-length 64 dropped" in r.getMessage()]
        assert cut and all(r.levelno == logging.INFO for r in cut)  # the default cuts: no warning
        assert "| corpus text cut by the sequence length |" in Path(first["report"]).read_text()
        preset = tmp_path / "run" / "pretrain" / "export" / "keras_hub"
        backbone = keras_hub.models.AlbertBackbone.from_preset(str(preset))
        assert backbone.vocabulary_size == 60
        assert not any(stage["cached"] for stage in first["stages"].values())
        assert (
            Path(first["report"]).is_file()
            and (tmp_path / "run" / "plots" / "training-curves.png").is_file()
        )
        assert 0 <= first["evaluation"]["masked_lm_accuracy"] <= 1
        assert 0 <= first["baseline"]["masked_lm_accuracy"] <= 1  # the unigram baseline beside it
        report = Path(first["report"]).read_text()
        assert "held-out score" in report and "whole documents the model never trained on" in report
        # tests/test_flows_report.py skips with the reason where it is absent
        if shutil.which("chromium"):
            assert all(width > 0 for _, width in image_widths(tmp_path / "run" / "report.html"))

        second = pretrain_pipeline(config)
        assert all(stage["cached"] for stage in second["stages"].values()), second["stages"]
        assert second["evaluation"] == first["evaluation"]

        pretrain_dir = tmp_path / "run" / "pretrain"
        before = (pretrain_dir / "metrics.jsonl").read_text().splitlines()
        longer = config.model_copy(update={"steps": 3})
        extended = pretrain_pipeline(longer)  # --steps 2 -> 3 resumes: step 3 only
        assert [n for n, s in extended["stages"].items() if not s["cached"]] == [
            "pretrain",
            "heldout",
        ]
        assert "moved_aside" not in extended["stages"]["pretrain"]
        after = [
            json.loads(line) for line in (pretrain_dir / "metrics.jsonl").read_text().splitlines()
        ]
        assert (pretrain_dir / "metrics.jsonl").read_text().splitlines()[: len(before)] == before
        # step 3 only (the flow evaluates held-out every max(1, steps // 4) = 1 step)
        assert [(r["step"], r["split"]) for r in after[len(before) :]] == [
            (3, "train"),
            (3, "heldout"),
        ]

        real_run, attempts = pipelines.tfrecords.stage.run, []

        def flaky_run(*args, **kwargs):  # a transient I/O failure on the first attempt only
            attempts.append(1)
            if len(attempts) == 1:
                raise OSError(5, "injected transient I/O error")
            return real_run(*args, **kwargs)

        monkeypatch.setattr(pipelines.tfrecords.stage, "run", flaky_run)
        downstream = {
            "downstream": [f"rte={RTE}"],
            "finetune": {
                "train_file": str(RTE / "dev.tsv"),
                "train_steps": 1,
                "max_seq_length": 32,
                "batch_size": 2,
            },
        }
        # no --eval: the set a --downstream task is scored on is checked without being asked
        evaluation_sets = {"eval": []}
        # Nothing deletes a finished output, upstream stages included: a new corpus, vocabulary
        # (so a new model shape) and masking re-run every stage; each earlier output stays, whole,
        # under the name the run reports.
        before = outputs(tmp_path / "run")
        other = write_corpus(tmp_path / "other.txt", documents=50)
        changes = {"input": [str(other)], "vocab_size": 50}
        changed = pretrain_pipeline(
            longer.model_copy(update={"dupe_factor": 3, **changes, **downstream, **evaluation_sets})
        )
        assert len(attempts) == 2
        after, stages = outputs(tmp_path / "run"), changed["stages"]
        assert not any(stage["cached"] for stage in stages.values())
        assert list(stages) == [
            "segment",
            "decontaminate",
            "vocab",
            "tfrecords",
            "pretrain",
            "heldout",
            "finetune-rte",
            "finetune-rte-random",
        ]
        moved = {n: Path(s["moved_aside"]).name for n, s in stages.items() if "moved_aside" in s}
        assert list(moved) == ["segment", "vocab", "tfrecords", "pretrain", "heldout"]
        assert all(after[moved[n]] == before[n] for n in moved)
        assert all(after.get(name) == before[name] for name in before if name not in moved)
        aside = Path(stages["pretrain"]["moved_aside"])  # another model shape, vocabulary, data
        assert (aside / "checkpoints" / "ckpt-000000003").is_dir()
        assert (aside / "export" / "model.keras").is_file()
        report = Path(changed["report"]).read_text()
        for name in ("vocab", "pretrain"):
            assert f"moved aside to `{stages[name]['moved_aside']}`" in report
        assert "**Evaluation examples in the corpus (13-gram):** rte dev 0 of" in report
        # the pretrained model and its random twin, same budget and seed
        [rte] = changed["downstream"]
        assert rte["metric"] == "accuracy"
        assert "accuracy" in rte["pretrained"] and "accuracy" in rte["random"]


def test_remove_contaminated_makes_the_later_stages_read_the_cleaned_corpus(tmp_path: Path) -> None:
    from albert.config import ConfigError, build_config
    from flows.pipeline.flow import PretrainPipelineConfig, stage_configs

    run_dir = tmp_path / "run"
    config = PretrainPipelineConfig(run_dir=str(run_dir), eval=[str(RTE)], remove_contaminated=True)
    configs = stage_configs(config)
    assert list(configs)[:3] == ["segment", "decontaminate", "vocab"]
    assert configs["decontaminate"].corpus == str(run_dir / "segment")
    assert configs["decontaminate"].remove
    assert configs["vocab"].input == configs["tfrecords"].input == str(run_dir / "decontaminate")
    assert "decontaminate" not in stage_configs(
        config.model_copy(update={"eval": [], "remove_contaminated": False})
    )
    # a --downstream task's dev set is an evaluation set by default, read only, once
    tuned = config.model_copy(update={"downstream": [f"rte={RTE}"], "remove_contaminated": False})
    checked = stage_configs(tuned)["decontaminate"]
    assert checked.eval == [str(RTE), str(RTE / "dev.tsv")] and not checked.remove
    alone = stage_configs(tuned.model_copy(update={"eval": []}))["decontaminate"]
    assert alone.eval == [str(RTE / "dev.tsv")]
    unchecked = tuned.model_copy(update={"eval": [], "check_downstream": False})
    assert "decontaminate" not in stage_configs(unchecked)
    # a user's task (its directory's task.yaml) is checked too: decontamination reads its dev file
    own = tmp_path / "reviews"
    own.mkdir()
    (own / "task.yaml").write_text("train: train.csv\ndev: dev.csv\ntext_column: text\n")
    mine = tuned.model_copy(update={"eval": [], "downstream": [f"rte={RTE}", f"reviews={own}"]})
    assert mine.evaluation_sets() == [str(RTE / "dev.tsv"), str(own)]
    with pytest.raises(ConfigError, match="--remove-contaminated needs an evaluation set"):
        build_config(PretrainPipelineConfig, {"run_dir": "r", "remove_contaminated": True})
