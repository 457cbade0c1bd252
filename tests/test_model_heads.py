"""Task heads on the backbone: classification/regression, span extraction, multiple choice, MLM."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from model.network.backbone import AlbertBackbone
from model.network.config import get_preset
from model.network.heads import (
    MaskedLMHead,
    MultipleChoiceHead,
    SequenceClassificationHead,
    SpanExtractionHead,
    gather_positions,
)

CONFIG = get_preset("albert-nano", vocab_size=50)


def backbone_outputs(batch_size=4, seq_len=8):
    rng = np.random.default_rng(0)
    mask = np.ones((batch_size, seq_len), "int32")
    mask[0, 5:] = 0
    inputs = {
        "input_ids": rng.integers(5, 50, (batch_size, seq_len)).astype("int32") * mask,
        "segment_ids": np.zeros((batch_size, seq_len), "int32"),
        "input_mask": mask,
    }
    return AlbertBackbone(CONFIG)(inputs), mask


@pytest.mark.keras
def test_task_heads_shapes_and_masking():
    outputs, mask = backbone_outputs()
    pooled, sequence = outputs["pooled_output"], outputs["sequence_output"]
    assert tuple(SequenceClassificationHead(CONFIG, 3)(pooled).shape) == (4, 3)
    assert tuple(SequenceClassificationHead(CONFIG, 1)(pooled).shape) == (4, 1)  # regression
    with pytest.raises(ValueError, match="num_labels"):
        SequenceClassificationHead(CONFIG, 0)

    spans = SpanExtractionHead(CONFIG)(sequence, mask)
    start = np.asarray(spans["start_logits"])
    assert start.shape == (4, 8) and (start[0, 5:] <= -1e8).all() and (start[1] > -1e8).all()
    assert np.asarray(spans["end_logits"]).argmax(-1)[0] < 5

    choices = MultipleChoiceHead(CONFIG)(pooled, num_choices=2)
    assert tuple(choices.shape) == (2, 2)


@pytest.mark.keras
def test_masked_lm_head_is_tied_to_the_embeddings():
    head = MaskedLMHead(CONFIG)
    head.build()
    hidden = np.random.default_rng(1).normal(size=(2, 3, 32)).astype("float32")
    table = np.random.default_rng(2).normal(size=(50, 16)).astype("float32")
    logits = np.asarray(head(hidden, table))
    assert logits.shape == (2, 3, 50)
    np.testing.assert_allclose(
        np.asarray(head(hidden, 2 * table)),
        2 * logits - np.asarray(head.bias),
        rtol=1e-4,
        atol=1e-4,
    )
    gathered = gather_positions(hidden, np.array([[2, 0], [1, 1]], "int32"))
    np.testing.assert_array_equal(np.asarray(gathered)[0, 0], hidden[0, 2])


def test_heads_serialise():
    for head in (
        SequenceClassificationHead(CONFIG, 3, name="cls"),
        SpanExtractionHead(CONFIG),
        MultipleChoiceHead(CONFIG),
        MaskedLMHead(CONFIG),
    ):
        restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(head))
        assert type(restored) is type(head) and restored.config == CONFIG
        assert getattr(restored, "num_labels", 3) == 3
