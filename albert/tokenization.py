"""The one ALBERT tokenizer every stage and the model use: SentencePiece with ALBERT's preprocessing.

Special ids are fixed by the vocabulary recipe: `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata

import sentencepiece as spm

from albert import fileio

SPIECE_UNDERLINE = "\u2581"
SPECIAL_PIECES = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}


def preprocess_text(text: str, lower: bool = True, keep_accents: bool = False) -> str:
    """ALBERT's text normalisation: collapse whitespace, `` and '' to ", strip accents, lowercase."""
    text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(char for char in text if not unicodedata.combining(char))
    return text.lower() if lower else text


def split_digit_comma_pieces(sp: spm.SentencePieceProcessor, pieces: list[str]) -> list[str]:
    """The reference's rule: a piece ending in digit + ',' is re-encoded without the comma, then ','."""
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


@functools.lru_cache(maxsize=8)
def _read_model_bytes(model_file: str) -> bytes:
    with fileio.open_file(model_file, "rb") as handle:
        return handle.read()


def model_sha256(model_file: str) -> str:
    """Hex sha256 of a SentencePiece model file (local path or URL)."""
    return hashlib.sha256(_read_model_bytes(model_file)).hexdigest()


class AlbertTokenizer:
    """SentencePiece tokenization with ALBERT's preprocessing, as the reference and Hugging Face do it."""

    def __init__(self, model_file: str, do_lower_case: bool = True, keep_accents: bool = False):
        self.model_file = model_file
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self.model_proto = _read_model_bytes(model_file)
        self.sp = spm.SentencePieceProcessor(model_proto=self.model_proto)
        for name, piece in SPECIAL_PIECES.items():
            setattr(self, f"{name}_id", self.sp.piece_to_id(piece))
        if (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id) != (0, 1, 2, 3, 4):
            raise ValueError(
                f"{model_file}: not an ALBERT vocabulary: expected <pad>, <unk>, [CLS], [SEP], [MASK] "
                f"at ids 0-4, got {[self.sp.id_to_piece(i) for i in range(min(5, self.vocab_size))]}"
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
        """True for control and unknown symbols (never masked, never drawn as random replacements)."""
        return self.sp.is_control(piece_id) or self.sp.is_unknown(piece_id)

    def decode(self, ids: list[int]) -> str:
        return self.sp.decode(ids)
