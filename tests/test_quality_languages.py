"""The cleaning step's per-language bounds (pipelines.quality.words.LANGUAGE_THRESHOLDS) on
parallel text: short articles of the Universal Declaration of Human Rights whose English is kept
are kept in Korean, Arabic, German and Japanese too. Language identification is a fake."""

from collections import Counter

import pytest

from pipelines.quality.chain import clean_document
from pipelines.quality.gopher import NGrams
from pipelines.quality.settings import QualitySettings

pytestmark = pytest.mark.backend_free

# Articles 3-6 (Korean, Arabic), 27 (German), 7-8 (Japanese), one paragraph each: the translations
# hold 42 (Korean), 46 (Arabic) and 48 (German) words where the English holds 62 and 56, and the
# Japanese repeats "すべての人は…権利を有する" as the English repeats "Everyone has the right".
PARALLEL = {
    "en": (
        "Everyone has the right to life, liberty and the security of person.",
        (
            "No one shall be held in slavery or servitude; slavery and the slave trade shall be "
            "prohibited in all their forms."
        ),
        (
            "No one shall be subjected to torture or to cruel, inhuman or degrading treatment or "
            "punishment."
        ),
        "Everyone has the right to recognition everywhere as a person before the law.",
    ),
    "ko": (
        "모든 사람은 생명과 신체의 자유와 안전에 대한 권리를 가진다.",
        (
            "어느 누구도 노예상태 또는 예속상태에 놓여지지 아니한다. 모든 형태의 노예제도와 "
            "노예매매는 금지된다."
        ),
        "어느 누구도 고문, 또는 잔혹하거나 비인도적이거나 굴욕적인 처우 또는 형벌을 받지 아니한다.",
        "모든 사람은 어디에서나 법 앞에 인간으로서 인정받을 권리를 가진다.",
    ),
    "ar": (
        "لكل فرد الحق في الحياة والحرية وسلامة شخصه.",
        "لا يجوز إسترقاق أو إستعباد أي شخص. ويحظر الإسترقاق وتجارة الرقيق بكافة أوضاعهما.",
        "لا يعرض أي إنسان للتعذيب ولا للعقوبات أو المعاملات القاسية أو الوحشية أو الحاطة بالكرامة.",
        "لكل إنسان أينما وجد الحق في أن يعترف بشخصيته القانونية.",
    ),
    "de": (
        (
            "Jeder hat das Recht, am kulturellen Leben der Gemeinschaft frei teilzunehmen, "
            "sich an den Künsten zu erfreuen und am wissenschaftlichen Fortschritt und dessen "
            "Errungenschaften teilzuhaben."
        ),
        (
            "Jeder hat das Recht auf Schutz der geistigen und materiellen Interessen, die ihm als "
            "Urheber von Werken der Wissenschaft, Literatur oder Kunst erwachsen."
        ),
    ),
    "ja": (
        (
            "すべての人は、法の下において平等であり、また、いかなる差別もなしに法の平等な保護を受ける"
            "権利を有する。すべての人は、この宣言に違反するいかなる差別に対しても、また、そのような"
            "差別をそそのかすいかなる行為に対しても、平等な保護を受ける権利を有する。"
        ),
        (
            "すべての人は、憲法又は法律によって与えられた基本的権利を侵害する行為に対し、権限を有する"
            "国内裁判所による効果的な救済を受ける権利を有する。"
        ),
    ),
}


def clean(paragraphs, language, **thresholds):
    settings = QualitySettings.from_options([language], None, [], thresholds, "redact", False)
    return clean_document(
        paragraphs, settings, lambda text: (language, 0.99), lambda name, n: Counter()
    )


@pytest.mark.parametrize("language", sorted(PARALLEL))
def test_a_translation_of_kept_english_prose_is_kept(language):
    assert clean(PARALLEL[language], language).removal is None


def test_korean_words_are_judged_by_korean_bounds_not_english_ones():
    english_bounds = {
        "gopher_quality.min_avg_word_length": 3,
        "gopher_quality.min_doc_words": 50,
    }
    removal = clean(PARALLEL["ko"], "ko", **english_bounds).removal
    assert removal.rule == "gopher_quality.min_doc_words" and removal.value == 42


def test_ngrams_of_unspaced_text_count_no_joining_spaces():
    words = ["権利", "を", "有する"] * 2
    spaced, unspaced = NGrams(words), NGrams(words, joiner=0)
    spaced.advance()
    unspaced.advance()
    assert spaced.characters().tolist() == [4, 5, 6, 4, 5]
    assert unspaced.characters().tolist() == [3, 4, 5, 3, 4]
