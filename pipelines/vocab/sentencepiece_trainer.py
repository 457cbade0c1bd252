"""ALBERT's SentencePiece recipe, written once, and training a model in memory with it.

The recipe (google-research/albert's README): a unigram model, ids 0-4 = <pad> <unk> [CLS] [SEP]
[MASK], no BOS/EOS, ALBERT's user-defined symbols. `trainer_kwargs` gives it as keyword arguments
of `SentencePieceTrainer.train`; the vocabulary stage, its benchmarks and the tests' small
vocabularies all start from it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

import sentencepiece as spm

from albert.errors import StageError

CONTROL_SYMBOLS = ["[CLS]", "[SEP]", "[MASK]"]
# A list, not the reference README's quoted "(,),\",-,.,–,£,€", which current sentencepiece
# mis-parses.
USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]


def trainer_kwargs(vocab_size: int, **options) -> dict:
    """ALBERT's recipe for a `vocab_size` model as `SentencePieceTrainer.train` keyword arguments,
    quiet (minloglevel 2); `options` add to it or replace parts of it (the input, the writer,
    `user_defined_symbols=[]` for none, `hard_vocab_limit=False` for a tiny corpus ...)."""
    return {
        "model_type": "unigram",
        "vocab_size": vocab_size,
        "pad_id": 0,
        "unk_id": 1,
        "bos_id": -1,
        "eos_id": -1,
        "control_symbols": CONTROL_SYMBOLS,
        "user_defined_symbols": USER_DEFINED_SYMBOLS,
        "minloglevel": 2,
        **options,
    }


def translate_trainer_error(error: RuntimeError, vocab_size: int, sample_size: int) -> StageError:
    """SentencePiece's internal check failures as errors that say what to change."""
    message = str(error)
    too_high = re.search(
        r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", message
    )
    if too_high:
        return StageError(
            f"the sample ({sample_size} sentences) has too few distinct characters and words for "
            f"--vocab-size {vocab_size}: lower --vocab-size to <= {too_high.group(2)}, or add text"
        )
    too_small = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", message)
    if too_small:
        return StageError(
            f"--vocab-size {vocab_size} cannot hold the {too_small.group(2)} characters and "
            f"special symbols the sample needs: raise --vocab-size to >= {too_small.group(2)}, "
            "or lower "
            "--character-coverage"
        )
    return StageError(f"SentencePiece training failed: {message}")


def train_sentencepiece(
    sentences: Iterable[str],
    sample_size: int,
    vocab_size: int,
    character_coverage: float = 0.99995,
    num_threads: int = 0,
    seed: int = 0,
    normalization: str = "nmt_nfkc",
) -> bytes:
    """A serialized unigram SentencePiece model trained with ALBERT's recipe on `sentences`, its
    normalizer SentencePiece's rule `normalization`.

    The model stores no paths, so the same sentences, options and threads give the same bytes.
    """
    if sample_size == 0:
        raise StageError("the corpus has no sentences: check --input points at a segmented corpus")
    spm.set_random_generator_seed(seed)
    model = _BytesWriter()
    try:
        spm.SentencePieceTrainer.train(
            **trainer_kwargs(
                vocab_size,
                sentence_iterator=iter(sentences),
                model_writer=model,
                character_coverage=character_coverage,
                normalization_rule_name=normalization,
                input_sentence_size=0,
                shuffle_input_sentence=False,
                num_threads=num_threads or os.cpu_count() or 1,
                # lines are limited before preprocessing: never skip one here
                max_sentence_length=1 << 16,
            )
        )
    except RuntimeError as error:
        raise translate_trainer_error(error, vocab_size, sample_size) from None
    return model.data


class _BytesWriter:
    """The `model_writer` SentencePiece writes the serialized model to."""

    def __init__(self):
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


def vocab_file_text(model_proto: bytes) -> str:
    """The `.vocab` file SentencePiece writes: one `piece<TAB>score` line per id."""
    sp = spm.SentencePieceProcessor(model_proto=model_proto)
    return "".join(
        f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n" for i in range(sp.get_piece_size())
    )
