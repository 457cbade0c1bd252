"""Whole-word masking by a word segmenter (pipelines.tfrecords.word_starts): Japanese and Chinese
words from TinySegmenter and jieba, the bare "▁" piece never a word alone, the records' ids and
token_boundary."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
import sentencepiece as spm

from albert.pretraining_example import decode_example
from albert.tokenization import AlbertTokenizer
from pipelines.common.word_segmenters import SEGMENTERS
from pipelines.tfrecords import word_starts
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.instance_writer import DocumentPass, InstanceWriter

pytestmark = pytest.mark.backend_free

JAPANESE = [
    "データベースが必要です。",
    "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。",
    "パッケージを作成するには Debian の開発ツールが必要です。",
    "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。",
    "このコマンドは root 権限で実行してください。",
]
CHINESE = [
    "我们需要一个数据库。",
    "人人生而自由，在尊严和权利上一律平等。",
    "他们赋有理性和良心，并应以兄弟关系的精神相对待。",
    "请使用 Debian 的软件包管理工具安装 vim 编辑器。",
    "人人有资格享有本宣言所载的一切权利和自由。",
]
KOREAN = [
    "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다.",
    "모든 사람은 생명과 신체의 자유와 안전에 대한 권리를 가진다.",
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> AlbertTokenizer:
    prefix = tmp_path_factory.mktemp("spm") / "spiece"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter((JAPANESE + CHINESE + KOREAN) * 3),
        model_prefix=str(prefix),
        vocab_size=200,
        hard_vocab_limit=False,
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        minloglevel=2,
    )
    return AlbertTokenizer(f"{prefix}.model", do_lower_case=False, keep_accents=True)


def word_groups(tokenizer, ids, starts) -> list[str]:
    """The text of each masking unit: pieces from one word start to the next."""
    groups: list[list[int]] = []
    for piece_id, start in zip(ids.tolist(), starts.tolist()):
        if start or not groups:
            groups.append([])
        groups[-1].append(piece_id)
    return [tokenizer.decode(group).strip() for group in groups]


@pytest.mark.parametrize(("lines", "segmenter"), [(JAPANESE, "tinysegmenter"), (CHINESE, "jieba")])
def test_masking_units_are_whole_segmenter_words(tokenizer, lines, segmenter):
    segment = SEGMENTERS[segmenter]()
    for line in lines:
        ids, starts = word_starts.encode_with_word_starts(tokenizer, {}, line, segmenter)
        assert ids.tolist() == tokenizer.encode(line)
        words = [unicodedata.normalize("NFKC", w) for w in segment(line) if w.strip()]
        groups = word_groups(tokenizer, ids, starts)
        # every unit is one or more consecutive segmenter words, and together they are the line
        assert "".join(groups) == "".join(words)
        ends = set(np.cumsum([len(word) for word in words]).tolist())
        assert set(np.cumsum([len(group) for group in groups]).tolist()) <= ends
        assert len(groups) < len(ids) or len(ids) == len(words)


def test_whitespace_words_are_the_masking_units_of_spaced_scripts(tokenizer):
    for line in KOREAN:
        ids, starts = word_starts.encode_with_word_starts(tokenizer, {}, line, "whitespace")
        assert word_groups(tokenizer, ids, starts) == line.split()
        assert starts.sum() < len(ids)  # pieces inside a word continue it (not so by the reference)


def test_a_bare_underline_joins_the_word_after_it_or_before_a_special_token():
    underline, cls, sep = 7, 2, 3
    ids = np.array([[cls, 9, underline, 10, 11, sep, underline, 12, underline, sep, 0]])
    starts = np.array([[1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0]], bool)
    attached = word_starts.attach_bare_underlines(ids, starts, np.array([10]), underline, (0, 2, 3))
    # "▁" 10 11 is one word, "▁" 12 another; the "▁" before [SEP] ends it
    assert attached[0].astype(int).tolist() == [1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0]


@pytest.mark.parametrize(("lines", "segmenter"), [(JAPANESE, "tinysegmenter"), (CHINESE, "jieba")])
def test_masked_spans_fall_on_segmenter_words(tokenizer, lines, segmenter):
    share = word_starts.masked_span_boundary_share
    assert share(tokenizer, lines * 4, segmenter, segmenter, masked_lm_prob=0.3) >= 0.95
    assert share(tokenizer, lines * 4, "none", segmenter, masked_lm_prob=0.3) < 0.9


def test_records_carry_segmenter_words_and_no_bare_underline_target(tokenizer, tmp_path):
    config = TFRecordsConfig(
        input=str(tmp_path),
        spm_model=tokenizer.model_file,
        output=str(tmp_path / "out"),
        max_seq_length=64,
        max_predictions_per_seq=10,
        masked_lm_prob=0.3,
        word_segmenter="tinysegmenter",
        do_lower_case=False,
        dupe_factor=1,
    )
    writer = InstanceWriter(config)
    writer.tokenizer = tokenizer  # keep accents: voiced kana are this test's words
    sentences = writer.encode(JAPANESE)
    passes = [DocumentPass(b"doc", sentences, dupe) for dupe in range(8)]
    examples = [decode_example(example) for _, example in writer.examples(passes)]
    underline = word_starts.bare_underline_id(tokenizer)
    assert underline > 0
    masked_targets = 0
    for example in examples:
        ids, boundary = example["input_ids"], example["token_boundary"].astype(bool)
        positions = example["masked_lm_positions"][example["masked_lm_weights"] > 0]
        labels = example["masked_lm_ids"][example["masked_lm_weights"] > 0]
        assert ids.max() < tokenizer.vocab_size and labels.max() < tokenizer.vocab_size
        original = ids.copy()
        original[positions] = labels
        masked = np.zeros(len(ids) + 1, bool)
        masked[positions] = True
        for position in positions:  # a masked "▁" is never a word alone
            if original[position] == underline:
                masked_targets += 1
                assert masked[position + 1] or not boundary[position]
        after_special = np.isin(original[positions - 1], (tokenizer.cls_id, tokenizer.sep_id))
        assert np.all(boundary[positions] | masked[positions - 1] | after_special)
    assert masked_targets > 0
