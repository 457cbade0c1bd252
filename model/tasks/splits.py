"""A task split's examples and their encoding, from plain settings (`SplitSettings`): what
fine-tuning encodes, in its own process or in worker processes (`model.tasks.parallel_encoding`).
Only the light readers and encoders: a worker imports no Keras."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from albert.hashing import stable_hash
from albert.squad_json import SquadExample
from albert.tokenization import AlbertTokenizer
from model.tasks.own_task import OwnTaskSettings, own_task
from model.tasks.registry import get_task
from model.tasks.task import Task


@dataclass(frozen=True)
class SplitSettings:
    """One split of a task and how to encode it; only str, int and None fields (a worker gets them
    as JSON). `holdout_cut` > 0 (SQuAD v2 training): the articles whose `stable_hash` with
    `holdout_seed` falls below it out of 10,000 are held out, not encoded. `task_source`: a user's
    task's settings (`Task.source`), by which a worker builds the task as its parent did."""

    task: str
    path: str
    split: str
    spm_model: str
    max_seq_length: int
    limit: int | None = None
    on_error: str = "fail"
    truncation: str = "head"
    head_tokens: int = 128
    doc_stride: int = 128
    max_query_length: int = 64
    holdout_seed: int = 0
    holdout_cut: int = 0
    task_source: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SplitSettings:
        return cls(**json.loads(text))


def task_of(settings: SplitSettings) -> Task:
    """The split's task: a user's (`model.tasks.own_task`), or the registered one it names."""
    if settings.task_source is not None:
        return own_task(OwnTaskSettings.from_json(settings.task_source))
    return get_task(settings.task)


def read_examples(settings: SplitSettings, counts: dict | None = None) -> list:
    """The split's first `limit` examples (all when None), read by its task's `Format`; `counts`
    receives the reader's totals."""
    task, counts = task_of(settings), counts if counts is not None else {}
    examples = list(task.format.read(task, settings, counts))
    return examples[: settings.limit] if settings.limit else examples


def held_out(settings: SplitSettings, example: SquadExample) -> bool:
    """Whether the example's article is held out (see `SplitSettings`)."""
    if not settings.holdout_cut:
        return False
    key = f"{settings.holdout_seed}:{example.title or example.qas_id}".encode()
    return stable_hash(key) % 10_000 < settings.holdout_cut


def encoded_examples(settings: SplitSettings, examples: list) -> list:
    """The examples `encode` is given: all but the held-out ones."""
    return [e for e in examples if not held_out(settings, e)]


def cut_keys(settings: SplitSettings, examples: list) -> list:
    """Where the examples may be cut into chunks: between two of different keys (the task's
    `Format.cut_keys`)."""
    return task_of(settings).format.cut_keys(examples)


def encode(
    settings: SplitSettings, tokenizer: AlbertTokenizer, examples: list, counts: dict
) -> dict[str, np.ndarray]:
    """The examples' model inputs and labels (`labels`; SQuAD: `start_positions`,
    `end_positions`), int32/float32 arrays with one row per example (SQuAD: per window); `counts`
    receives the SQuAD alignment totals. The task's `Format.encode`."""
    return task_of(settings).format.encode(tokenizer, examples, settings, counts)
