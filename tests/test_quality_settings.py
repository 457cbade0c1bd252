"""The cleaning step's settings: the rule registry, validation (one line naming the bad item),
the precedence of thresholds (user, then language, then default), hashing and pickling."""

import pickle

import pytest

from pipelines.quality import langid
from pipelines.quality.settings import RULES, QualitySettings, Threshold

pytestmark = pytest.mark.backend_free


def options(**changes):
    values = {
        "languages": [],
        "language_threshold": None,
        "rules_off": [],
        "thresholds": {},
        "pii": "redact",
        "repair": True,
    }
    return QualitySettings.from_options(**{**values, **changes})


def test_every_rule_and_its_defaults_are_registered_within_their_ranges():
    assert set(RULES) == {
        "language",
        "boilerplate",
        "c4_lines",
        "c4_document",
        "gopher_quality",
        "gopher_repetition",
        "fineweb",
        "pii",
        "reference_model",
    }
    for params in RULES.values():
        for param, bound in params.items():
            assert isinstance(bound, Threshold) and bound.low <= bound.default <= bound.high, param
            assert bound.description and "\n" not in bound.description
    # datatrove's names and published bounds
    assert RULES["gopher_quality"]["max_doc_words"].default == 100_000
    assert RULES["gopher_quality"]["min_alpha_words_ratio"].default == 0.8
    assert [RULES["gopher_repetition"][f"dup_{n}_gram"].default for n in range(5, 11)] == [
        0.15,
        0.14,
        0.13,
        0.12,
        0.11,
        0.10,
    ]
    assert RULES["fineweb"]["short_line_length"].default == 30
    assert RULES["c4_lines"]["min_words_per_line"].default == 3


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rules_off": ["gopher"]}, r"^quality rule 'gopher': unknown \(known: language, "),
        ({"thresholds": {"gopher.min_doc_words": 5}}, r"^quality threshold gopher.min_doc_words: "),
        (
            {"thresholds": {"gopher_quality.min_words": 5}},
            r"^quality threshold gopher_quality.min_words: unknown parameter \(known: min_doc_",
        ),
        ({"thresholds": {"fineweb": 5}}, r"^quality threshold fineweb: unknown parameter"),
        (
            {"thresholds": {"pii.x": 1}},
            r"^quality threshold pii.x: unknown parameter \(known: none\)",
        ),
        (
            {"thresholds": {"fineweb.short_line_thr": 1.5}},
            r"^quality threshold fineweb.short_line_thr=1.5: out of range \[0, 1\]$",
        ),
        ({"language_threshold": -0.1}, r"^quality threshold language.threshold=-0.1: out of range"),
        ({"languages": ["en", "xx"]}, r"^language 'xx': not a language code"),
        ({"pii": "hide"}, r"^pii 'hide': expected one of redact, keep, drop-document$"),
        (
            {"languages": ["en"], "rules_off": ["language"]},
            r"^language targets need the language rule",
        ),
        (
            {"language_threshold": 0.6, "thresholds": {"language.threshold": 0.7}},
            r"^language threshold: set both",
        ),
    ],
)
def test_bad_options_are_one_line_naming_the_item(changes, message):
    with pytest.raises(ValueError, match=message) as error:
        options(**changes)
    assert "\n" not in str(error.value)


def test_a_threshold_is_the_users_else_the_languages_else_the_default():
    defaults = options()
    assert defaults.threshold("gopher_quality", "min_avg_word_length", "en") == 3
    assert defaults.threshold("gopher_quality", "min_avg_word_length", "zh") == 1  # words' override
    assert defaults.threshold("language", "threshold", "de") == langid.THRESHOLDS["de"]
    assert defaults.threshold("language", "threshold", "xx") == 0.5
    user = options(thresholds={"gopher_quality.min_avg_word_length": 2}, language_threshold=0.9)
    assert user.threshold("gopher_quality", "min_avg_word_length", "en") == 2
    assert user.threshold("gopher_quality", "min_avg_word_length", "zh") == 2  # user wins
    assert user.threshold("language", "threshold", "de") == 0.9
    assert user.threshold("gopher_quality", "max_avg_word_length", "zh") == 4
    with pytest.raises(KeyError):
        user.threshold("gopher_quality", "min_words", "en")


def test_rules_switched_off_and_the_pii_modes():
    settings = options(rules_off=["fineweb", " c4_lines"], languages=["EN", "de", "en"])
    assert settings.languages == ("en", "de")
    assert not settings.enabled("fineweb") and not settings.enabled("c4_lines")
    assert settings.enabled("gopher_quality") and settings.enabled("pii")
    assert not options(pii="keep").enabled("pii")
    assert options(pii="drop-document").enabled("pii")
    with pytest.raises(KeyError):
        settings.enabled("gopher")


def test_settings_are_hashable_and_picklable_with_their_values():
    settings = options(
        languages=["en"], rules_off=["fineweb"], thresholds={"c4_document.min_num_sentences": 4}
    )
    same = options(
        languages=["en"], rules_off=["fineweb"], thresholds={"c4_document.min_num_sentences": 4.0}
    )
    assert hash(settings) == hash(same) and settings == same
    copy = pickle.loads(pickle.dumps(settings))
    assert copy == settings and copy.threshold("c4_document", "min_num_sentences", "en") == 4
    assert copy != options()
