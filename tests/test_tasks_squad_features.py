"""SQuAD alignment, windows and decoding with a real SentencePiece model (a tiny one trained here,
and the reference's 16k model on the real SQuAD v1.1 dev set)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path

from albert.squad_json import SquadAnswer, SquadExample, gold_answers, read_squad
from albert.tokenization import AlbertTokenizer
from model.tasks import squad_decode
from model.tasks import squad_features as sf
from model.tasks.metrics import squad_v1_scores, squad_v2_scores
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return AlbertTokenizer(train_tiny_spm(tmp_path_factory.mktemp("spm")))


CONTEXT = "The Broncos won the Super Bowl in 1998, scoring 50 points (really)."


def test_offsets_cover_original_text(tokenizer):
    ctx = sf.tokenize_with_offsets(tokenizer, CONTEXT)
    assert ctx.fallback_words == 0 and len(ctx.pieces) == len(ctx.spans) == len(ctx.ids)
    covered = "".join(CONTEXT[s:e] for s, e in ctx.spans)
    assert covered == CONTEXT.replace(" ", "")
    first, last, exact = sf.align_span(ctx, CONTEXT.index("1998"), CONTEXT.index("1998") + 4)
    assert exact and CONTEXT[ctx.spans[first][0] : ctx.spans[last][1]] == "1998"
    # an answer starting inside a piece maps to the covering pieces and is reported as misaligned
    start = CONTEXT.index("Bowl") + 2
    first, last, exact = sf.align_span(ctx, start, start + 2)
    assert not exact and CONTEXT[ctx.spans[first][0] : ctx.spans[last][1]].endswith("wl")
    ligature = sf.tokenize_with_offsets(tokenizer, "the \ufb01nal game")  # NFKD changes the length
    assert ligature.fallback_words == 1 and (4, 8) in ligature.spans


def test_answer_offsets_repaired_or_counted(tokenizer):
    counts = {}
    good = SquadExample("q1", "Who won?", CONTEXT, (SquadAnswer("Broncos", 4),))
    shifted = SquadExample("q2", "When?", CONTEXT, (SquadAnswer("1998", 10),))
    missing = SquadExample("q3", "Who?", CONTEXT, (SquadAnswer("Panthers", 0),))
    impossible = SquadExample("q4", "Who lost?", CONTEXT, (), is_impossible=True)
    aligned, features = sf.prepare(
        tokenizer,
        [good, shifted, missing, impossible],
        True,
        max_seq_length=32,
        doc_stride=8,
        max_query_length=8,
        counts=counts,
    )
    assert [a.example.qas_id for a in aligned] == ["q1", "q2", "q4"]
    assert (
        counts["answer_not_found"] == 1
        and counts["offset_repaired"] == 1
        and counts["exact_aligned"] == 2
    )
    for feature in features:
        assert len(feature.input_ids) == 32 and feature.input_ids[0] == tokenizer.cls_id
        if feature.start_position:
            item = aligned[feature.example_index]
            first = feature.token_to_piece[feature.start_position]
            last = feature.token_to_piece[feature.end_position]
            text = item.context.text[item.context.spans[first][0] : item.context.spans[last][1]]
            assert text == item.example.answers[0].text
    assert all(f.start_position == 0 for f in features if f.qas_id == "q4")


def test_windows_and_max_context():
    assert sf.window_starts(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert sf.window_starts(3, 4, 2) == [(0, 3)]
    spans = sf.window_starts(10, 4, 2)
    # piece 3 sits in windows 0 (right edge), 1 (inner), 2 (left edge): window 1 has the most
    # context
    assert [sf.max_context(spans, i, 3) for i in range(4)] == [False, True, False, False]
    assert sum(sf.max_context(spans, i, p) for p in range(10) for i in range(4)) == 10


def oracle_logits(aligned, features, seq):
    """Logits that put the gold span (or [CLS] for no answer) first in every window."""
    start = np.full((len(features), seq), -10.0, dtype=np.float32)
    end = start.copy()
    for index, feature in enumerate(features):
        start[index, feature.start_position] = end[index, feature.end_position] = 10.0
    return start, end


def test_decode_recovers_gold_spans_and_null_answers(tokenizer):
    examples = [
        SquadExample("q1", "Who won?", CONTEXT, (SquadAnswer("Broncos", 4),)),
        SquadExample("q2", "Score?", CONTEXT, (SquadAnswer("50 points", CONTEXT.index("50")),)),
        SquadExample("q3", "Who lost?", CONTEXT, (), is_impossible=True),
    ]
    aligned, features = sf.prepare(
        tokenizer, examples, True, max_seq_length=24, doc_stride=6, max_query_length=8
    )
    assert len(features) > len(examples)  # several windows per question
    start, end = oracle_logits(aligned, features, 24)
    decoded = squad_decode.decode(
        aligned, features, start, end, n_best_size=5, max_answer_length=10
    )
    assert decoded.answers["q1"] == "Broncos" and decoded.answers["q2"] == "50 points"
    assert decoded.null_score_diff["q3"] > 0 > decoded.null_score_diff["q1"]
    final = decoded.final(0.0)
    assert final["q3"] == "" and final["q1"] == "Broncos"
    gold = {"q1": ["Broncos"], "q2": ["50 points"], "q3": []}
    assert squad_v2_scores(gold, decoded.answers, decoded.null_score_diff, 0.0)["exact"] == 100.0
    assert (
        squad_decode.decode(aligned, features, start, end, max_answer_length=1).answers["q2"]
        != "50 points"
    )


def test_decode_gives_the_predicted_spans_character_offsets(tokenizer):
    """An answer whose text occurs earlier in the context: the offsets are the predicted span's."""
    context = "The Broncos won in 1998. The Broncos lost in 1999."
    second = context.rindex("Broncos")
    examples = [SquadExample("q", "Who lost?", context, (SquadAnswer("Broncos", second),))]
    aligned, features = sf.prepare(
        tokenizer, examples, True, max_seq_length=32, doc_stride=8, max_query_length=8
    )
    start, end = oracle_logits(aligned, features, 32)
    best = squad_decode.decode(aligned, features, start, end).nbest["q"][0]
    assert (best.text, best.start, best.end) == ("Broncos", second, second + len("Broncos"))


def test_real_squad_dev_alignment_and_oracle_decoding():
    path = str(shared_path("squad", "dev-v1.1.json"))
    tokenizer = AlbertTokenizer(str(shared_path("reference", "sp16k.model")))
    examples = [e for _, e in zip(range(600), read_squad(path))]
    counts = {}
    aligned, features = sf.prepare(tokenizer, examples, True, counts=counts)
    assert counts["answer_not_found"] == 0 if "answer_not_found" in counts else True
    assert (
        counts["exact_aligned"] + counts.get("boundary_misaligned", 0) == counts["answers"] == 600
    )
    assert counts.get("boundary_misaligned", 0) / counts["answers"] < 0.05
    start, end = oracle_logits(aligned, features, 384)
    decoded = squad_decode.decode(aligned, features, start, end)
    gold = {qid: answers for qid, answers in gold_answers(path).items() if qid in decoded.answers}
    scores = squad_v1_scores(gold, decoded.answers)
    assert scores["exact_match"] > 97.0 and scores["f1"] > 98.0
