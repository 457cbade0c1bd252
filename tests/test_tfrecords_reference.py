"""Format and statistics against google-research/albert's own output (../shared/data/reference).

The reference is not reproducible (unseeded NumPy RNG), so we compare format and statistics, not
bytes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shared_path

from pipelines.tfrecords import stage as tfrecords

pytestmark = pytest.mark.shared_data


def read_all(files, max_seq_length=128, max_predictions=20) -> dict[str, np.ndarray]:
    import tensorflow as tf
    from pretrain_testdata import feature_spec  # heavy: imports TensorFlow

    dataset = tf.data.TFRecordDataset([str(f) for f in files])
    raw = next(iter(dataset.batch(1_000_000)))
    # parse without a spec first: the reference's feature names, dtypes and lengths as written
    example = tf.train.Example.FromString(next(iter(dataset)).numpy())
    kinds = {
        name: (
            "float32" if feature.float_list.value else "int64",
            len(feature.float_list.value or feature.int64_list.value),
        )
        for name, feature in example.features.feature.items()
    }
    parsed = tf.io.parse_example(raw, feature_spec(max_seq_length, max_predictions))
    return kinds, {name: value.numpy() for name, value in parsed.items()}


def statistics(records: dict[str, np.ndarray]) -> dict:
    """Label balance, predictions and tokens per instance, masked n-gram runs, replacement mix."""
    runs = np.zeros(4)
    replaced = np.zeros(3)
    for i in range(len(records["input_ids"])):
        weights = records["masked_lm_weights"][i] > 0
        positions = records["masked_lm_positions"][i][weights]
        labels = records["masked_lm_ids"][i][weights]
        now = records["input_ids"][i][positions]
        replaced += [(now == 4).sum(), (now == labels).sum(), ((now != 4) & (now != labels)).sum()]
        masked = np.zeros(records["input_ids"].shape[1] + 1, bool)
        masked[positions] = True
        words = 0
        for t, is_masked in enumerate(masked):  # runs of consecutive masked whole words
            if is_masked:
                words += int(records["token_boundary"][i][t])
            elif words:
                runs[min(words, 3)] += 1
                words = 0
    return {
        "labels": records["next_sentence_labels"].mean(),
        "predictions": records["masked_lm_weights"].sum(1).mean(),
        "tokens": records["input_mask"].sum(1).mean(),
        "runs": runs[1:] / runs.sum(),
        "replaced": replaced / replaced.sum(),
    }


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    reference = shared_path("reference")
    output = tmp_path_factory.mktemp("ours") / "seq128"
    tfrecords.run(
        tfrecords.TFRecordsConfig(
            input=str(reference / "corpus4.txt"),
            spm_model=str(reference / "sp16k.model"),
            output=str(output),
            max_seq_length=128,
            max_predictions_per_seq=20,
            masked_lm_prob=0.15,
            dupe_factor=1,
            seed=12345,
            num_shards=2,
        )
    )
    return output


def test_same_features_as_the_reference(ours):
    ref_kinds, _ = read_all([shared_path("reference", "ref_seq128.tfrecord")])
    our_kinds, _ = read_all(sorted(ours.glob("*.tfrecord")))
    assert our_kinds == ref_kinds
    metadata = json.loads((ours / "metadata.json").read_text())
    assert {
        name: (spec["dtype"], spec["shape"][0]) for name, spec in metadata["features"].items()
    } == ref_kinds


def test_statistics_close_to_the_reference(ours):
    _, reference = read_all([shared_path("reference", "ref_seq128.tfrecord")])
    _, records = read_all(sorted(ours.glob("*.tfrecord")))
    assert len(records["input_ids"]) == pytest.approx(len(reference["input_ids"]), rel=0.03)
    ref, our = statistics(reference), statistics(records)
    assert our["labels"] == pytest.approx(ref["labels"], abs=0.04)
    assert our["predictions"] == pytest.approx(ref["predictions"], abs=0.2)
    assert our["tokens"] == pytest.approx(ref["tokens"], abs=1.0)
    np.testing.assert_allclose(our["runs"], ref["runs"], atol=0.02)
    np.testing.assert_allclose(our["replaced"], ref["replaced"], atol=0.015)


def test_token_boundary_is_the_references(ours):
    """token_boundary is a function of the piece: ours and the reference's agree on every shared
    piece."""
    _, reference = read_all([shared_path("reference", "ref_seq128.tfrecord")])
    _, records = read_all(sorted(ours.glob("*.tfrecord")))

    def boundary_of(rec):
        table = {}
        keep = rec["input_mask"] == 1
        for i, (positions, weights) in enumerate(
            zip(rec["masked_lm_positions"], rec["masked_lm_weights"])
        ):
            keep[i, positions[weights > 0]] = False  # replaced pieces keep the original's boundary
        for piece, boundary in zip(rec["input_ids"][keep], rec["token_boundary"][keep]):
            table.setdefault(int(piece), set()).add(int(boundary))
        return table

    ref_table, our_table = boundary_of(reference), boundary_of(records)
    common = set(ref_table) & set(our_table)
    assert len(common) > 1000
    assert all(len(boundaries) == 1 for boundaries in ref_table.values())
    assert {p: ref_table[p] for p in common} == {p: our_table[p] for p in common}
