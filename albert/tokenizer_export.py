"""Our tokenizer for other tools: a Hugging Face fast tokenizer (`tokenizer.json` and its configs)
and a SentencePiece model whose own normalizer does ALBERT's preprocessing (for keras-hub).

Both give `AlbertTokenizer.encode`'s ids except where the tools cannot express our rules (listed in
docs/vocab.md): the digit-comma rule is approximated by never choosing the pieces it re-splits (what
Hugging Face's own converter does), Python's context-dependent lowercasing of a final capital sigma,
and equal-score segmentations that a word-by-word Unigram breaks differently from SentencePiece.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import tempfile
import unicodedata

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)

from albert.fs import join, makedirs, open_file
from albert.tokenization import (
    SPECIAL_PIECES,
    SPIECE_UNDERLINE,
    AlbertTokenizer,
    _combining_ranges,
    _python_whitespace_class,
    _re2_class,
    preprocess_text,
)
from albert.vocabulary_record import write_record

# A re-split piece is never chosen when its score is below every alternative segmentation of it.
DIGIT_COMMA_PENALTY = 100.0


def is_digit_comma_piece(piece: str) -> bool:
    """The pieces the reference's digit-comma rule re-splits (`▁10,` -> `▁10`, `,`)."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _model_proto(tokenizer: AlbertTokenizer):

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_proto)
    return proto


def hf_tokenizer(tokenizer: AlbertTokenizer):
    """A `tokenizers.Tokenizer` equal to `tokenizer` as far as the library can express it.

    Normalizer: Python's whitespace collapsed and stripped, NFKD and the combining marks
    `unicodedata.combining` flags removed, then NFC (unless keep_accents: NFKD splits Hangul
    syllables into jamo, which SentencePiece's own NFKC recomposes and the compiled charsmap alone
    does not), lowercase (unless cased), then the vocabulary's own SentencePiece normalizer (its
    precompiled charsmap) and its whitespace rules.
    Pre-tokenizer: SentencePiece's word-start `▁`. Model: Unigram with the vocabulary's pieces and
    scores; pieces the digit-comma rule re-splits are penalised so they are never chosen.
    Post-processor: `[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]` with segment ids 0/1.
    """

    proto = _model_proto(tokenizer)
    steps = [normalizers.Replace(Regex(_python_whitespace_class() + "+"), " "), normalizers.Strip()]
    if not tokenizer.keep_accents:
        steps += [
            normalizers.NFKD(),
            normalizers.Replace(Regex(_re2_class(_combining_ranges())), ""),
            normalizers.NFC(),
        ]
    if tokenizer.do_lower_case:
        steps.append(normalizers.Lowercase())
    if proto.normalizer_spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    steps += [normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
    vocab = [
        (
            piece.piece,
            piece.score - DIGIT_COMMA_PENALTY if is_digit_comma_piece(piece.piece) else piece.score,
        )
        for piece in proto.pieces
    ]
    hf = Tokenizer(models.Unigram(vocab, unk_id=tokenizer.unk_id, byte_fallback=False))
    hf.normalizer = normalizers.Sequence(steps)
    hf.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=SPIECE_UNDERLINE, prepend_scheme="always"
    )
    hf.decoder = decoders.Metaspace(replacement=SPIECE_UNDERLINE, prepend_scheme="always")
    hf.add_special_tokens(
        [AddedToken(piece, special=True, normalized=False) for piece in SPECIAL_PIECES.values()]
    )
    cls, sep = SPECIAL_PIECES["cls"], SPECIAL_PIECES["sep"]
    hf.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.cls_id), (sep, tokenizer.sep_id)],
    )
    return hf


def special_tokens_map() -> dict[str, str]:
    """transformers' `special_tokens_map.json` for ALBERT."""
    return {
        "bos_token": SPECIAL_PIECES["cls"],
        "eos_token": SPECIAL_PIECES["sep"],
        "unk_token": SPECIAL_PIECES["unk"],
        "sep_token": SPECIAL_PIECES["sep"],
        "pad_token": SPECIAL_PIECES["pad"],
        "cls_token": SPECIAL_PIECES["cls"],
        "mask_token": SPECIAL_PIECES["mask"],
    }


def write_hf_tokenizer(
    tokenizer: AlbertTokenizer, directory: str, model_max_length: int | None = None
) -> None:
    """Write `tokenizer.json`, `tokenizer_config.json`, `special_tokens_map.json`, `spiece.model`
    and its record `spiece.json` (`albert.vocabulary_record`) into `directory` (created if needed),
    so `AutoTokenizer.from_pretrained(directory)` loads them and our stages tokenize with the
    directory's `spiece.model` as the model was trained."""
    makedirs(directory)
    # The generic fast class: transformers' AlbertTokenizer would rebuild its own normalizer (``
    # and '' to ", StripAccents) instead of using tokenizer.json's.
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        **special_tokens_map(),
    }
    if model_max_length:
        config["model_max_length"] = model_max_length
    files = {
        "tokenizer.json": hf_tokenizer(tokenizer).to_str(pretty=True),
        "tokenizer_config.json": json.dumps(config, indent=2, sort_keys=True),
        "special_tokens_map.json": json.dumps(special_tokens_map(), indent=2, sort_keys=True),
    }
    for name, text in files.items():
        with open_file(join(directory, name), "w") as handle:
            handle.write(text)
    with open_file(join(directory, "spiece.model"), "wb") as handle:
        handle.write(tokenizer.model_proto)
    write_record(join(directory, "spiece.model"), tokenizer.preprocessing, tokenizer.model_proto)


@functools.lru_cache(maxsize=1)
def _assigned_characters() -> tuple[str, ...]:
    """Every character but surrogates and unassigned code points (nothing to map there)."""
    return tuple(
        char
        for char in map(chr, range(1, sys.maxunicode + 1))
        if unicodedata.category(char) not in ("Cs", "Cn")
    )


def _normalization_rules(normalizer_spec: bytes, lower: bool, keep_accents: bool) -> dict[str, str]:
    """Source -> target strings that make a SentencePiece normalizer (`normalizer_spec`, a
    serialized NormalizerSpec) do `preprocess_text` followed by its own charsmap: one rule per
    character it changes, plus one per canonical decomposition so that decomposed text composes
    as NFKC would."""
    holder = sentencepiece_model_pb2.ModelProto()
    holder.normalizer_spec.ParseFromString(normalizer_spec)
    charsmap = spm.SentencePieceNormalizer(model_proto=holder.SerializeToString())
    chars = _assigned_characters()
    preprocessed = [preprocess_text(char, lower, keep_accents) for char in chars]
    mapped = charsmap.normalize(preprocessed)  # one call for all: the same as one per character
    rules = {}
    for char, target in zip(chars, mapped):
        # SentencePiece collapses and strips spaces, as preprocess does: a space maps to " "
        target = " " if char.isspace() else target
        if target != char:
            rules[char] = target
        decomposed = unicodedata.normalize("NFD", char)
        if len(decomposed) > 1:
            rules[decomposed] = target
    return rules


def sentencepiece_with_preprocessing(tokenizer: AlbertTokenizer) -> bytes:
    """The vocabulary as a SentencePiece model that gives `tokenizer.encode`'s ids on raw text.

    Its normalizer (a charsmap compiled by SentencePiece from `_normalization_rules`) does ALBERT's
    preprocessing, so tools that run SentencePiece on raw text (keras-hub, tensorflow-text)
    lowercase and strip accents as we do; pieces the digit-comma rule re-splits are marked UNUSED,
    so SentencePiece never chooses them. Pieces, ids and scores are unchanged.
    """
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_proto)
    proto.normalizer_spec.precompiled_charsmap = _preprocessing_charsmap(
        proto.normalizer_spec.SerializeToString(), tokenizer.do_lower_case, tokenizer.keep_accents
    )
    proto.normalizer_spec.name = "albert_preprocess"
    for piece in proto.pieces:
        if is_digit_comma_piece(piece.piece):
            piece.type = piece.UNUSED
    return proto.SerializeToString()


@functools.lru_cache(maxsize=4)
def _preprocessing_charsmap(normalizer_spec: bytes, lower: bool, keep_accents: bool) -> bytes:
    """The charsmap SentencePiece compiles from `_normalization_rules`: the same for every
    vocabulary trained with one normalizer, so a process computes it once."""

    def hex_codes(text: str) -> str:
        return " ".join(f"{ord(char):X}" for char in text)

    with tempfile.NamedTemporaryFile("w", suffix=".tsv", encoding="utf-8") as rules_file:
        rules = _normalization_rules(normalizer_spec, lower, keep_accents)
        for source, target in sorted(rules.items()):
            rules_file.write(f"{hex_codes(source)}\t{hex_codes(target)}\n")
        rules_file.flush()
        compiled = io.BytesIO()  # SentencePiece compiles rules only while training: a 3-piece model
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["a b c"]),
            model_writer=compiled,
            model_type="char",
            vocab_size=4,
            hard_vocab_limit=False,
            normalization_rule_tsv=rules_file.name,
            minloglevel=2,
        )
    normalizer = sentencepiece_model_pb2.ModelProto()
    normalizer.ParseFromString(compiled.getvalue())
    return normalizer.normalizer_spec.precompiled_charsmap
