"""The parameters of `albert run` (`python -m flows.pipeline.flow`): the corpus, the run
directory, the demo's training budget, the vocabulary, the `--downstream` fine-tunes
(flows.pipeline.downstream) and the evaluation sets the decontamination stage checks: `--eval`'s
and, by default, the dev sets the fine-tunes are scored on, so that no model is fine-tuned and
scored on a set whose overlap with its pretraining corpus went unreported."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from albert.config import CommaList, JsonDict
from albert.fs import join
from albert.languages import LanguageCode
from albert.task_yaml import read_task_yaml
from flows.language_settings import with_language
from flows.run_config import RunConfig
from model.tasks import get_task


def downstream_sets(downstream: list[str], finetune: dict) -> list[str]:
    """The files each `TASK=DIR` fine-tune is scored on: a registered task's (`finetune`'s
    dev_file, else its dev files in DIR: GLUE `dev*.tsv`, SQuAD `dev-v1.1.json`, RACE `dev/`), or
    a user's task's DIR, whose `task.yaml` names its dev file and text columns (decontamination
    reads them there). A malformed item or an unknown task is said by the fine-tunes' own
    configs."""
    paths = []
    for item in downstream:
        task, _, directory = item.partition("=")
        try:
            spec = get_task(task)
        except KeyError:
            paths += [directory] if read_task_yaml(directory) else []
            continue
        dev = finetune.get("dev_file")
        paths += [dev] if dev else [join(directory, name) for name in spec.dev_files]
    return paths


def evaluation_sets(eval_paths: list[str], downstream: list[str], finetune: dict) -> list[str]:
    """`--eval`'s paths, then the downstream dev sets not among them, each once."""
    return list(dict.fromkeys([*eval_paths, *downstream_sets(downstream, finetune)]))


class PretrainPipelineConfig(RunConfig):
    """Parameters of the end-to-end flow; per-stage dicts set any other field of a stage's
    config."""

    input: list[str] = Field(
        default_factory=list,
        description="raw corpus files or globs (Wikipedia dumps, books, text); default: the demo "
        "corpus shipped with the package (flows/pipeline/demo_corpus)",
    )
    run_dir: str = Field(
        "runs/enwiki-sample",
        description="run directory (local or gs://); one subdirectory per stage",
    )
    # The demo's budget (docs/flows.md, "The demo learns"): 32k sequences of 64 tokens that never
    # repeat a sentence-order pair (dupe factor 10), XLA at batch 32, LAMB at 0.004: about 5 min on
    # 2 cores.
    max_seq_length: int = Field(
        64, gt=8, description=RunConfig.model_fields["max_seq_length"].description
    )
    dupe_factor: int = Field(10, gt=0, description="times each document is masked differently")
    steps: int = Field(1000, gt=0, description="pretraining steps")
    learning_rate: float | None = Field(0.004, gt=0, description="peak learning rate")
    jit_compile: bool = Field(
        True, description="XLA-compile the training step (faster on CPU at batch 32+)"
    )
    language: LanguageCode | None = Field(
        None,
        description="the corpus's language: its profile (docs/languages.md) sets segment's, "
        "vocab's and tfrecords' language settings that --segment, --vocab, --tfrecords leave "
        "unset; none: every language kept, the reference's English preprocessing",
    )
    vocab_size: int = Field(8000, gt=5, description="SentencePiece vocabulary size")
    vocab: JsonDict = Field(
        default_factory=dict, description="other VocabConfig fields (YAML or JSON)"
    )
    downstream: list[str] = Field(
        default_factory=list,
        description="TASK=DIR (any task `albert finetune` knows): fine-tune the pretrained model "
        "and a randomly initialised twin with the same budget and seed, side by side in the report",
    )
    finetune: JsonDict = Field(
        default_factory=dict, description="other FinetuneConfig fields for --downstream"
    )
    predict: Annotated[list[str], CommaList] = Field(
        default_factory=list,
        description="files to label with each --downstream fine-tune (albert predict, the text "
        "in the first column) into RUN_DIR/predict-TASK; the report shows the predictions",
    )
    distill: JsonDict = Field(
        default_factory=dict,
        description='DistillConfig fields (at least student, e.g. {"student": "albert-nano"}): '
        "after each --downstream fine-tune, distil it into that student (albert distill); "
        "default: none",
    )
    eval: list[str] = Field(
        default_factory=list,
        description="evaluation set (GLUE task directory, SQuAD .json, RACE directory, .txt or "
        ".jsonl; repeat the flag): after segment, report how many of its examples share a 13-gram "
        "with the corpus (albert decontaminate); default: none",
    )
    remove_contaminated: bool = Field(
        False,
        description="vocab and tfrecords read the corpus without the sentences that overlap an "
        "evaluation set (--eval, --downstream's dev sets)",
    )
    check_downstream: bool = Field(
        True,
        description="the decontamination report also checks the dev set each --downstream task "
        "is scored on (removing nothing without --remove-contaminated)",
    )

    _language_settings = model_validator(mode="before")(with_language)

    @model_validator(mode="after")
    def _remove_needs_eval(self):
        if self.remove_contaminated and not self.evaluation_sets():
            raise ValueError("--remove-contaminated needs an evaluation set (--eval PATH)")
        return self

    def evaluation_sets(self) -> list[str]:
        """--eval's paths and, with check_downstream, the --downstream dev sets."""
        downstream = self.downstream if self.check_downstream else []
        return evaluation_sets(self.eval, downstream, self.finetune)

    def corpus_dir(self) -> str:
        """The corpus vocab and tfrecords read: segment's, or decontaminate's cleaned copy."""
        return self.stage_dir("decontaminate" if self.remove_contaminated else "segment")
