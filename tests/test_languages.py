"""The language profiles (`albert.languages`) and what `--language` sets: the vocab stage's fields
and the flow's per-stage settings, each overridden by what the user gives."""

from __future__ import annotations

import pytest

from albert.config import build_config
from albert.errors import ConfigError
from albert.languages import PROFILES, language_profile
from flows.language_settings import with_language
from pipelines.vocab.config import VocabConfig

pytestmark = pytest.mark.backend_free


def test_english_keeps_the_reference_and_every_other_language_its_letters():
    english = language_profile("en")
    assert (english.lowercase, english.strip_accents, english.word_segmenter) == (
        True,
        True,
        "none",
    )
    for code in [*PROFILES, "sw", "ell"]:  # a code without a row gets the default
        profile = language_profile(code)
        assert profile.cleaning_language == code and profile.normalization == "nmt_nfkc"
        if code != "en":
            assert not profile.lowercase and not profile.strip_accents
    assert language_profile("ja").word_segmenter == "tinysegmenter"
    assert language_profile("zh").word_segmenter == "jieba"
    with pytest.raises(ValueError, match="'JA'.*ISO 639"):
        language_profile("JA")


def test_the_vocab_stage_takes_its_profile_unless_told_otherwise():
    ja = VocabConfig(input="c", output="v", language="ja")
    assert (ja.do_lower_case, ja.keep_accents, ja.normalization) == (False, True, "nmt_nfkc")
    cased_english = VocabConfig(input="c", output="v", language="en", do_lower_case=False)
    assert (cased_english.do_lower_case, cased_english.keep_accents) == (False, False)
    reference = VocabConfig(input="c", output="v").preprocessing()
    assert (reference.lowercase, reference.strip_accents, reference.language) == (True, True, None)
    with pytest.raises(ConfigError, match="VocabConfig.*language 'x1'"):
        build_config(VocabConfig, {"input": "c", "output": "v", "language": "x1"})


def test_the_flow_puts_the_language_under_each_stage_and_the_users_settings_win():
    values = with_language(
        {"language": "ko", "segment": '{"format": "jsonl", "language": ["ko", "en"]}', "vocab": {}}
    )
    assert values["segment"] == {"language": ["ko", "en"], "format": "jsonl"}
    assert values["vocab"] == {"language": "ko"} and values["tfrecords"] == {"language": "ko"}
    assert with_language({"run_dir": "r"}) == {"run_dir": "r"}
