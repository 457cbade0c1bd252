"""`albert predict` (flows.predict, pipelines.predict, model.predict) on tiny fine-tunes: each task
kind's predictions equal the fine-tune's own dev predictions; the bytes are the same with 1 or 2
worker processes and whatever the order the files are given in; bad input is one line and exit 2
with nothing written."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import shared_path
from ports import free_port
from test_finetune_run import SMALL, squad_v2_fixture

from albert.race_json import read_race
from albert.squad_json import read_squad
from albert.tokenization import AlbertTokenizer
from flows import predict
from model import finetune
from model.predict.encoding import encode_text
from model.predict.task_info import TaskInfo
from pipelines.predict.config import PredictConfig
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
ROWS = 200


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


def fine_tuned(spm_model: str, directory: Path, **values) -> Path:
    config = finetune.FinetuneConfig(
        **{**SMALL, "spm_model": spm_model, "output": str(directory), **values}
    )
    finetune.run(config)
    return directory


@pytest.fixture(scope="module")
def sst2(spm_model, tmp_path_factory) -> Path:
    data = shared_path("glue", "SST-2")
    return fine_tuned(
        spm_model,
        tmp_path_factory.mktemp("ft") / "sst2",
        task="sst2",
        data_dir=str(data),
        max_dev_examples=ROWS,
    )


def run(tmp_path: Path, model: Path, inputs: list, name: str, *beam_args, **values) -> dict:
    config = PredictConfig(
        model=str(model), input=[str(i) for i in inputs], output=str(tmp_path / name), **values
    )
    return predict.run(config, list(beam_args))


def lines(output: Path) -> list[dict]:
    return [
        json.loads(line)
        for shard in sorted(output.glob("predictions-*.jsonl"))
        for line in shard.read_text(encoding="utf-8").splitlines()
    ]


def dev_rows(path: Path, count: int) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [row for _, row in zip(range(count), reader)]


def fine_tune_labels(model: Path) -> list[str]:
    rows = (model / "predictions.tsv").read_text().splitlines()[1:]
    return [row.split("\t")[1] for row in rows]


@pytest.mark.keras  # on both backends
def test_classification_equals_the_fine_tunes_dev_predictions_on_any_workers_and_file_order(
    sst2, tmp_path, keras_backend
):
    """SST-2's dev rows, the first half as TSV and the second as JSONL: the labels are the
    fine-tune's own; given in the other order, with 2 worker processes, the bytes are the same.
    On JAX, the fine-tune's SavedModel (exported on TensorFlow) gives the same scores."""
    rows = dev_rows(shared_path("glue", "SST-2", "dev.tsv"), ROWS)
    first, second = tmp_path / "a.tsv", tmp_path / "b.jsonl"
    first.write_text(
        "sentence\tlabel\n" + "".join(f"{r['sentence']}\t{r['label']}\n" for r in rows[:100])
    )
    second.write_text("".join(json.dumps(r) + "\n" for r in rows[100:]))
    summary = run(tmp_path, sst2, [first, second], "one", text_column=["sentence"], block_rows=32)
    predicted = lines(tmp_path / "one")
    assert [p["prediction"]["label"] for p in predicted] == fine_tune_labels(sst2)
    assert [p["sentence"] for p in predicted] == [r["sentence"] for r in rows]
    assert summary["rows"] == summary["predicted"] == ROWS
    assert sum(summary["labels"].values()) == ROWS
    top = predicted[0]["prediction"]
    assert top["top_k"][0]["label"] == top["label"]
    assert sum(t["score"] for t in top["top_k"]) == pytest.approx(1, abs=1e-5)
    run(
        tmp_path,
        sst2,
        [second, first],
        "two",
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=2",
        text_column=["sentence"],
        block_rows=32,
    )
    shard = "predictions-00000-of-00001.jsonl"
    assert (tmp_path / "two" / shard).read_bytes() == (tmp_path / "one" / shard).read_bytes()
    if keras_backend == "jax":  # its SavedModel is exported by a TensorFlow-backend process
        every = tmp_path / "rows.jsonl"
        every.write_text("".join(json.dumps(r) + "\n" for r in rows))
        served_like_predict(sst2, every, tmp_path / "one", [["text", "sentence"]])
    summaries = [json.loads((tmp_path / n / "predict.json").read_text()) for n in ("one", "two")]
    assert [{**s, "output": None} for s in summaries] == [{**summaries[0], "output": None}] * 2


SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece op)

served = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
rows = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
ours = [json.loads(line)["prediction"] for line in open(sys.argv[3], encoding="utf-8")]
columns = json.loads(sys.argv[4])
def given(row, column):  # a list of columns is one [C] input per row (the options)
    return [row[c] for c in column] if isinstance(column, list) else row[column]
outputs = served(**{n: tf.constant([given(r, column) for r in rows]) for n, column in columns})
if "value" in outputs:
    gap = np.abs(outputs["value"].numpy() - [p["value"] for p in ours]).max()
    same = True
elif "choice" in outputs:  # multiple choice
    gap = np.abs(outputs["scores"].numpy() - [p["scores"] for p in ours]).max()
    gap = max(gap, np.abs(outputs["score"].numpy() - [p["score"] for p in ours]).max())
    chosen = zip(*(outputs[n].numpy().tolist() for n in ("choice", "answer")))
    expected = [[p["choice"], p["answer"]] for p in ours]
    same = [[c.decode(), a.decode()] for c, a in chosen] == expected
elif "answer" in outputs:  # a span: no answer is start and end -1 there, None here
    gap = np.abs(outputs["score"].numpy() - [p["score"] for p in ours]).max()
    spans = zip(*(outputs[n].numpy().tolist() for n in ("answer", "start", "end")))
    none = {"start": -1, "end": -1}
    same = [[a.decode(), s, e] for a, s, e in spans] == [
        [p["answer"], *({**none, **{k: v for k, v in p.items() if v is not None}}[n] for n in none)]
        for p in ours
    ]
    if "null_score_diff" in outputs:
        diffs = [p["null_score_diff"] for p in ours]
        gap = max(gap, np.abs(outputs["null_score_diff"].numpy() - diffs).max())
elif "selected" in outputs:  # multi-label
    gap = np.abs(outputs["scores"].numpy() - [list(p["scores"].values()) for p in ours]).max()
    names = [[n.decode() for n in row] for row in outputs["label_names"].numpy()]
    labels = [[n.decode() for n in row if n] for row in outputs["labels"].numpy()]
    chosen = [[n for n, s in zip(r, m) if s] for r, m in zip(names, outputs["selected"].numpy())]
    same = labels == chosen == [p["labels"] for p in ours]
    same = same and names == [list(p["scores"]) for p in ours]
else:
    gap = np.abs(outputs["score"].numpy() - [p["score"] for p in ours]).max()
    same = [label.decode() for label in outputs["label"].numpy()] == [p["label"] for p in ours]
ours_loaded = sorted({m.split(".")[0] for m in sys.modules} & {"albert", "model", "pipelines"})
print(json.dumps({"gap": float(gap), "same": same, "project": ours_loaded}))
"""


def served_like_predict(model: Path, source: Path, predictions: Path, columns: list) -> None:
    """The fine-tune's SavedModel, loaded in a fresh process with TensorFlow and tensorflow-text
    only, gives `albert predict`'s labels and scores (or values; a multi-label task's selected
    labels and every label's score; a multiple-choice task's choice, answer and every option's
    score) on the rows of `source` (JSONL; `columns`: [input name, column or list of columns])
    within 1e-5."""
    saved_model = model / "export" / "saved_model"
    shard = predictions / "predictions-00000-of-00001.jsonl"
    arguments = [str(saved_model), str(source), str(shard), json.dumps(columns)]
    command = [sys.executable, "-P", "-c", SERVE, *arguments]
    done = subprocess.run(command, cwd=predictions, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"gap": pytest.approx(0, abs=1e-5), "same": True, "project": []}


def huggingface_like_predict(model: Path, source: Path, predictions: Path, columns: list) -> None:
    """`transformers.pipeline("text-classification")` on the fine-tune's `export/hf` scores the
    rows of `source` (JSONL; `columns`: [["text", column]] and ["text_pair", column] for a pair) as
    `albert predict` did into `predictions`, every label's score within 1e-5."""
    import transformers

    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    pipe = transformers.pipeline("text-classification", model=str(model / "export" / "hf"))
    theirs = pipe(
        [{name: row[column] for name, column in columns} for row in rows],
        top_k=None,
        truncation=True,
    )
    for ours, answer in zip(lines(predictions), theirs, strict=True):
        prediction = ours["prediction"]
        expected = prediction.get("scores") or {e["label"]: e["score"] for e in prediction["top_k"]}
        assert expected.keys() == {entry["label"] for entry in answer}
        for entry in answer:
            assert entry["score"] == pytest.approx(expected[entry["label"]], abs=1e-5)


def test_the_serving_export_equals_predict_in_a_fresh_process_and_behind_its_server(sst2, tmp_path):
    """The SavedModel and the Hugging Face export's pipeline give predict's scores; infra/serving's
    server answers with its labels."""
    rows = dev_rows(shared_path("glue", "SST-2", "dev.tsv"), ROWS)
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(tmp_path, sst2, [source], "out", text_column=["sentence"], top_k=2)
    served_like_predict(sst2, source, tmp_path / "out", [["text", "sentence"]])
    huggingface_like_predict(sst2, source, tmp_path / "out", [["text", "sentence"]])
    port = free_port()
    environment = {
        **os.environ,
        "MODEL_DIR": str(sst2 / "export" / "saved_model"),
        "PORT": str(port),
    }
    server = ROOT / "infra" / "serving" / "server.py"
    process = subprocess.Popen([sys.executable, "-P", str(server)], env=environment, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/v1/models/albert"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        body = json.dumps({"instances": [{"text": r["sentence"]} for r in rows[:5]]}).encode()
        request = urllib.request.Request(f"{url}:predict", body, method="POST")
        answer = json.loads(urllib.request.urlopen(request, timeout=60).read())
    finally:
        process.terminate()
        process.wait(timeout=60)
    expected = [p["prediction"]["label"] for p in lines(tmp_path / "out")[:5]]
    assert [p["label"] for p in answer["predictions"]] == expected


def test_regression_pairs_and_windows(spm_model, tmp_path):
    """STS-B: the values are the fine-tune's; with --windows, rows that fit one window keep their
    value and a long second text is averaged over its windows."""
    data = shared_path("glue", "STS-B")
    model = fine_tuned(
        spm_model, tmp_path / "stsb", task="stsb", data_dir=str(data), max_dev_examples=40
    )
    rows = dev_rows(data / "dev.tsv", 40)
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    columns = {"text_column": ["sentence1", "sentence2"], "id_column": "index"}
    run(tmp_path, model, [source], "plain", **columns)
    expected = [
        float(line.split("\t")[1])
        for line in (model / "predictions.tsv").read_text().splitlines()[1:]
    ]
    predicted = lines(tmp_path / "plain")
    assert [set(p) for p in predicted] == [{"index", "prediction"}] * 40
    assert [p["prediction"]["value"] for p in predicted] == pytest.approx(expected, abs=2e-6)
    pair = [["text", "sentence1"], ["text_b", "sentence2"]]
    served_like_predict(model, source, tmp_path / "plain", pair)
    long = dict(rows[0], sentence2=" ".join([rows[0]["sentence2"]] * 12))
    source.write_text("".join(json.dumps(r) + "\n" for r in [*rows, long]))
    run(tmp_path, model, [source], "windows", windows=True, **columns)
    windowed = [p["prediction"]["value"] for p in lines(tmp_path / "windows")]
    tokenizer = AlbertTokenizer(spm_model)
    fits = [
        len(tokenizer.encode(r["sentence1"])) + len(tokenizer.encode(r["sentence2"])) + 3 <= 32
        for r in rows
    ]
    assert any(fits) and not all(fits)
    assert [v for v, fit in zip(windowed, fits) if fit] == pytest.approx(
        [v for v, fit in zip(expected, fits) if fit], abs=2e-6
    )
    assert len(windowed) == 41


def test_pair_windows_slide_over_the_second_text(spm_model):
    """--windows on a pair: the second text slides (stride 4) and the first is repeated whole in
    each window; a pair that fits is one window, encoded as without windows."""
    info = TaskInfo("-", "stsb", "regression", (), 2, spm_model, max_seq_length=32, batch_size=8)
    tokenizer = AlbertTokenizer(spm_model)
    short, long = "a quiet film", " ".join(["the story goes on and on"] * 8)
    rows = [{"text": [short, long]}, {"text": [short, short]}]
    encoded = encode_text(info, tokenizer, rows, windows=True, stride=4)
    first, second = tokenizer.encode(short), tokenizer.encode(long)
    width = 32 - 3 - len(first)
    starts = list(range(0, len(second), 4))
    starts = starts[: next(i for i, s in enumerate(starts) if s + width >= len(second)) + 1]
    assert len(starts) > 1 and encoded.owners.tolist() == [0] * len(starts) + [1]
    ids, segments = encoded.arrays["input_ids"], encoded.arrays["segment_ids"]
    mask = encoded.arrays["input_mask"].astype(bool)
    windows = [
        (row[(kind == 0) & real][1:-1].tolist(), row[(kind == 1) & real][:-1].tolist())
        for row, kind, real in zip(ids[:-1], segments[:-1], mask[:-1])
    ]
    assert windows == [(first, second[s : s + width]) for s in starts]
    plain = encode_text(info, tokenizer, rows[1:])
    assert ids[-1].tolist() == plain.arrays["input_ids"][0].tolist()


def test_squad_spans_equal_the_fine_tunes_answers(spm_model, tmp_path):
    """predict's answers are the fine-tune's; the SavedModel's, on the rows whose context fits one
    window, are predict's (text, character offsets, score and null-score difference)."""
    data = squad_v2_fixture(tmp_path / "v2.json", questions=60)
    model = fine_tuned(
        spm_model,
        tmp_path / "squad",
        task="squad2",
        data_dir=str(tmp_path),
        train_file=data,
        dev_file=data,
        max_seq_length=48,
        max_query_length=16,
        doc_stride=16,
        max_dev_examples=None,
    )
    examples = list(read_squad(data))
    source = tmp_path / "questions.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": e.qas_id, "q": e.question, "passage": e.context}) + "\n"
            for e in examples
        )
    )
    run(tmp_path, model, [source], "out", question_column="q", context_column="passage")
    answers = json.loads((model / "predictions.json").read_text())
    predicted = lines(tmp_path / "out")
    assert {p["id"]: p["prediction"]["answer"] for p in predicted} == answers
    for p in predicted:
        span = p["prediction"]
        if span["answer"]:
            assert p["passage"][span["start"] : span["end"]] == span["answer"]
    tokenizer = AlbertTokenizer(spm_model)
    short = [{**p, "passage": p["passage"].split(". ")[0]} for p in predicted]  # one sentence
    fits = [
        {key: p[key] for key in ("id", "q", "passage")}
        for p in short
        if len(tokenizer.encode(p["q"])[:16]) + len(tokenizer.encode(p["passage"])) + 3 <= 48
    ]
    assert len(fits) > 10
    one_window = tmp_path / "one_window.jsonl"
    one_window.write_text("".join(json.dumps(p) + "\n" for p in fits))
    run(tmp_path, model, [one_window], "one", question_column="q", context_column="passage")
    columns = [["question", "q"], ["context", "passage"]]
    served_like_predict(model, one_window, tmp_path / "one", columns)


@pytest.mark.keras  # on both backends
def test_multiple_choice_equals_the_fine_tunes_choices_and_the_serving_export(spm_model, tmp_path):
    """RACE's dev questions: predict's choices are the fine-tune's; the SavedModel (on JAX
    exported by a TensorFlow-backend process), given the article, the question and the four
    options, gives predict's choice, answer and every option's score."""
    data = shared_path("race", "RACE")
    model = fine_tuned(
        spm_model,
        tmp_path / "race",
        task="race",
        data_dir=str(data),
        max_seq_length=48,
        batch_size=4,
        max_dev_examples=None,
    )
    examples = list(read_race(str(data / "dev")))
    source = tmp_path / "questions.jsonl"
    source.write_text(
        "".join(
            json.dumps(
                {
                    "id": e.example_id,
                    "article": e.article,
                    "question": e.question,
                    **dict(zip("ABCD", e.options)),
                }
            )
            + "\n"
            for e in examples
        )
    )
    run(
        tmp_path,
        model,
        [source],
        "out",
        context_column="article",
        choice_columns=list("ABCD"),
        id_column="id",
    )
    expected = [json.loads(line) for line in (model / "predictions.jsonl").read_text().splitlines()]
    predicted = lines(tmp_path / "out")
    assert [{"id": p["id"], "answer": p["prediction"]["choice"]} for p in predicted] == expected
    assert all(len(p["prediction"]["scores"]) == 4 for p in predicted)
    columns = [["article", "article"], ["question", "question"], ["options", list("ABCD")]]
    served_like_predict(model, source, tmp_path / "out", columns)


def failure(capsys, argv: list[str]) -> str:
    """The one line `albert predict` logs for `argv`, which exits with 2."""
    assert predict.main(argv, prog="albert predict") == 2
    (line,) = [s for s in capsys.readouterr().err.splitlines() if "albert predict failed" in s]
    return line


def test_bad_input_is_one_line_and_nothing_is_written(sst2, tmp_path, capsys):
    """A pretraining export, a missing column, an undecodable row (named; counted with --on-error
    skip), an empty input: one line, exit 2, no output; a finished output is moved aside."""
    out = str(tmp_path / "out")
    (tmp_path / "pretrain" / "export").mkdir(parents=True)
    (tmp_path / "pretrain" / "export" / "model.keras").write_bytes(b"")
    good = tmp_path / "rows.tsv"
    good.write_bytes(b"sentence\tlabel\na fine film\t1\n\xff\xfe broken\t0\na dull one\t0\n")
    base = ["--input", str(good), "--output", out]
    line = failure(capsys, ["--model", str(tmp_path / "pretrain"), *base])
    assert "fine-tune it first" in line and "albert finetune --task" in line
    line = failure(capsys, ["--model", str(sst2), *base, "--text-column", "review"])
    assert "no column 'review' (found: sentence, label)" in line
    assert f"{good}: line 3: not UTF-8" in failure(capsys, ["--model", str(sst2), *base])
    empty = tmp_path / "empty.tsv"
    empty.write_text("sentence\tlabel\n")
    line = failure(capsys, ["--model", str(sst2), "--input", str(empty), "--output", out])
    assert "nothing to predict (the files hold no rows)" in line
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("out.tmp-*"))
    assert predict.main(["--model", str(sst2), *base, "--on-error", "skip"]) == 0
    summary = json.loads((tmp_path / "out" / "predict.json").read_text())
    assert (summary["rows"], summary["skipped"]) == (2, {"skipped_not_utf8": 1})
    assert predict.main(["--model", str(sst2), *base, "--on-error", "skip", "--top-k", "1"]) == 0
    assert len(list(tmp_path.glob("out.previous-*"))) == 1


def test_sigterm_mid_job_exits_75_with_nothing_written_and_the_same_command_runs_again(
    sst2, tmp_path
):
    """Stopped while its output is being written, the job leaves none; run again, it ends."""
    rows = dev_rows(shared_path("glue", "SST-2", "dev.tsv"), 800)
    source = tmp_path / "rows.txt"
    source.write_text("".join(r["sentence"] + "\n" for r in rows * 2))
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "flows.predict",
        "--model",
        str(sst2),
        "--input",
        str(source),
        "--output",
        str(out),
        "--block-rows",
        "16",
        "--batch-size",
        "4",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("out.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.1)  # the output is being written: the pipeline has started
    time.sleep(1)
    assert process.poll() is None, "the job ended before the signal"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 75, stderr[-2000:]
    (line,) = [s for s in stderr.splitlines() if "interrupted:" in s]
    assert "SIGTERM during python -m flows.predict: nothing was written" in line
    assert not out.exists() and not list(tmp_path.glob("out.tmp-*"))
    again = run(tmp_path, sst2, [source], "out", block_rows=16, batch_size=4)
    assert again["rows"] == 1600 and (out / "predictions-00000-of-00001.jsonl").exists()
