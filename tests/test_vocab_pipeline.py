"""pipelines.vocab end to end on small segmented corpora: ALBERT layout, determinism, bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from albert.errors import StageError
from albert.tokenization import AlbertTokenizer
from pipelines.vocab import stage as vocab

pytestmark = pytest.mark.backend_free

ALBERT_LAYOUT = [
    "<pad>",
    "<unk>",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "(",
    ")",
    '"',
    "-",
    ".",
    "–",
    "£",
    "€",
]


def synthetic_sentences(count: int, seed: int = 0) -> list[str]:
    """Sentences of made-up words with capitals, accents, numbers and ALBERT's symbols."""
    rng = random.Random(seed)
    syllables = [
        "ka",
        "ro",
        "mi",
        "te",
        "su",
        "lan",
        "dor",
        "vé",
        "qui",
        "pho",
        "ny",
        "ex",
        "ba",
        "zu",
    ]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(400)]
    sentences = []
    for _ in range(count):
        tokens = [rng.choice(words) for _ in range(rng.randint(4, 14))]
        tokens[0] = tokens[0].capitalize()
        if rng.random() < 0.2:
            tokens.insert(
                rng.randrange(len(tokens)), f"{rng.randint(1, 9)},{rng.randint(100, 999)}"
            )
        if rng.random() < 0.2:
            tokens.insert(rng.randrange(len(tokens)), f"({rng.choice(words)}-{rng.choice(words)})")
        sentences.append(" ".join(tokens) + rng.choice([".", "!", "?", " £5.", ' "quoted".']))
    return sentences


def write_segmented(
    directory: Path, sentences: list[str], shards: int, per_document: int = 7
) -> Path:
    """The pipelines.segment format: shards of one sentence a line, a blank line after each
    document."""
    directory.mkdir(parents=True)
    for shard in range(shards):
        lines = []
        for index, sentence in enumerate(sentences[shard::shards]):
            lines.append(sentence)
            if index % per_document == per_document - 1:
                lines.append("")
        (directory / f"part-{shard:05d}-of-{shards:05d}.txt").write_text("\n".join(lines) + "\n\n")
    return directory


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_segmented(
        tmp_path_factory.mktemp("vocab") / "corpus", synthetic_sentences(3000), shards=3
    )


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory) -> tuple[Path, dict]:
    output = tmp_path_factory.mktemp("vocab_out") / "vocab"
    config = vocab.VocabConfig(
        input=str(corpus), output=str(output), vocab_size=400, heldout_sentences=100, num_threads=1
    )
    return output, vocab.run(config)


def test_writes_an_albert_vocabulary_with_stats(built):
    output, summary = built
    assert sorted(p.name for p in output.iterdir()) == [
        "spiece.json",
        "spiece.model",
        "spiece.vocab",
        "vocab_stats.json",
    ]
    assert not list(output.parent.glob("vocab.tmp-*"))
    tokenizer = AlbertTokenizer(str(output / "spiece.model"))
    assert tokenizer.vocab_size == 400
    assert [tokenizer.id_to_piece(i) for i in range(13)] == ALBERT_LAYOUT
    vocab_lines = (output / "spiece.vocab").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[0] for line in vocab_lines[:13]] == ALBERT_LAYOUT and len(
        vocab_lines
    ) == 400
    stats = json.loads((output / "vocab_stats.json").read_text())
    assert stats["model_sha256"] == tokenizer.model_sha256
    assert stats["corpus_counts"]["sentences"] == 3000 == stats["corpus_sentences"]
    assert stats["heldout_sentences"] + stats["sample_sentences"] <= 3000
    assert 50 <= stats["heldout_sentences"] <= 150
    assert stats["unk_rate"] < 0.01 and 1 <= stats["pieces_per_word"] < 4
    assert summary["sample_sentences"] == stats["sample_sentences"]
    # No --language: the reference's preprocessing, recorded beside the model; the sentences
    # whose accents it strips (the made-up word "vé") are counted
    record = json.loads((output / "spiece.json").read_text())
    assert record["model_sha256"] == tokenizer.model_sha256 and record["language"] is None
    assert (
        (record["lowercase"], record["strip_accents"])
        == (True, True)
        == (
            tokenizer.do_lower_case,
            not tokenizer.keep_accents,
        )
    )
    assert stats["preprocessing"] == {k: record[k] for k in stats["preprocessing"]}
    assert 0 < stats["corpus_counts"]["sentences_accents_stripped"] < 3000
    # Uncased by default: the vocabulary holds no capitals.
    assert not any(line.split("\t")[0] != line.split("\t")[0].lower() for line in vocab_lines[13:])


def test_same_corpus_gives_the_same_model_bytes_whatever_the_sharding_and_workers(built, tmp_path):
    """Two worker threads here; two worker processes: tests/test_stage_entry_points.py."""
    output, _ = built
    sentences = synthetic_sentences(3000)
    random.Random(5).shuffle(sentences)
    resharded = write_segmented(tmp_path / "resharded", sentences, shards=2, per_document=3)
    config = vocab.VocabConfig(
        input=str(resharded / "*.txt"),
        output=str(tmp_path / "out"),
        vocab_size=400,
        heldout_sentences=100,
        num_threads=1,
    )
    vocab.run(config, ["--direct_running_mode=multi_threading", "--direct_num_workers=2"])
    assert (tmp_path / "out" / "spiece.model").read_bytes() == (
        output / "spiece.model"
    ).read_bytes()


def test_sample_size_is_exact_and_cli_prints_the_summary(corpus, tmp_path, capsys):
    code = vocab.main(
        [
            "--input",
            str(corpus),
            "--output",
            str(tmp_path / "out"),
            "--vocab-size",
            "300",
            "--sample-sentences",
            "1000",
            "--heldout-sentences",
            "40",
            "--num-threads",
            "1",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sample_sentences"] == 1000 and summary["vocab_size"] == 300
    assert 20 <= summary["heldout_sentences"] <= 60


def test_empty_corpus_is_a_clear_error_and_leaves_no_output(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "part-00000-of-00001.txt").write_text("\n\n")
    config = vocab.VocabConfig(
        input=str(tmp_path / "corpus"), output=str(tmp_path / "out"), vocab_size=300
    )
    with pytest.raises(StageError, match="no sentences"):
        vocab.run(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]
    with pytest.raises(StageError, match="no corpus shards match .*run pipelines.segment"):
        vocab.run(config.model_copy(update={"input": str(tmp_path / "missing")}))


def test_too_few_characters_for_the_vocabulary_size_says_what_to_change(tmp_path, capsys):
    corpus = write_segmented(tmp_path / "corpus", ["ab ba abba", "baba ab"] * 20, shards=1)
    argv = ["--input", str(corpus), "--output", str(tmp_path / "out"), "--vocab-size", "300"]
    assert vocab.main(argv) == 2
    assert not (tmp_path / "out").exists()
    with pytest.raises(StageError, match=r"lower --vocab-size to <= \d+, or add text"):
        vocab.run(
            vocab.VocabConfig(input=str(corpus), output=str(tmp_path / "out"), vocab_size=300)
        )


def test_lines_that_are_not_utf8_are_counted_not_fatal(tmp_path):
    corpus = write_segmented(tmp_path / "corpus", synthetic_sentences(600), shards=1)
    with open(corpus / "part-00000-of-00001.txt", "ab") as handle:
        handle.write(b"caf\xe9 latin-1\n")
    config = vocab.VocabConfig(input=str(corpus), output=str(tmp_path / "out"), vocab_size=300)
    summary = vocab.run(config)
    assert summary["corpus_counts"]["invalid_utf8_lines"] == 1
    assert summary["corpus_sentences"] == 600


def test_too_small_a_vocabulary_for_the_characters_says_what_to_change(corpus, tmp_path):
    config = vocab.VocabConfig(input=str(corpus), output=str(tmp_path / "out"), vocab_size=20)
    with pytest.raises(
        StageError, match=r"raise --vocab-size to >= \d+, or lower --character-coverage"
    ):
        vocab.run(config)
    assert not (tmp_path / "out").exists()
