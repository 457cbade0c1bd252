"""Making a model line (flows.line.records) from a base, and what every night of it shares: the
line's run settings in a night's working directory, the git revision a version records.

`make_line` writes LINE/line.json from --base: the base's model and vocabulary, its general
TFRecords (training shards with their record counts, for replay; the held-out set, for the gate),
their instance shape, the base's preset (read from the model). `make_base_version` writes v0001:
the base's export and vocabulary, scored on the general held-out set, and points `current` at it.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from albert.errors import ConfigError, StageError
from albert.fs import exists, file_digest, join, listing_digest
from albert.vocabulary_record import record_path
from flows.domain_config import resolve_base
from flows.engine import tasks
from flows.line.config import LineConfig
from flows.line.files import copy_tree
from flows.line.near_dup import keep_signatures
from flows.line.records import (
    BASE,
    LINE_FILE,
    NIGHTS,
    ModelLine,
    version_name,
    write_json,
)
from flows.run_plan import run_plan
from model.input.replay import count_records, night_files

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_line(config: LineConfig, line: ModelLine) -> None:
    """line.json from --base: its model and vocabulary, its general TFRecords (training shards
    with their record counts for replay, held-out set for the gate), their instance shape."""
    model, spm = resolve_base(config)
    general = config.general_data or join(config.base, "tfrecords")
    if not exists(join(general, "metadata.json")):
        raise ConfigError(
            f"LineConfig.general_data: {general} holds no TFRecords stage output "
            "(metadata.json); pass the base's general TFRecords with --general-data"
        )
    metadata, training, heldout = night_files(general)
    if not heldout:
        raise StageError(f"{general}: no held-out shards named in metadata.json: no general set")
    sha = file_digest(spm)
    if metadata.get("spm_model_sha256") not in (None, sha):
        raise ConfigError(
            f"LineConfig.spm_model: {spm} is not the vocabulary of {general} "
            "(its metadata.json names another sha256)"
        )
    print(f"{line.url}: a new line from {config.base}; counting the general records of {general}")
    write_json(
        line.path(LINE_FILE),
        {
            "format": "albert-model-line-v1",
            "created": utc_now(),
            "base": {
                "path": config.base,
                "model_file": model,
                "spm_model": spm,
                "vocab_sha256": sha,
            },
            "preset": base_preset(model, config),
            "tfrecords": {
                "max_seq_length": metadata["max_seq_length"],
                "max_predictions_per_seq": metadata["max_predictions_per_seq"],
                "do_lower_case": metadata.get("do_lower_case", True),
                "masking": metadata.get("masking", "static"),
            },
            "general": {
                "data": general,
                "shards": training,
                "counts": [count_records(p) for p in training],
                "listing": listing_digest(general),
            },
        },
    )
    make_base_version(config, line, line.settings())


def make_base_version(config: LineConfig, line: ModelLine, settings: dict) -> None:
    """v0001: the base's export and vocabulary, scored on the general held-out set."""
    base = settings["base"]
    run = night_config(config, settings, line.path(NIGHTS, "base"))
    score = run.held_out_eval_config(base["model_file"], "heldout-general").model_copy(
        update={"data": settings["general"]["data"]}
    )
    outcomes = run_plan(
        [(tasks.heldout.with_options(name="heldout-general"), "heldout-general", {})],
        {"heldout-general": score},
        run.result_storage(),
    )
    model = base["model_file"]
    hugging_face = exists(join(model, "config.json"))
    inside = "hf" if hugging_face else "model.keras"
    record = {
        "parent": None,
        "status": BASE,
        "reason": f"the line's base: {base['path']}",
        "created": utc_now(),
        "git": git_revision(),
        "export": f"export/{inside}",
        "corpus": {"files": []},
        "scores": {"general": outcomes["heldout-general"].result},
        "settings": config.model_dump(mode="json"),
        "night": {"work_dir": run.run_dir},
    }

    def fill(directory: str) -> None:
        if model.endswith("/export/model.keras"):  # a run directory's export: all its formats
            copy_tree(model.rsplit("/", 1)[0], join(directory, "export"))
        elif model.endswith(".keras") or hugging_face:
            copy_tree(model, join(directory, "export", inside))
        else:  # a TF1 checkpoint: converted once
            save_keras(model, join(directory, "export", inside))
        keep_signatures(join(base["path"], "segment"), directory)
        copy_tree(base["spm_model"], join(directory, "vocab", "spiece.model"))
        vocab = base["spm_model"].removesuffix(".model") + ".vocab"
        if exists(vocab):
            copy_tree(vocab, join(directory, "vocab", "spiece.vocab"))
        if exists(record_path(base["spm_model"])):  # the preprocessing its stages read
            copy_tree(record_path(base["spm_model"]), join(directory, "vocab", "spiece.json"))

    line.commit(version_name(1), record, fill, promote=True)
    print(f"{line.url}: v0001 is the base {base['path']} (current)")


def base_preset(model: str, config: LineConfig) -> str:
    """The preset of the base model: --preset when it matches the model's shape, else the one
    preset that does (ConfigError when none does: a line further pretrains a preset's shape)."""
    from model.conversion.convert import load_pretrained
    from model.network.config import PRESETS, get_preset  # heavy: loads Keras

    shape = load_pretrained(model).config
    matches = [n for n in PRESETS if get_preset(n, vocab_size=shape.vocab_size) == shape]
    if config.preset in matches:
        return config.preset
    if matches and "preset" not in config.model_fields_set:
        return matches[0]
    raise ConfigError(
        f"LineConfig.preset: the base {model} is "
        f"{'preset ' + ', '.join(matches) if matches else 'no known preset'}, not {config.preset}"
    )


def save_keras(model: str, target: str) -> None:
    """Load any model `load_pretrained` reads and save it as a .keras file at `target`."""
    from model.conversion.convert import load_pretrained  # heavy: loads Keras

    with tempfile.TemporaryDirectory() as scratch:
        local = str(Path(scratch) / "model.keras")
        load_pretrained(model).save(local)
        copy_tree(local, target)


def night_config(config: LineConfig, settings: dict, work: str) -> LineConfig:
    """The run config of a night in `work`: the line's instance shape, documents held out by
    their hash alone (no --heldout-min-documents), every held-out sequence scored unless
    --eval-batches caps it."""
    shape = settings["tfrecords"]
    if (
        "max_seq_length" in config.model_fields_set
        and config.max_seq_length != shape["max_seq_length"]
    ):
        raise ConfigError(
            "LineConfig.max_seq_length: the line was made with "
            f"{shape['max_seq_length']} ({join(config.line, LINE_FILE)}); leave it out"
        )
    if "preset" in config.model_fields_set and config.preset != settings["preset"]:
        raise ConfigError(
            f"LineConfig.preset: the line's model is {settings['preset']}; leave it out"
        )
    return config.model_copy(
        update={
            "run_dir": work,
            "preset": settings["preset"],
            "max_seq_length": shape["max_seq_length"],
            "heldout_min_documents": 0,
            "eval_batches": config.eval_batches
            if "eval_batches" in config.model_fields_set
            else None,
            "tfrecords": {
                **config.tfrecords,
                "max_predictions_per_seq": shape["max_predictions_per_seq"],
                "do_lower_case": shape["do_lower_case"],
                "masking": shape.get("masking", "static"),
            },
        }
    )


def git_revision() -> dict[str, Any]:
    """The code's git commit and whether the work tree had changes (None outside a checkout)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO_ROOT), *args],
                check=False,
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
