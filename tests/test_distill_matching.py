"""TinyBERT's intermediate losses (`model.distill.matching`): which layer applications meet, the
attention scores the backbone shows (the same outputs as without them; 0 at hidden keys), and a
distiller whose student is narrower than its teacher: its loss is the soft targets' plus each
pair's weighted mean squared error through the learned projection, and a training step moves the
student and the projection, not the teacher; SQuAD's spans, RACE's choices and STS-B's score
train with them too."""

from __future__ import annotations

import numpy as np
import pytest

from model.distill.matching import feature_names, matched_applications


def test_each_student_application_meets_the_teachers_at_the_same_relative_depth():
    assert matched_applications(4, 12) == [(0, 2), (1, 5), (2, 8), (3, 11)]  # TinyBERT's 3m
    assert matched_applications(3, 4) == [(0, 1), (1, 2), (2, 3)]
    assert matched_applications(4, 2) == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert feature_names(2, 4) == [
        ("hidden_0", "hidden_0"),
        ("hidden_1", "hidden_2"),
        ("hidden_2", "hidden_4"),
        ("attention_0", "attention_1"),
        ("attention_1", "attention_3"),
    ]


def _models(kind: str = "classification", labels: int = 2):
    from model.finetune.models import FinetuneModel
    from model.network.backbone import AlbertBackbone
    from model.network.config import get_preset

    def model(**sizes):
        config = get_preset("albert-nano", vocab_size=40, max_position_embeddings=16, **sizes)
        return FinetuneModel(AlbertBackbone(config), kind, labels, name="finetune")

    teacher = model(hidden_size=32, num_attention_heads=4, num_hidden_layers=4)
    student = model(hidden_size=16, num_attention_heads=2, num_hidden_layers=2)
    return teacher, student


def _batch():
    rng = np.random.default_rng(0)
    mask = np.ones((2, 8), "int32")
    mask[1, 5:] = 0
    x = {
        "input_ids": rng.integers(1, 40, (2, 8)).astype("int32") * mask,
        "segment_ids": np.zeros((2, 8), "int32"),
        "input_mask": mask,
        "teacher": {"logits": np.array([[1.0, -1.0], [0.0, 2.0]], "float32")},
    }
    return x, np.array([0, 1], "int32")


@pytest.mark.keras
def test_the_attention_scores_change_nothing_and_hide_the_padding():
    teacher, _ = _models()
    x, _ = _batch()
    inputs = {k: v for k, v in x.items() if k != "teacher"}
    plain = teacher.backbone(inputs)["sequence_output"]
    outputs = teacher.backbone(inputs, output_attention_scores=True)
    np.testing.assert_allclose(outputs["sequence_output"], plain, atol=1e-5)
    scores = [np.asarray(s) for s in outputs["attention_scores"]]
    assert len(scores) == 4 and scores[0].shape == (2, 4, 8, 8)
    assert all((s[1, :, :, 5:] == 0).all() and (s[0] != 0).any() for s in scores)


@pytest.mark.keras
def test_the_loss_adds_each_weighted_pair_and_a_step_trains_the_projection_not_the_teacher():
    import keras

    from model.distill.losses import make_distiller
    from model.finetune.kinds import task_kind

    teacher, student = _models()
    x, y = _batch()
    alpha, hidden, attention = 0.6, 2.0, 0.5
    sst2 = task_kind("sst2")
    matched = make_distiller(student, sst2, 2.0, alpha, teacher, hidden, attention)
    plain = make_distiller(student, sst2, 2.0, alpha)
    for distiller in (matched, plain):
        distiller.compile(
            optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy"
        )

    def loss(distiller):
        value = distiller.compute_loss(x, y, distiller(x, training=False), training=False)
        return float(keras.ops.convert_to_numpy(value))

    inputs = {k: v for k, v in x.items() if k != "teacher"}
    s_out = student.call_with_outputs(inputs, intermediate=True)[1]
    t_out = teacher.call_with_outputs(inputs, intermediate=True)[1]
    mask = inputs["input_mask"][:, :, None].astype("float32")
    projected = [np.asarray(matched.projection(h)) * mask for h in s_out["hidden_states"]]
    teacher_states = [np.asarray(h) * mask for h in t_out["hidden_states"]]
    queries = mask[:, None]  # padding queries' rows are 0 too
    s_scores = [(np.asarray(a) * queries).mean(axis=1) for a in s_out["attention_scores"]]
    t_scores = [(np.asarray(a) * queries).mean(axis=1) for a in t_out["attention_scores"]]
    mse = lambda a, b: float(np.mean((a - b) ** 2))
    pairs = hidden * sum(mse(projected[s], teacher_states[t]) for s, t in ((0, 0), (1, 2), (2, 4)))
    pairs += attention * sum(mse(s_scores[s], t_scores[t]) for s, t in ((0, 1), (1, 3)))
    assert loss(matched) - loss(plain) == pytest.approx(alpha * pairs, rel=1e-4)

    before = [[np.copy(w) for w in m.get_weights()] for m in (teacher, student)]
    projection = np.copy(matched.projection.kernel)
    matched.train_on_batch(x, y)
    assert all(np.array_equal(a, b) for a, b in zip(before[0], teacher.get_weights()))
    assert not all(np.array_equal(a, b) for a, b in zip(before[1], student.get_weights()))
    assert not np.array_equal(projection, np.asarray(matched.projection.kernel))


def test_intermediate_weights_with_alpha_0_are_refused():
    from pydantic import ValidationError

    from model.distill.config import DistillConfig

    common = {"task": "sst2", "teacher": "t", "student": "albert-nano", "spm_model": "s"}
    common |= {"data_dir": "d", "output": "o"}
    with pytest.raises(ValidationError, match="--alpha 0 trains on the labels alone"):
        DistillConfig(**common, alpha=0, hidden_weight=1.0)
    assert DistillConfig(**common, alpha=0).attention_weight == 0
    with pytest.raises(ValidationError, match="hidden_weight"):  # no number: the field's error
        DistillConfig(**common, alpha=0.5, hidden_weight="abc")


@pytest.mark.keras
@pytest.mark.parametrize("kind", ["span", "multiple_choice", "regression"])
def test_every_task_kind_trains_with_the_intermediate_losses(kind):
    import keras

    from model.distill.losses import make_distiller
    from model.finetune.kinds import task_kind

    teacher, student = _models(kind, 1 if kind == "regression" else 2)
    x, y = _batch()
    sce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if kind == "span":
        x["teacher"] = {"start_logits": np.zeros((2, 8), "float32")} | {
            "end_logits": np.ones((2, 8), "float32")
        }
        y, loss = {"start_logits": y, "end_logits": y}, {"start_logits": sce, "end_logits": sce}
    elif kind == "multiple_choice":  # 2 questions x 2 choices of 8 tokens
        x = {k: np.stack([v, v]) if k != "teacher" else v for k, v in x.items()}
        x = {k: np.swapaxes(v, 0, 1) if k != "teacher" else v for k, v in x.items()}
        loss = sce
    else:
        x["teacher"] = {"logits": np.array([[0.5], [2.0]], "float32")}
        y, loss = np.array([1.0, 3.0], "float32"), keras.losses.MeanSquaredError()
    task = {"span": "squad1", "multiple_choice": "race", "regression": "stsb"}[kind]
    distiller = make_distiller(student, task_kind(task), 2.0, 0.5, teacher, 1.0, 1.0)
    distiller.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss)
    projection = np.copy(distiller.projection.kernel)
    value = distiller.train_on_batch(x, y)
    assert np.isfinite(value).all()
    assert not np.array_equal(projection, np.asarray(distiller.projection.kernel))
