"""The peers of `benchmarks/predict.py`, each timed in its own process on the fine-tune's Hugging
Face export: Hugging Face's `pipeline("text-classification")` and Beam's
`HuggingFacePipelineModelHandler` in `RunInference`. A module for scripts, not part of the package;
torch, transformers and Beam are imported where used, so a timed process loads only what it runs."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

TF_ONLY_NAMES = ("TFAutoModel",)
"""What Beam 2.77's `huggingface_inference` imports from transformers and transformers 5 removed
(TensorFlow model classes, named only by its tensor handlers and type hints)."""


def hf_export(model_dir: str, directory: Path) -> str:
    """The fine-tune as `AlbertForSequenceClassification` with our tokenizer."""
    import keras  # heavy: the export reads the Keras model
    import torch
    from transformers import AlbertForSequenceClassification

    from benchmarks.helpers.hf_finetune import export_with_tokenizer
    from model.finetune import models  # noqa: F401  (registers FinetuneModel for loading)
    from model.network.pretraining_model import AlbertPretrainingModel
    from model.predict.task_info import task_info

    info = task_info(model_dir)
    tuned = keras.saving.load_model(info.model_file, compile=False)
    pretraining = AlbertPretrainingModel(tuned.backbone.config)
    pretraining.backbone.set_weights(tuned.backbone.get_weights())
    export_with_tokenizer(pretraining, str(directory), info.spm_model)
    labels = dict(enumerate(info.labels))
    model = AlbertForSequenceClassification.from_pretrained(
        str(directory),
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    kernel, bias = tuned.head.get_weights()
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(kernel.T))
        model.classifier.bias.copy_(torch.from_numpy(bias))
    model.save_pretrained(str(directory))
    return str(directory)


def texts_of(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def side_hf(args) -> dict:
    from transformers import pipeline

    texts = texts_of(args.texts)
    classify = pipeline(
        "text-classification", model=args.hf, tokenizer=args.hf, device=-1, dtype="float32"
    )
    start = time.perf_counter()
    answers = classify(
        texts, batch_size=args.batch_size, truncation=True, max_length=args.max_seq_length
    )
    seconds = time.perf_counter() - start
    return {"rows": len(texts), "seconds": seconds, "labels": [a["label"] for a in answers]}


def beam_huggingface_inference():
    """Beam's `apache_beam.ml.inference.huggingface_inference`, imported with transformers 5 beside
    it: Beam 2.77's module does `from transformers import TFAutoModel` (`TF_ONLY_NAMES`), a
    TensorFlow class transformers 5 removed; its `HuggingFacePipelineModelHandler` never uses it
    (only the tensor handlers and the type hints name it), so a placeholder class of that name is
    set on `transformers` first, where transformers lacks it. Nothing else is changed. The names
    Beam's module imports that transformers has are imported first: importing its pipelines
    replaces the `transformers` module in `sys.modules`, which would drop the placeholder."""
    from transformers import AutoModel, Pipeline, pipeline  # noqa: F401  (see the docstring)

    transformers = sys.modules["transformers"]
    for name in TF_ONLY_NAMES:
        if not hasattr(transformers, name):
            placeholder = type(
                name, (), {"__doc__": f"a placeholder: transformers 5 has no {name}"}
            )
            setattr(transformers, name, placeholder)
    from apache_beam.ml.inference import huggingface_inference

    return huggingface_inference


def side_beam_hf(args) -> dict:
    """Beam's handler over the rows; each row's label is its text's (the handler is not keyed:
    Beam's `KeyedModelHandler` hands the pipeline a tuple, which it reads as one input)."""
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference

    texts = texts_of(args.texts)
    handler = beam_huggingface_inference().HuggingFacePipelineModelHandler(
        task="text-classification",
        model=args.hf,
        load_pipeline_args={"tokenizer": args.hf, "device": -1, "dtype": "float32"},
        min_batch_size=args.batch_size,
        max_batch_size=args.batch_size,
    )
    settings = {
        "batch_size": args.batch_size,
        "truncation": True,
        "max_length": args.max_seq_length,
    }
    with tempfile.TemporaryDirectory() as temp:
        start = time.perf_counter()
        with beam.Pipeline() as pipeline:
            _ = (
                pipeline
                | beam.Create(texts)
                | RunInference(handler, inference_args=settings)
                | beam.Map(lambda result: json.dumps([result.example, result.inference["label"]]))
                | beam.io.WriteToText(f"{temp}/labels")
            )
        seconds = time.perf_counter() - start
        labels = dict(
            json.loads(line) for shard in Path(temp).glob("labels*") for line in shard.open()
        )
    return {"rows": len(texts), "seconds": seconds, "labels": [labels[text] for text in texts]}
