"""The vocabulary's record of how its text was preprocessed, a JSON file beside the model
(`spiece.model` -> `spiece.json`), written by the vocab stage and read by every stage that
tokenizes (tfrecords, the exports, fine-tuning, distillation, evaluation, selection).

    {"format": "albert-vocabulary/1", "language": "ja", "lowercase": false,
     "strip_accents": false, "normalization": "nmt_nfkc", "model_sha256": "<the model's sha256>"}

`model_sha256` ties the record to its model: a record beside another model is an error. A model
with no record beside it (a vocabulary written before the record existed, the reference's own)
gets the reference's preprocessing (lowercase, accents stripped, language unknown) unless a stage's
flags say otherwise. SentencePiece's
model has no free field for such facts (its normalizer spec holds only the compiled rules and
their name), hence the file beside it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from albert.errors import StageError
from albert.fs import exists, open_file

FORMAT = "albert-vocabulary/1"


@dataclass(frozen=True)
class Preprocessing:
    """How a vocabulary's text was preprocessed before SentencePiece (and its own normalizer,
    `normalization`) saw it: every stage that tokenizes for it must do the same."""

    lowercase: bool = True
    strip_accents: bool = True
    normalization: str = "nmt_nfkc"
    language: str | None = None

    def describe(self) -> str:
        """One phrase, 'cased, accents kept, SentencePiece normalization nmt_nfkc', for logs,
        errors, the report and the model card."""
        case = "lowercased" if self.lowercase else "cased"
        accents = "accents stripped" if self.strip_accents else "accents kept"
        return f"{case}, {accents}, SentencePiece normalization {self.normalization}"


REFERENCE = Preprocessing()
"""google-research/albert's preprocessing: lowercase, accents stripped (a model without record)."""


def record_path(model_file: str) -> str:
    """The record beside a model: `x.model` -> `x.json` (any other name: name + `.json`)."""
    return model_file.removesuffix(".model") + ".json"


def record_json(preprocessing: Preprocessing, model_proto: bytes) -> str:
    """The record's text for a model's bytes."""
    record = {
        "format": FORMAT,
        **asdict(preprocessing),
        "model_sha256": hashlib.sha256(model_proto).hexdigest(),
    }
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def write_record(model_file: str, preprocessing: Preprocessing, model_proto: bytes) -> None:
    """Write the record of the model `model_proto` (written at `model_file`) beside it."""
    with open_file(record_path(model_file), "w", encoding="utf-8") as handle:
        handle.write(record_json(preprocessing, model_proto))


def read_record(model_file: str, model_proto: bytes) -> Preprocessing | None:
    """The preprocessing recorded beside `model_file` (whose bytes are `model_proto`), None where
    no record is. StageError (one line naming the record) for a record that is malformed or
    describes another model."""
    path = record_path(model_file)
    if not exists(path):
        return None
    try:
        with open_file(path, "r", encoding="utf-8") as handle:
            record = json.load(handle)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StageError(f"{path}: not a vocabulary record ({error})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise StageError(f"{path}: not a vocabulary record (expected format {FORMAT!r})")
    sha = hashlib.sha256(model_proto).hexdigest()
    if record.get("model_sha256") != sha:
        raise StageError(
            f"{path}: records the preprocessing of another model (sha256 "
            f"{str(record.get('model_sha256'))[:12]}…, {model_file} has {sha[:12]}…): write the "
            "vocabulary again with albert vocab, or put the record of this model beside it"
        )
    try:
        return Preprocessing(
            lowercase=_boolean(record, "lowercase", path),
            strip_accents=_boolean(record, "strip_accents", path),
            normalization=str(record["normalization"]),
            language=record.get("language"),
        )
    except KeyError as error:
        raise StageError(f"{path}: the record has no {error.args[0]!r}") from None


def _boolean(record: dict, name: str, path: str) -> bool:
    value = record[name]
    if not isinstance(value, bool):
        raise StageError(f"{path}: {name} is {value!r}, expected true or false")
    return value


def vocabulary_preprocessing(
    model_file: str,
    model_proto: bytes,
    do_lower_case: bool | None = None,
    keep_accents: bool | None = None,
    language: str | None = None,
) -> Preprocessing:
    """The preprocessing to tokenize with for the model `model_file`: its record's, where it has
    one, and a flag given (not None) that contradicts the record is a StageError naming the flag
    and the record; without a record the flags as given, the reference's (lowercase, accents
    stripped) for those not given, so vocabularies older than the record work as they did."""
    recorded = read_record(model_file, model_proto)
    flags = {"do_lower_case": do_lower_case, "keep_accents": keep_accents, "language": language}
    if recorded is None:
        return Preprocessing(
            lowercase=True if do_lower_case is None else do_lower_case,
            strip_accents=True if keep_accents is None else not keep_accents,
            language=language,
        )
    facts = {
        "do_lower_case": recorded.lowercase,
        "keep_accents": not recorded.strip_accents,
        "language": recorded.language,
    }
    for name, value in flags.items():
        if value is not None and value != facts[name]:
            flag = "--" + name.replace("_", "-")
            shown = {True: "true", False: "false", None: "none"}.get(facts[name], facts[name])
            raise StageError(
                f"{flag} {str(value).lower()}: contradicts the vocabulary's record "
                f"{record_path(model_file)}, which says {name}={shown} "
                f"({recorded.describe()}); drop the flag: every stage reads the record"
            )
    return recorded
