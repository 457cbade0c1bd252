"""The one ALBERT tokenizer every stage and the model use: SentencePiece with ALBERT's
preprocessing.

Special ids are fixed by the vocabulary recipe: `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3,
`[MASK]`=4."""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import unicodedata

import sentencepiece as spm

from albert.errors import StageError
from albert.fs import filesystem, open_file
from albert.vocabulary_record import Preprocessing, vocabulary_preprocessing

SPIECE_UNDERLINE = "\u2581"
SPECIAL_PIECES = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}


def preprocess_text(text: str, lower: bool = True, keep_accents: bool = False) -> str:
    """google-research/albert's `preprocess_text`: collapse whitespace, strip accents (NFKD, then
    drop combining marks), lowercase. Like the reference (and unlike Hugging Face's slow tokenizer
    and XLNet), quotes are left as they are: `` and '' are not mapped to "."""
    text = " ".join(text.strip().split())
    if not keep_accents and not text.isascii():  # NFKD changes no ASCII text
        text = _combining_marks().sub("", unicodedata.normalize("NFKD", text))
    return text.lower() if lower else text


def split_digit_comma_pieces(sp: spm.SentencePieceProcessor, pieces: list[str]) -> list[str]:
    """The reference's rule: a piece ending in digit + ',' is re-encoded without the comma, then
    ','."""
    result: list[str] = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            sub_pieces = sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
            if piece[0] != SPIECE_UNDERLINE and sub_pieces and sub_pieces[0][0] == SPIECE_UNDERLINE:
                if len(sub_pieces[0]) == 1:
                    sub_pieces = sub_pieces[1:]
                else:
                    sub_pieces[0] = sub_pieces[0][1:]
            result.extend(sub_pieces)
            result.append(piece[-1])
        else:
            result.append(piece)
    return result


def _read_model_bytes(model_file: str) -> bytes:
    """The model file's bytes, read again once the file changed (size, time or stored hash): a
    vocabulary rewritten at the same path (a new --vocab-size in one process) is never stale."""
    fs, path = filesystem(model_file)
    return _read_file_version(model_file, repr(sorted(fs.info(path).items())))


@functools.lru_cache(maxsize=8)
def _read_file_version(model_file: str, version: str) -> bytes:
    with open_file(model_file, "rb") as handle:
        return handle.read()


def model_sha256(model_file: str) -> str:
    """Hex sha256 of a SentencePiece model file (local path or URL)."""
    return hashlib.sha256(_read_model_bytes(model_file)).hexdigest()


class AlbertTokenizer:
    """SentencePiece tokenization with ALBERT's preprocessing, as the reference and Hugging Face
    do it, with the preprocessing the vocabulary's record states (`albert.vocabulary_record`).

    The one way every stage builds its tokenizer: `AlbertTokenizer(spm_model)` reads the record
    beside the model; a flag a stage was given (`do_lower_case`, `keep_accents`, `language`; None
    = not given) that contradicts the record is a StageError. A model with no record (older
    vocabularies, the reference's) tokenizes as the flags say, the reference's preprocessing
    (lowercase, accents stripped) for those not given."""

    def __init__(
        self,
        model_file: str,
        do_lower_case: bool | None = None,
        keep_accents: bool | None = None,
        language: str | None = None,
    ):
        self.model_file = model_file
        self.model_proto = _read_model_bytes(model_file)
        self.preprocessing: Preprocessing = vocabulary_preprocessing(
            model_file, self.model_proto, do_lower_case, keep_accents, language
        )
        self.do_lower_case = self.preprocessing.lowercase
        self.keep_accents = not self.preprocessing.strip_accents
        try:
            self.sp = spm.SentencePieceProcessor(model_proto=self.model_proto)
        except RuntimeError as error:  # sentencepiece's answer to bytes that are no model
            raise StageError(f"{model_file}: not a SentencePiece model ({error})") from None
        for name, piece in SPECIAL_PIECES.items():
            setattr(self, f"{name}_id", self.sp.piece_to_id(piece))
        if (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id) != (0, 1, 2, 3, 4):
            raise StageError(
                f"{model_file}: not an ALBERT vocabulary: expected <pad>, <unk>, [CLS], [SEP], "
                "[MASK] "
                "at ids 0-4, got "
                f"{[self.sp.id_to_piece(i) for i in range(min(5, self.vocab_size))]}"
            )

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def model_sha256(self) -> str:
        return hashlib.sha256(self.model_proto).hexdigest()

    def preprocess(self, text: str) -> str:
        return preprocess_text(text, lower=self.do_lower_case, keep_accents=self.keep_accents)

    def tokenize(self, text: str) -> list[str]:
        """Pieces of `text` after preprocessing."""
        pieces = self.sp.encode(self.preprocess(text), out_type=str)
        return split_digit_comma_pieces(self.sp, pieces)

    def encode(self, text: str) -> list[int]:
        """Piece ids of `text` after preprocessing (no [CLS]/[SEP] added)."""
        return [self.sp.piece_to_id(piece) for piece in self.tokenize(text)]

    def piece_to_id(self, piece: str) -> int:
        return self.sp.piece_to_id(piece)

    def id_to_piece(self, piece_id: int) -> str:
        return self.sp.id_to_piece(piece_id)

    def is_control(self, piece_id: int) -> bool:
        """True for control and unknown symbols (never masked, never drawn as random
        replacements)."""
        return self.sp.is_control(piece_id) or self.sp.is_unknown(piece_id)

    def decode(self, ids: list[int]) -> str:
        return self.sp.decode(ids)

    def digit_comma_expansions(self) -> dict[int, list[int]]:
        """Ids of pieces the digit-comma rule re-splits, mapped to the ids they become."""
        expansions = {}
        for piece_id in range(self.vocab_size):
            piece = self.sp.id_to_piece(piece_id)
            pieces = split_digit_comma_pieces(self.sp, [piece])
            if pieces != [piece]:
                expansions[piece_id] = [self.sp.piece_to_id(p) for p in pieces]
        return expansions

    def in_graph(self) -> InGraphAlbertTokenizer:
        """The same tokenizer as TensorFlow ops (tensorflow-text), for tf.data and saved models."""
        return InGraphAlbertTokenizer(self)


def _code_point_ranges(predicate) -> list[tuple[int, int]]:
    """Inclusive ranges of the code points satisfying `predicate`."""
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        if predicate(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return ranges


def _re2_class(ranges: list[tuple[int, int]]) -> str:
    return (
        "["
        + "".join(
            f"\\x{{{low:x}}}" + (f"-\\x{{{high:x}}}" if high != low else "") for low, high in ranges
        )
        + "]"
    )


@functools.lru_cache(maxsize=1)
def _combining_ranges() -> list[tuple[int, int]]:
    """The characters unicodedata.combining() flags: both paths strip exactly these marks."""
    return _code_point_ranges(unicodedata.combining)


@functools.lru_cache(maxsize=1)
def _combining_marks() -> re.Pattern:
    return re.compile(
        "["
        + "".join(
            re.escape(chr(low)) + "-" + re.escape(chr(high)) for low, high in _combining_ranges()
        )
        + "]+"
    )


@functools.lru_cache(maxsize=1)
def _python_whitespace_class() -> str:
    """The characters Python's str.split() splits on, so both paths collapse the same whitespace."""
    return _re2_class(_code_point_ranges(str.isspace))


class InGraphAlbertTokenizer:
    """`AlbertTokenizer` as TensorFlow ops: the same preprocessing, SentencePiece ids and
    digit-comma rule.

    `tokenize(texts)` maps a string tensor of shape [N] to a RaggedTensor of int32 ids [N, None]
    equal to `[AlbertTokenizer.encode(t) for t in texts]`. The digit-comma rule depends only on the
    piece, so it is a precomputed id -> ids table applied with a ragged gather. Needs tensorflow and
    tensorflow-text (imported here only, so the Python path never loads TensorFlow).
    """

    def __init__(self, tokenizer: AlbertTokenizer):
        import tensorflow as tf  # heavy: the in-graph tokenizer only
        import tensorflow_text as tf_text  # heavy: the in-graph tokenizer only

        self._tf, self._tf_text = tf, tf_text
        self.do_lower_case, self.keep_accents = tokenizer.do_lower_case, tokenizer.keep_accents
        self.sentencepiece = tf_text.SentencepieceTokenizer(
            model=tokenizer.model_proto, out_type=tf.int32
        )
        expansions = tokenizer.digit_comma_expansions()
        if expansions:
            rows = [
                expansions.get(piece_id, [piece_id]) for piece_id in range(tokenizer.vocab_size)
            ]
            self._expansions = tf.RaggedTensor.from_row_lengths(
                tf.constant([i for row in rows for i in row], tf.int32),
                tf.constant([len(row) for row in rows], tf.int64),
            )
        else:
            self._expansions = None
        self._whitespace = _python_whitespace_class() + "+"
        self._combining = _re2_class(_combining_ranges()) + "+"

    def preprocess(self, texts):
        """ALBERT's preprocessing of a string tensor, equal to `preprocess_text` element by
        element."""
        tf, tf_text = self._tf, self._tf_text
        texts = tf.strings.regex_replace(texts, self._whitespace, " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
        if not self.keep_accents:
            texts = tf_text.normalize_utf8(texts, "NFKD")
            texts = tf.strings.regex_replace(texts, self._combining, "")
        if self.do_lower_case:
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def split_words(self, texts):
        """The words of a string tensor [N] as Python's `str.split()` finds them: a string
        RaggedTensor [N, None] and each word's begin and end byte offsets (int64, ragged alike)."""
        return self._tf_text.regex_split_with_offsets(texts, self._whitespace)

    def tokenize(self, texts):
        """Piece ids (int32 RaggedTensor [N, None]) of a string tensor [N]."""
        tf = self._tf
        ids = self.sentencepiece.tokenize(self.preprocess(texts))
        if self._expansions is None:
            return ids
        return tf.gather(self._expansions, ids).merge_dims(1, 2)
