"""pipelines.tfrecords: impossible masking settings are refused, a sequence length that cuts most
of the text warns."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import shared_path

from albert.config import ConfigError, load_config
from pipelines.tfrecords import metadata as tfrecords_metadata
from pipelines.tfrecords import stage as tfrecords
from pipelines.tfrecords.stage import TFRecordsConfig

pytestmark = pytest.mark.backend_free

BASE = {"input": "corpus", "spm_model": "spiece.model", "output": "out"}


def test_more_predictions_than_the_sequence_holds_is_refused():
    with pytest.raises(
        ConfigError,
        match=r"TFRecordsConfig: Value error, max_predictions_per_seq=20 is more than a "
        r"sequence can hold: max_seq_length=8 leaves 5 maskable tokens",
    ):
        load_config(TFRecordsConfig, overrides={**BASE, "max_seq_length": 8})
    with pytest.raises(
        ConfigError, match=r"max_predictions_per_seq=126 is more than a sequence can hold"
    ):
        load_config(
            TFRecordsConfig,
            overrides={**BASE, "max_seq_length": 128, "max_predictions_per_seq": 126},
        )
    assert load_config(
        TFRecordsConfig, overrides={**BASE, "max_seq_length": 128, "max_predictions_per_seq": 125}
    )


def test_passes_are_the_dupe_factor_for_static_masks_and_one_for_dynamic_masks():
    assert TFRecordsConfig(**BASE, dupe_factor=5).passes == 5
    assert TFRecordsConfig(**BASE, dupe_factor=5, masking="dynamic").passes == 1
    assert "passes" not in TFRecordsConfig(**BASE).model_dump()  # metadata.json's options


def test_truncation_counts_what_instances_drop_and_warns_only_about_a_chosen_length():
    config = TFRecordsConfig(**BASE, max_seq_length=8, max_predictions_per_seq=2, dupe_factor=2)
    counts = {
        "document_tokens": 1000,
        "instances": 100,
        "tokens": 100 * 8,
    }  # 500 of 2 x 1000 text tokens kept
    cut = tfrecords_metadata.truncation(config, counts)
    assert cut == {
        "max_seq_length": 8,
        "passes": 2,
        "corpus_tokens": 2000,
        "dropped_tokens": 1500,
        "dropped_fraction": 0.75,
    }
    assert tfrecords_metadata.truncation_note(config, cut) == (
        logging.WARNING,
        (
            "corpus: --max-seq-length 8 dropped 75% of the corpus's tokens (1,500 of 2,000 over 2 "
            "pass(es)): "
            "text beyond 5 pieces per instance is truncated; raise --max-seq-length"
        ),
    )
    default = TFRecordsConfig(**BASE, dupe_factor=2)  # 512: the stage's default, no user's choice
    level, message = tfrecords_metadata.truncation_note(
        default, tfrecords_metadata.truncation(default, counts)
    )
    assert level == logging.INFO and "--max-seq-length 512 dropped" in message
    little = tfrecords_metadata.truncation(config, {**counts, "tokens": 100 * 3 + 1900})  # 5% cut
    assert tfrecords_metadata.truncation_note(config, little) is None


def test_short_sequences_on_real_text_warn_with_numbers(tmp_path, caplog):
    reference = shared_path("reference")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = (reference / "corpus4.txt").read_text(encoding="utf-8").splitlines(True)[:400]
    (corpus / "part.txt").write_text("".join(lines), encoding="utf-8")
    config = TFRecordsConfig(
        input=str(corpus),
        spm_model=str(reference / "sp16k.model"),
        output=str(tmp_path / "out"),
        max_seq_length=8,
        max_predictions_per_seq=2,
        dupe_factor=1,
        num_shards=1,
    )
    with caplog.at_level(logging.WARNING, logger="pipelines.tfrecords.stage"):
        tfrecords.run(config)
    [warning] = [
        r.getMessage() for r in caplog.records if "--max-seq-length 8 dropped" in r.getMessage()
    ]
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert metadata["truncation"]["dropped_fraction"] > 0.5
    percent = int(warning.split(" dropped ")[1].split("%")[0])
    assert percent > 50 and "text beyond 5 pieces per instance is truncated" in warning
