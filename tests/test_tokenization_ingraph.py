"""The in-graph tokenizer (tensorflow-text) gives the same ids as the Python path."""

from __future__ import annotations

import pytest
import tensorflow as tf
from conftest import shared_path
from test_vocab_pipeline import synthetic_sentences

from albert.tokenization import AlbertTokenizer
from pipelines.vocab.sentencepiece_trainer import train_sentencepiece

TRICKY = [
    "",
    "   ",
    "Hello,   world\t\n again",
    "``Quoted'' and `single' and ```triple''' quotes",
    "Café naïve RÉSUMÉ Ångström façade ﬁne ½ ²",
    "no-break\u00a0space, ideographic\u3000space, em\u2003space, line\u2028separator",
    "combining: e\u0301 a\u0308 o\u0327 \u0338 n\u0303",
    "In 10, 1,000, 2,5 and 1999, things: 10,000,000.",
    "İstanbul ß ǅ Σίσυφος ΑΘΗΝΑ Москва 東京 😀",
    '(parenthesised) – dashes — £5 €10 "quotes" end.',
]


def assert_same_ids(tokenizer: AlbertTokenizer, texts: list[str]) -> None:
    graph_ids = tokenizer.in_graph().tokenize(tf.constant(texts)).to_list()
    for text, ids in zip(texts, graph_ids):
        assert ids == tokenizer.encode(text), text


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tiny") / "spiece.model"
    sentences = [s.lower() for s in synthetic_sentences(1500)]
    path.write_bytes(train_sentencepiece(sentences, len(sentences), vocab_size=300, num_threads=1))
    return str(path)


@pytest.mark.parametrize(
    "do_lower_case,keep_accents", [(True, False), (False, False), (True, True)]
)
def test_in_graph_matches_python_on_tricky_text(tiny_model, do_lower_case, keep_accents):
    tokenizer = AlbertTokenizer(tiny_model, do_lower_case=do_lower_case, keep_accents=keep_accents)
    texts = TRICKY + synthetic_sentences(200, seed=3)
    assert_same_ids(tokenizer, texts)
    graph = tokenizer.in_graph()
    preprocessed = [t.decode("utf-8") for t in graph.preprocess(tf.constant(texts)).numpy()]
    assert preprocessed == [tokenizer.preprocess(t) for t in texts]


def test_in_graph_runs_in_tf_data(tiny_model):
    tokenizer = AlbertTokenizer(tiny_model)
    graph = tokenizer.in_graph()
    texts = synthetic_sentences(10, seed=4)
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(4).map(graph.tokenize)
    batches = [ids for batch in dataset for ids in batch.to_list()]
    assert batches == [tokenizer.encode(t) for t in texts]


def test_digit_comma_rule_in_graph_on_the_reference_vocabulary():
    tokenizer = AlbertTokenizer(str(shared_path("reference", "sp16k.model")))
    assert tokenizer.digit_comma_expansions()  # '▁10,' is re-split into '▁10', ','
    assert tokenizer.tokenize("in 10, the")[:3] == ["▁in", "▁10", ","]
    assert_same_ids(tokenizer, TRICKY)


def test_in_graph_matches_python_on_the_reference_corpus():
    tokenizer = AlbertTokenizer(str(shared_path("reference", "sp16k.model")))
    lines = shared_path("reference", "corpus4.txt").read_text(encoding="utf-8").splitlines()
    assert_same_ids(tokenizer, [line for line in lines if line.strip()])
