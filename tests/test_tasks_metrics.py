"""Metrics against SciPy and hand-computed values, SQuAD scoring against hand-worked official
cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from model.tasks import get_task
from model.tasks import metrics as m

pytestmark = pytest.mark.backend_free


def test_pearson_spearman_match_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = 0.5 * x + rng.normal(size=200)
    y_ties = np.round(y)  # many ties: average ranks
    assert m.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert m.spearman(x, y_ties) == pytest.approx(stats.spearmanr(x, y_ties)[0], abs=1e-12)
    # where SciPy's answer is NaN (a constant input) ours is 0: no correlation
    assert np.isnan(stats.pearsonr([1, 1, 1], [1, 2, 3])[0])
    assert m.pearson([1, 1, 1], [1, 2, 3]) == 0.0 and m.spearman([1, 2, 3], [2, 2, 2]) == 0.0


def test_classification_metrics_by_hand():
    labels = [1, 1, 1, 0, 0, 0, 1, 0]
    preds = [1, 0, 1, 0, 1, 0, 1, 0]
    # tp=3 fp=1 fn=1 tn=3
    assert m.accuracy(preds, labels) == 0.75
    assert m.binary_f1(preds, labels) == pytest.approx(0.75)
    assert m.matthews_corrcoef(preds, labels) == pytest.approx(
        (3 * 3 - 1 * 1) / np.sqrt(4 * 4 * 4 * 4)
    )
    assert m.matthews_corrcoef([1, 1, 1], [0, 1, 0]) == 0.0  # constant prediction
    assert m.binary_f1([0, 0], [1, 0]) == 0.0
    # multi-class MCC: the sklearn formula, worked by hand
    y, p = [0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]
    c, s = 4, 6
    t_k, p_k = np.array([2, 2, 2]), np.array([2, 3, 1])  # per-class true and predicted counts
    expected = (c * s - t_k @ p_k) / np.sqrt((s * s - p_k @ p_k) * (s * s - t_k @ t_k))
    assert m.matthews_corrcoef(p, y) == pytest.approx(expected)
    glue = get_task("mrpc").metrics(preds, labels)
    assert glue == {"f1": pytest.approx(0.75), "accuracy": 0.75, "acc_and_f1": pytest.approx(0.75)}
    assert set(get_task("stsb").metrics([1.0, 2.0, 3.5], [1.0, 2.5, 3.0])) == {
        "pearson",
        "spearman",
        "corr",
    }


def test_squad_normalisation_and_token_f1():
    assert m.normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert m.normalize_answer("an apple, a pear") == "apple pear"
    assert m.exact_match("the Broncos.", "Broncos") == 1
    # pred "denver broncos team" vs gold "broncos": common 1, precision 1/3, recall 1 -> F1 0.5
    assert m.token_f1("Denver Broncos team", "the Broncos") == pytest.approx(0.5)
    assert m.token_f1("", "") == 1.0 and m.token_f1("", "x") == 0.0  # v2.0 rules
    assert m.token_f1("the", "a", v2=False) == 0.0  # v1.1: no common tokens -> 0


def test_squad_v1_max_over_gold_and_unanswered():
    gold = {
        "q1": ["Denver Broncos", "the Denver Broncos"],
        "q2": ["1998", "in 1998"],
        "q3": ["Carolina"],
    }
    predictions = {"q1": "Broncos", "q2": "in 1998"}
    scores = m.squad_v1_scores(gold, predictions)
    # q1: EM 0, F1 max(2*1*.5/1.5=0.667) ; q2: EM 1, F1 1 ; q3 unanswered: 0
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (2 / 3 + 1) / 3)
    assert scores["answered"] == 2


def test_squad_v2_has_no_answer_split_and_best_threshold():
    gold = {"a": ["Denver"], "b": [], "c": ["1998"], "d": []}
    predictions = {"a": "Denver", "b": "Carolina", "c": "1999", "d": ""}
    na = {"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.2}
    scores = m.squad_v2_scores(gold, predictions, na, threshold=0.6)
    # threshold 0.6: b -> no answer (correct); a right, c wrong, d "" correct -> exact 3/4
    assert (
        scores["exact"] == 75.0
        and scores["HasAns_exact"] == 50.0
        and scores["NoAns_exact"] == 100.0
    )
    assert scores["HasAns_total"] == 2 and scores["NoAns_total"] == 2
    # sweep (official find_best_thresh): start 2 (no-answer count); a +1 -> 3 @0.1; d 0 ; c 0; b -1
    assert scores["best_exact"] == 75.0 and scores["best_exact_thresh"] == 0.1
    default = m.squad_v2_scores(gold, predictions)  # na 0 everywhere, threshold 1: answers as given
    assert default["exact"] == 50.0


def test_race_accuracy_by_level():
    result = m.race_accuracy(
        ["middle", "middle", "high", "high", "high"], [0, 1, 2, 3, 0], [0, 0, 2, 3, 1]
    )
    assert result["accuracy"] == 0.6 and result["accuracy_middle"] == 0.5
    assert result["accuracy_high"] == pytest.approx(2 / 3) and result["total_high"] == 3


def test_multi_label_threshold_is_the_best_and_of_equals_the_lowest():
    probabilities = np.array([[0.9, 0.32], [0.4, 0.8], [0.33, 0.1]])
    gold = np.array([[1, 0], [0, 1], [1, 0]])
    # micro-F1 0.8 from 0.45 (the 0.4 no longer predicted) to 0.80, less either side
    assert m.tuned_threshold(probabilities, gold, lambda p, g: m.set_f1(p, g, "micro")) == 0.45
    # no threshold gets every row right: all score 0, the lowest wins
    assert m.tuned_threshold(probabilities, gold, lambda p, g: float((p == g).all())) == 0.05
