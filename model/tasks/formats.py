"""The benchmark tasks' file formats (`model.tasks.task.Format`): GLUE's TSV files, SQuAD's JSON
and RACE's directories, read by the readers in `albert/` (decontamination reads the same files)
and encoded by `model.tasks.encode` and `model.tasks.squad_features`."""

from __future__ import annotations

from albert.glue_tsv import read_glue
from albert.race_json import read_race
from albert.squad_json import read_squad
from model.tasks import squad_features
from model.tasks.encode import encode_glue, encode_race
from model.tasks.task import Format


def _read_glue(task, settings, counts):
    return read_glue(task.name, settings.path, settings.split, settings.on_error, counts)


def _encode_glue(tokenizer, examples, settings, counts):
    return encode_glue(
        tokenizer, examples, settings.max_seq_length, settings.truncation, settings.head_tokens
    )


def _encode_race(tokenizer, examples, settings, counts):
    return encode_race(
        tokenizer, examples, settings.max_seq_length, settings.truncation, settings.head_tokens
    )


def _encode_squad(tokenizer, examples, settings, counts):
    _, features = squad_features.prepare(
        tokenizer,
        examples,
        True,
        max_seq_length=settings.max_seq_length,
        doc_stride=settings.doc_stride,
        max_query_length=settings.max_query_length,
        counts=counts,
    )
    return squad_features.features_to_arrays(features)


GLUE = Format(read=_read_glue, encode=_encode_glue)
RACE = Format(read=lambda task, settings, counts: read_race(settings.path), encode=_encode_race)
# A SQuAD paragraph's questions share its tokenized context, so a chunk never splits them.
SQUAD = Format(
    read=lambda task, settings, counts: read_squad(settings.path, counts),
    encode=_encode_squad,
    cut_keys=lambda examples: [e.context for e in examples],
)
