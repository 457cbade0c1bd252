"""The exported tokenizers give our ids on real text: the Hugging Face fast tokenizer
(`AutoTokenizer.from_pretrained` on what `write_hf_tokenizer` writes) and the SentencePiece model
with ALBERT's preprocessing compiled in (keras-hub's tokenizer), on the shared corpora (books, SQuAD
contexts and questions, GLUE sentences), with the reference vocabulary and one our job trains.

The one expected difference is an exact tie: two segmentations with the same unigram score, which
SentencePiece (scoring the whole sentence) and tokenizers (scoring word by word) break differently
through float rounding. Full-corpus figures: `python -m benchmarks.tokenizer_export`.
"""

from __future__ import annotations

import logging
import shutil

import pytest
import sentencepiece as spm
import tensorflow as tf
from conftest import shared_path
from tokenizer_corpora import corpus_lines

from albert.tokenization import AlbertTokenizer
from albert.tokenizer_export import sentencepiece_with_preprocessing, write_hf_tokenizer
from pipelines.vocab import stage as vocab

logging.getLogger("transformers").setLevel(logging.ERROR)

TRICKY = [
    "In 10, the year 1,000, (a-b) 10,",
    "``Quoted'' CAFÉ naïve ﬁne\u00a0½ Ångström  İstanbul",
    "  spaces\tand\nbreaks  ",
    '£5 – €6 "x" (y). z-w',
]


def equal_score_tie(ours: AlbertTokenizer, ids: list[int], other: list[int]) -> bool:
    """Two segmentations of the same text with the same unigram score."""
    same_text = "".join(map(ours.id_to_piece, ids)) == "".join(map(ours.id_to_piece, other))
    score = sum(map(ours.sp.get_score, ids)) - sum(map(ours.sp.get_score, other))
    return same_text and abs(score) < 1e-4


def agreement(ours: AlbertTokenizer, directory, lines: list[tuple[str, str]]) -> dict:
    """Lines where the exports' ids equal ours; asserts every Hugging Face difference is a tie and
    the SentencePiece export has none."""
    # here, not at collection: transformers costs every xdist worker seconds to import
    transformers = pytest.importorskip("transformers")
    write_hf_tokenizer(ours, str(directory))
    hf = transformers.AutoTokenizer.from_pretrained(str(directory))
    texts = [text for _, text in lines]
    hf_ids = hf(texts, add_special_tokens=False)["input_ids"]
    sp_ids = spm.SentencePieceProcessor(model_proto=sentencepiece_with_preprocessing(ours)).encode(
        texts
    )
    equal, ties = {}, 0
    for (source, text), hf_line, sp_line in zip(lines, hf_ids, sp_ids):
        ids = ours.encode(text)
        assert sp_line == ids, text
        same, total = equal.get(source, (0, 0))
        equal[source] = (same + (hf_line == ids), total + 1)
        if hf_line != ids:
            assert equal_score_tie(ours, ids, hf_line), text
            ties += 1
    rate = sum(same for same, _ in equal.values()) / len(lines)
    print(
        {
            "vocab": ours.model_file,
            "lines": len(lines),
            "hf_equal_rate": round(rate, 6),
            "equal_score_ties": ties,
            "by_source": equal,
        }
    )
    return {"rate": rate, "hf": hf}


@pytest.fixture(scope="module")
def lines() -> list[tuple[str, str]]:
    """Every 48th line of each shared corpus (the benchmark takes them all), plus tricky cases."""
    return [item for i, item in enumerate(corpus_lines(shared_path())) if i % 48 == 0] + [
        ("tricky", text) for text in TRICKY
    ]


def test_reference_vocabulary(lines, tmp_path):
    ours = AlbertTokenizer(str(shared_path("reference", "sp16k.model")))
    result = agreement(ours, tmp_path / "hf", lines)
    assert result["rate"] >= 0.999
    hf = result["hf"]  # the ALBERT input template: [CLS] A [SEP] B [SEP], segments 0 then 1
    pair = hf("Hello there", "General Kenobi")
    a, b = ours.encode("Hello there"), ours.encode("General Kenobi")
    assert pair["input_ids"] == [ours.cls_id, *a, ours.sep_id, *b, ours.sep_id]
    assert pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert hf.decode(ours.encode("the year 10, the end")) == "the year 10, the end"
    assert (hf.pad_token_id, hf.unk_token_id, hf.mask_token_id) == (0, 1, 4)


@pytest.fixture(scope="module")
def trained_on_real_text(tmp_path_factory) -> tuple[str, list[str]]:
    """A 2,000-piece vocabulary our job trains on real text, and a quarter of that text.

    The segmented corpus: the reference corpus (one sentence a line already) and a book split into
    lines."""
    root = tmp_path_factory.mktemp("real")
    (root / "corpus").mkdir()
    shutil.copy(
        shared_path("reference", "corpus4.txt"), root / "corpus" / "part-00000-of-00002.txt"
    )
    book = shared_path("books", "shakespeare-hamlet.txt").read_bytes().decode("latin-1")
    (root / "corpus" / "part-00001-of-00002.txt").write_text(book, encoding="utf-8")
    vocab.run(
        vocab.VocabConfig(
            input=str(root / "corpus"), output=str(root / "vocab"), vocab_size=2000, num_threads=1
        )
    )
    lines = [
        line
        for path in sorted((root / "corpus").glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return str(root / "vocab" / "spiece.model"), lines[::4]


def test_our_vocabulary(trained_on_real_text, lines, tmp_path):
    model_file, _ = trained_on_real_text
    result = agreement(AlbertTokenizer(model_file), tmp_path / "hf", lines)
    assert result["rate"] >= 0.999


def test_in_graph_path_agrees_on_the_same_real_text(trained_on_real_text):
    model_file, sentences = trained_on_real_text
    tokenizer = AlbertTokenizer(model_file)
    graph_ids = tokenizer.in_graph().tokenize(tf.constant(sentences)).to_list()
    mismatches = [s for s, ids in zip(sentences, graph_ids) if ids != tokenizer.encode(s)]
    assert not mismatches
