"""A team's own task from its files: the rows read (quotes, BOMs, a header or none, JSON Lines),
the kind and labels found, the held-out dev share, the one-line errors, and a fine-tune end to end
on a header-less CSV with two text columns and integer labels."""

from __future__ import annotations

import json

import pytest
from test_finetune_run import SMALL, spm_model  # noqa: F401  (the session's tiny vocabulary)
from test_predict import huggingface_like_predict, served_like_predict
from test_predict import lines as predicted_lines

from albert.config import ConfigError, load_config
from albert.errors import StageError
from albert.labelled_files import read_columns
from flows import predict
from model import finetune
from model.finetune.config import task_of
from model.predict.task_info import task_info
from model.tasks.own_task import OwnTaskSettings, own_task, read_split
from model.tasks.splits import SplitSettings
from pipelines.predict.config import PredictConfig
from tests.fixtures.tasks.tiny_vocab import OBJECTS, SUBJECTS, VERBS


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return str(path)


def _split(task, split):
    settings = SplitSettings(task.name, task.train_file, split, "", 32)
    counts = {}
    return list(read_split(task, settings, counts)), counts


@pytest.mark.backend_free
def test_rows_are_read_with_quotes_boms_headers_and_json_lines(tmp_path):
    csv = _write(tmp_path / "a.csv", '\ufefftext,label\n"one, ""two""\nthree",x\n\nfour,y\n')
    assert list(read_columns(csv, ["text", "label"], True)) == [
        (f"{csv}:3", ['one, "two"\nthree', "x"]),
        (f"{csv}:5", ["four", "y"]),
    ]
    tsv = _write(tmp_path / "b.tsv", 'a "quoted" text\t1\n"x\ty"\t2\n')
    assert [v for _, v in read_columns(tsv, ["1", "0"], False)] == [
        ["1", 'a "quoted" text'],
        ["2", "x\ty"],
    ]
    jsonl = _write(tmp_path / "c.jsonl", '{"t": "hi", "l": [1, 2]}\n')
    assert list(read_columns(jsonl, ["t", "l"], True)) == [(f"{jsonl}:1", ["hi", [1, 2]])]


@pytest.mark.backend_free
@pytest.mark.parametrize(
    "name, text, columns, header, message",
    [
        ("a.csv", "text,label\nx,1\n", ["body", "label"], True, "no column 'body'; its col"),
        ("a.csv", "x,1\ny\n", ["0", "1"], False, "a.csv:2: 1 fields, but the first row has 2"),
        ("a.csv", "x,1\n,2\n", ["0", "1"], False, "a.csv:2: empty text in column '0'"),
        ("a.csv", "x,1\ny,b\nz,1\n", ["0", "1"], False, "labels of mixed kinds"),
        ("a.csv", "x,1\ny,1\n", ["0", "1"], False, "one class (1): a classifier needs two"),
        ("a.txt", "x,1\n", ["0", "1"], False, "expected a .csv, .tsv or .jsonl file"),
    ],
)
def test_bad_files_are_one_line_naming_the_file_and_row(
    tmp_path, name, text, columns, header, message
):
    path = _write(tmp_path / name, text)
    settings = OwnTaskSettings("t", path, tuple(columns[:-1]), columns[-1], header=header)
    with pytest.raises(StageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        own_task(settings)


@pytest.mark.backend_free
def test_latin1_needs_its_encoding(tmp_path):
    path = _write(tmp_path / "t.csv", "sister\xf0city,A\nother,B\n", "latin-1")
    settings = OwnTaskSettings("t", path, ("0",), "1", header=False)
    with pytest.raises(StageError, match=r"t.csv: not utf-8 \(byte 0xf0\).*--encoding latin-1"):
        own_task(settings)
    task = own_task(OwnTaskSettings("t", path, ("0",), "1", header=False, encoding="latin-1"))
    assert task.labels == ("A", "B")
    overrides = {"train": str(path), "text_column": ["0"], "label_column": "1", "header": False}
    overrides |= {"init": "random", "spm_model": "m", "output": str(tmp_path / "out")}
    with pytest.raises(ConfigError, match=r"FinetuneConfig.encoding: .*unknown encoding 'latinx'"):
        load_config(finetune.FinetuneConfig, overrides=overrides | {"encoding": "latinx"})


@pytest.mark.backend_free
def test_labels_sorted_kinds_inferred_dev_held_out_by_text_and_counted(tmp_path):
    rows = "".join(f"text {i},other {i % 7},{(i * 7) % 11}\n" for i in range(200))
    path = _write(tmp_path / "news.csv", rows + "text 0,other 0,0\n")  # a duplicate
    task = own_task(OwnTaskSettings("news", path, ("0", "1"), "2", header=False))
    assert task.kind == "classification" and task.labels == tuple(str(i) for i in range(11))
    assert task.texts == 2  # a pair, as a registered pair task's registration says
    train, train_counts = _split(task, "train")
    dev, dev_counts = _split(task, "dev")
    assert len(train) + len(dev) == 201 and 5 < len(dev) < 40
    assert train_counts["held_out"] == len(dev) and train_counts["duplicates"] == 1
    assert {e.text_a for e in train}.isdisjoint(e.text_a for e in dev)
    assert train[0].guid == "1" and (train[0].text_b, train[0].label) == ("other 0", 0)
    assert sum(dev_counts["labels"].values()) == len(dev) and "dev_in_train" not in dev_counts
    assert _split(task, "dev")[0] == dev  # the same rows again
    scores = _write(tmp_path / "s.csv", "a,0.5\nb,1.25\nc,2\n")
    regression = own_task(OwnTaskSettings("s", scores, ("0",), "1", header=False))
    assert (regression.kind, regression.labels, regression.num_labels) == ("regression", None, 1)
    assert regression.texts == 1


@pytest.mark.backend_free
def test_a_dev_label_missing_from_train_names_its_row_or_is_counted(tmp_path):
    train = _write(tmp_path / "train.csv", "a,x\nb,y\n")
    dev = _write(tmp_path / "dev.csv", "c,x\nd,z\nb,y\n")
    task = own_task(OwnTaskSettings("t", train, ("0",), "1", dev=dev, header=False))
    with pytest.raises(StageError, match=r"dev.csv:2: label 'z' is not among the training labels"):
        _split(task, "dev")
    settings = SplitSettings("t", dev, "dev", "", 32, on_error="skip")
    counts = {}
    assert [e.text_a for e in read_split(task, settings, counts)] == ["c", "b"]
    assert counts["skipped_label"] == 1 and counts["dev_in_train"] == 1


def _team_csv(path, rows):
    """A header-less CSV of two text columns and four integer labels, as a team gives it."""
    lines = []
    for i in range(rows):
        subject, verb = SUBJECTS[i % len(SUBJECTS)], VERBS[i % len(VERBS)]
        obj = OBJECTS[(i * 3) % len(OBJECTS)]
        lines.append(f'"{subject} {verb}",{obj},{i % 4}\n')
    return _write(path, "".join(lines))


@pytest.mark.backend_free
def test_a_task_yaml_makes_a_directory_a_task(tmp_path):
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    _write(
        reviews / "train.jsonl", "".join(f'{{"t": "r {i}", "s": {i % 5 / 2}}}\n' for i in range(30))
    )
    _write(
        reviews / "task.yaml",
        "name: reviews\ntrain: train.jsonl\ntext_column: [t]\nlabel_column: s\n",
    )
    config = finetune.FinetuneConfig(
        init="random", spm_model="m", data_dir=str(reviews), output=str(tmp_path / "out")
    )
    assert (config.task, config.train_file) == ("reviews", str(reviews / "train.jsonl"))
    assert task_of(config).kind == "regression"
    assert finetune.parse_task_dir(f"mine={reviews}", "--multitask") == ("mine", str(reviews))
    with pytest.raises(ConfigError, match=f"unknown task 'mine'.*{tmp_path} holds no task.yaml"):
        finetune.parse_task_dir(f"mine={tmp_path}", "--multitask")


@pytest.mark.backend_free
def test_albert_evaluate_scores_a_user_s_predictions_on_its_dev_file(tmp_path):
    from model.evaluation import evaluate

    train, dev = _team_csv(tmp_path / "news.csv", 40), _team_csv(tmp_path / "dev.csv", 8)
    predicted = ["index\tprediction"] + [f"{i + 1}\t{i % 4 if i < 6 else 0}" for i in range(8)]
    predictions = _write(tmp_path / "predictions.tsv", "\n".join(predicted) + "\n")
    flags = {"train_file": train, "text_column": ["0", "1"], "label_column": "2"}
    result = evaluate.run(evaluate.EvaluateConfig(**flags, dev_file=dev, predictions=predictions))
    assert (result["task"], result["gold"]) == ("news", dev)
    assert result["scores"]["accuracy"] == 0.75 and "macro_f1" in result["scores"]
    _write(tmp_path / "predictions.tsv", "index\tprediction\n1\t7\n")
    with pytest.raises(StageError, match="predictions.tsv:2: bad prediction '7'"):
        evaluate.run(evaluate.EvaluateConfig(**flags, gold=dev, predictions=predictions))
    with pytest.raises(ConfigError, match="give --task, your own task's --train"):
        load_config(evaluate.EvaluateConfig, overrides={"predictions": predictions})


@pytest.mark.slow
def test_a_header_less_csv_with_two_text_columns_fine_tunes(spm_model, tmp_path):  # noqa: F811
    """The headline case, after a multi-task phase with another user's task (a task.yaml)."""
    train = _team_csv(tmp_path / "news.csv", 120)
    other = tmp_path / "other"
    other.mkdir()
    _team_csv(other / "rows.csv", 40)
    _write(other / "task.yaml", "train: rows.csv\ntext_column: ['1']\nlabel_column: '2'\n")
    values = {**SMALL, "max_train_examples": None, "max_dev_examples": None}
    config = finetune.FinetuneConfig(
        **values,
        spm_model=spm_model,
        train_file=train,
        text_column=["0", "1"],
        label_column="2",
        multitask=[f"other={other}"],
        multitask_steps=2,
        output=str(tmp_path / "out"),
    )
    assert config.task == "news" and task_of(config).labels == ("0", "1", "2", "3")
    finetune.run(config)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["multitask"]["tasks"] == ["news", "other"]
    assert set(results["dev"]) == {"accuracy", "macro_f1"}
    assert set(results["details"]["per_class"]) == {"0", "1", "2", "3"}
    dev_rows = results["counts"]["train"]["held_out"]
    assert sum(map(sum, results["details"]["confusion_matrix"])) == dev_rows
    lines = (tmp_path / "out" / "predictions.tsv").read_text().splitlines()
    assert len(lines) == dev_rows + 1 and lines[1].split("\t")[1] in {"0", "1", "2", "3"}
    _same_in_huggingface_pipeline(config, tmp_path / "out")
    from model.evaluation import evaluate  # `albert evaluate --model OUT`: its own task, its dev

    scored = evaluate.run(evaluate.EvaluateConfig(model=str(tmp_path / "out")))
    assert scored["task"] == "news" and scored["scores"]["accuracy"] == results["dev"]["accuracy"]
    info = task_info(str(tmp_path / "out"))  # what `albert predict` reads
    assert (info.kind, info.labels, info.texts) == ("classification", ("0", "1", "2", "3"), 2)
    predicted, source = _predicted_dev_rows(config, tmp_path, top_k=4)
    assert [p["prediction"]["label"] for p in predicted] == [
        line.split("\t")[1] for line in lines[1:]
    ]
    pair = [["text", "a"], ["text_pair", "b"]]
    huggingface_like_predict(tmp_path / "out", source, tmp_path / "predicted", pair)
    pair[1][0] = "text_b"  # the SavedModel's name for the second text
    served_like_predict(tmp_path / "out", source, tmp_path / "predicted", pair)


@pytest.mark.slow
def test_a_multi_label_json_lines_task_tunes_its_threshold_and_exports(spm_model, tmp_path):  # noqa: F811
    rows = []
    for i in range(90):
        subject, verb = SUBJECTS[i % len(SUBJECTS)], VERBS[i % len(VERBS)]
        labels = ["animal"] * (i % 2) + ["verb"] * (i % 3 == 0) or ["none"]
        rows.append(json.dumps({"text": f"{subject} {verb}", "tags": labels}) + "\n")
    train = _write(tmp_path / "tags.jsonl", "".join(rows))
    config = finetune.FinetuneConfig(
        **{**SMALL, "max_train_examples": None, "max_dev_examples": None},
        spm_model=spm_model,
        train_file=train,
        text_column=["text"],
        label_column="tags",
        output=str(tmp_path / "out"),
    )
    task = task_of(config)
    assert (task.kind, task.labels) == ("multi_label", ("animal", "none", "verb"))
    finetune.run(config)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(results["dev"]) == {"micro_f1", "macro_f1", "threshold"}
    assert 0 < results["dev"]["threshold"] < 1
    assert set(results["details"]["per_label"]) == {"animal", "none", "verb"}
    hf_config = json.loads((tmp_path / "out" / "export" / "hf" / "config.json").read_text())
    assert hf_config["problem_type"] == "multi_label_classification"
    _same_in_huggingface_pipeline(config, tmp_path / "out", "sigmoid")
    info = task_info(str(tmp_path / "out"))  # what `albert predict` reads
    threshold = results["dev"]["threshold"]
    assert (info.kind, info.texts, info.threshold) == ("multi_label", 1, threshold)
    predicted, source = _predicted_dev_rows(config, tmp_path)
    expected = (tmp_path / "out" / "predictions.tsv").read_text().splitlines()[1:]
    assert [",".join(p["prediction"]["labels"]) for p in predicted] == [
        (line.split("\t") + [""])[1] for line in expected
    ]
    for p in predicted:
        scores = p["prediction"]["scores"]
        assert list(scores) == ["animal", "none", "verb"]
        assert p["prediction"]["labels"] == [n for n, s in scores.items() if s >= threshold]
    huggingface_like_predict(tmp_path / "out", source, tmp_path / "predicted", [["text", "a"]])
    served_like_predict(tmp_path / "out", source, tmp_path / "predicted", [["text", "a"]])


def _predicted_dev_rows(config, tmp_path, **values):
    """`albert predict` on the fine-tune's dev rows (JSONL, texts `a` and `b`): its lines and the
    rows' file."""
    dev, _ = _split(task_of(config), "dev")
    source = tmp_path / "dev.jsonl"
    source.write_text(
        "".join(json.dumps({"a": e.text_a, "b": e.text_b}) + "\n" for e in dev), encoding="utf-8"
    )
    columns = ["a", "b"] if dev[0].text_b is not None else ["a"]
    output = tmp_path / "predicted"
    predict.run(
        PredictConfig(
            model=str(tmp_path / "out"),
            input=[str(source)],
            output=str(output),
            text_column=columns,
            **values,
        ),
        [],
    )
    return predicted_lines(output), source


def _same_in_huggingface_pipeline(config, output, scores="softmax"):
    """transformers' text-classification pipeline on `OUTPUT/export/hf`, and keras-hub's
    `TextClassifier` from `OUTPUT/export/keras_hub` on the raw strings, score the dev rows (text
    pairs) as the fine-tuned `model.keras` does, within 1e-5."""
    import keras
    import numpy as np
    import transformers

    from albert.tokenization import AlbertTokenizer
    from model.finetune.kind import inputs_of

    task = task_of(config)
    dev, _ = _split(task, "dev")
    settings = SplitSettings(
        task.name, task.train_file, "dev", config.spm_model, 32, task_source=task.source
    )
    arrays = task.format.encode(AlbertTokenizer(config.spm_model), dev, settings, {})
    model = keras.saving.load_model(str(output / "model.keras"), compile=False)
    score = getattr(keras.ops, scores)
    ours = keras.ops.convert_to_numpy(score(model.predict(inputs_of(arrays))))
    pipe = transformers.pipeline("text-classification", model=str(output / "export" / "hf"))
    rows = [{"text": e.text_a, **({"text_pair": e.text_b} if e.text_b else {})} for e in dev]
    theirs = pipe(rows, top_k=None)
    for row, answer in zip(ours, theirs):
        by_label = {entry["label"]: entry["score"] for entry in answer}
        np.testing.assert_allclose([by_label[name] for name in task.labels], row, atol=1e-5)
    import keras_hub

    classifier = keras_hub.models.TextClassifier.from_preset(str(output / "export" / "keras_hub"))
    texts = [e.text_a for e in dev]
    pairs = (texts, [e.text_b for e in dev]) if dev[0].text_b is not None else texts
    logits = classifier.predict(pairs, verbose=0)
    np.testing.assert_allclose(score(logits), ours, atol=1e-5)


@pytest.mark.backend_free
def test_epochs_derive_the_steps_and_warmup_from_the_training_rows(caplog):
    from model.finetune.config import hyperparameters, with_epochs
    from model.tasks import get_task

    common = {"task": "sst2", "init": "random", "spm_model": "m", "data_dir": "d", "output": "o"}
    config = finetune.FinetuneConfig(**common, epochs=2.5, batch_size=32)
    hp = hyperparameters(config, get_task("sst2"))
    with caplog.at_level("INFO"):
        derived = with_epochs(config, hp, 1000)
    assert (derived.train_steps, derived.warmup_steps) == (79, 7)
    assert "2.5 epochs of 1000 examples at batch 32: 79 steps, 7 of warmup" in caplog.text
    fixed = finetune.FinetuneConfig(**common, epochs=2.5, train_steps=10)
    assert with_epochs(fixed, hp, 1000) == hp


@pytest.mark.backend_free
def test_the_shared_classification_files_read_as_tasks():
    """BBC News (a header, five words as labels) and GoEmotions (no header, CSV-style quotes in a
    TSV, comma-separated label ids) as a team would give them."""
    from conftest import shared_path

    bbc = own_task(
        OwnTaskSettings(
            "bbc", str(shared_path("classification", "bbc-news", "dev.csv")), ("text",), "category"
        )
    )
    assert bbc.labels == ("business", "entertainment", "politics", "sport", "tech")
    emotions = str(shared_path("classification", "goemotions", "dev.tsv"))
    task = own_task(
        OwnTaskSettings("goemotions", emotions, ("0",), "1", header=False, label_separator=",")
    )
    assert task.kind == "multi_label" and task.labels == tuple(str(i) for i in range(28))
    rows, counts = _split(task, "train")
    assert counts["read"] + counts["held_out"] == 5426
    assert any('"' in row.text_a for row in rows)  # a quoted text, its quotes undone
