"""Domain-classifier data selection (Ma et al., 2019) as a Beam pipeline with RunInference.

    python -m pipelines.select --input corpus/ --target-samples target.txt \
        --source-samples source.txt --spm-model spiece.model --top-k 10000 --output selected/

1. Train a domain classifier on labelled samples (segmented-corpus files: one sentence a line, a
   blank line between documents; target-domain samples vs source-domain samples), or reuse
   `--classifier model.keras`.
2. Score every document of the source corpus `--input` with Beam's `RunInference` (a keyed
   `DomainModelHandler`): P(target domain).
3. Keep the `--top-k` documents, or those with P >= `--threshold` (ties broken by document key).
4. Write the selection in the same segmented format (`OUTPUT/selected-*.txt`, deterministic shards:
   input for `pipelines.tfrecords` further pretraining or for fine-tuning), every document's score
   (`OUTPUT/scores-*.tsv`), the classifier and `OUTPUT/selection.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
from pydantic import Field, model_validator

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import join, open_file
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer
from pipelines.common.runner import CountingDoFn, WriteSummary, counted, run_stage
from pipelines.common.segmented_corpus import input_files, read_documents
from pipelines.common.shards import WriteShards
from pipelines.select.classifier import DomainModelHandler, train_classifier

NAMESPACE = "domain_select"
SELECTION_FILE = "selection.json"


class DomainSelectConfig(StageConfig):
    input: str = Field(
        description=(
            "source-domain corpus to select from: a directory of *.txt shards, a file or a glob"
        )
    )
    output: str = Field(description="output directory")
    spm_model: str = Field(
        description="SentencePiece model used to encode texts for the classifier"
    )
    target_samples: str | None = Field(
        None, description="labelled target-domain documents (segmented corpus)"
    )
    source_samples: str | None = Field(
        None, description="labelled source-domain documents (segmented corpus)"
    )
    classifier: str | None = Field(
        None, description="an existing classifier (.keras) instead of training one"
    )
    top_k: int | None = Field(None, gt=0, description="keep the k most target-like documents")
    threshold: float | None = Field(
        None, ge=0, le=1, description="keep documents with P(target) >= this"
    )
    max_seq_length: int = Field(128, gt=2, description="pieces per document seen by the classifier")
    epochs: int = Field(5, gt=0, description="classifier training epochs")
    batch_size: int = Field(64, gt=0, description="inference batch size")
    num_shards: int = Field(1, gt=0, description="output shards")
    seed: int = Field(12345)

    @model_validator(mode="after")
    def _check(self):
        if (self.top_k is None) == (self.threshold is None):
            raise ValueError("give exactly one of top_k and threshold")
        if self.classifier is None and not (self.target_samples and self.source_samples):
            raise ValueError(
                "give --classifier, or --target-samples and --source-samples to train one"
            )
        return self


def documents_of(pattern: str) -> Iterator[tuple[str, str]]:
    """(key, text) of every document of a segmented corpus; lines of a document joined by spaces."""
    for path in input_files(pattern):
        for key, lines in read_documents(path):
            yield key.decode(), " ".join(line.strip() for line in lines)


class ReadDocuments(CountingDoFn):
    """A corpus file -> (key, document text with its line breaks), counted."""

    def __init__(self):
        super().__init__(NAMESPACE)

    def process(self, path: str):
        for key, lines in read_documents(path):
            self.inc("documents")
            yield key.decode(), "".join(lines)


def scored_line(key: str, probability: float) -> tuple[bytes, bytes]:
    return key.encode(), f"{key}\t{probability:.6f}\n".encode()


def selected_document(item: tuple[str, tuple[str, float]]) -> tuple[bytes, bytes]:
    key, (document, _) = item
    return key.encode(), (document.rstrip("\n") + "\n\n").encode()


class CountSelected(CountingDoFn):
    def __init__(self):
        super().__init__(NAMESPACE)

    def process(self, element):
        self.inc("selected")
        yield element


def write_selection(counts: dict[str, int], summary: dict, output_dir: str) -> None:
    """selection.json, with the counts summed in the pipeline."""
    summary = {
        **summary,
        "documents": counts.get("documents", 0),
        "selected": counts.get("selected", 0),
    }
    with open_file(join(output_dir, SELECTION_FILE), "w") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True)


def prepare_classifier(config: DomainSelectConfig, out: str) -> tuple[str, dict | None]:
    """(the classifier's path, its training summary): `--classifier` as given, or one trained on
    the labelled samples into `out` (training summary; None when given)."""
    if config.classifier is not None:
        return config.classifier, None
    target = [text for _, text in documents_of(config.target_samples)]
    source = [text for _, text in documents_of(config.source_samples)]
    if not target or not source:
        raise StageError("need at least one target-domain and one source-domain sample document")
    classifier = join(out, "classifier.keras")
    training = train_classifier(
        AlbertTokenizer(config.spm_model),
        target,
        source,
        classifier,
        config.max_seq_length,
        config.epochs,
        seed=config.seed,
    )
    return classifier, training


def build_pipeline(
    pipeline: beam.Pipeline, files: list[str], config: DomainSelectConfig, out: str
) -> None:
    """Train (or take) the classifier, then: score every document, write the scores, the selected
    documents and selection.json into `out`."""
    classifier, training = prepare_classifier(config, out)
    handler = KeyedModelHandler(
        DomainModelHandler(classifier, config.spm_model, config.max_seq_length, config.batch_size)
    )
    summary = {
        "top_k": config.top_k,
        "threshold": config.threshold,
        "classifier": classifier if config.classifier else join(config.output, "classifier.keras"),
        "classifier_training": training,
        "output": config.output,
    }
    counts: list = []
    documents = counted(  # key, document text (its line breaks kept)
        pipeline | "Files" >> beam.Create(files), "Read", ReadDocuments(), counts
    )
    scores = (
        documents
        | "Text" >> beam.MapTuple(lambda key, doc: (key, " ".join(doc.split("\n"))))
        | "Score" >> RunInference(handler)
        | "Probability" >> beam.MapTuple(lambda key, result: (key, result.inference))
    )  # key, P(target)
    _ = (
        scores
        | "ScoreLines" >> beam.MapTuple(scored_line)
        | "WriteScores" >> WriteShards(join(out, "scores"), config.num_shards, ".tsv")
    )
    if config.top_k is not None:
        k = config.top_k
        chosen = (
            scores
            | "TopK" >> beam.combiners.Top.Of(k, key=lambda kv: (kv[1], kv[0]))
            | "Flatten" >> beam.FlatMap(lambda top: top)
        )
    else:
        threshold = config.threshold
        chosen = scores | "AboveThreshold" >> beam.Filter(lambda kv: kv[1] >= threshold)
    _ = (
        {"document": documents, "score": counted(chosen, "Count", CountSelected(), counts)}
        | "Join" >> beam.CoGroupByKey()  # key, {"document": [text], "score": [P] or []}
        | "Selected"
        >> beam.FlatMap(
            lambda kv: (
                [(kv[0], (kv[1]["document"][0], kv[1]["score"][0]))] if kv[1]["score"] else []
            )
        )
        | "Encode" >> beam.Map(selected_document)
        | "WriteSelected" >> WriteShards(join(out, "selected"), config.num_shards, ".txt")
    )
    _ = pipeline | "WriteSelection" >> WriteSummary(
        write_selection, counts, summary=summary, output_dir=out
    )


def run(config: DomainSelectConfig, beam_args=None) -> dict:
    """Select documents into `config.output`; returns selection.json."""
    files = input_files(config.input)
    if not files:
        raise StageError(f"{config.input}: no corpus files")
    AlbertTokenizer(config.spm_model)  # fail early on a bad vocabulary
    return run_stage(
        config.output,
        beam_args,
        lambda pipeline, out: build_pipeline(pipeline, files, config, out),
        SELECTION_FILE,
    )


def main(argv=None, prog="python -m pipelines.select") -> int:
    return stage_main(DomainSelectConfig, run, argv, prog=prog, description=__doc__, beam=True)
