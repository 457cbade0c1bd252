"""pipelines.quality.words: words of every script (segmenters for Chinese, Japanese and Thai), the
short stop-word lists and the per-language thresholds, on real prose of each language and junk."""

from __future__ import annotations

import time

import pytest

from pipelines.quality import settings, words

pytestmark = pytest.mark.backend_free

# Openings of public-domain works (Kafka, Proust, Cervantes, Manzoni, Machado de Assis,
# Multatuli, Tolstoy, Lu Xun, Natsume Soseki) and encyclopaedic prose.
PROSE = {
    "en": "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife. However little known the feelings or views of such a man "
    "may be on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters.",
    "de": "Als Gregor Samsa eines Morgens aus unruhigen Träumen erwachte, fand er sich in seinem "
    "Bett zu einem ungeheueren Ungeziefer verwandelt. Er lag auf seinem panzerartig harten Rücken "
    "und sah, wenn er den Kopf ein wenig hob, seinen gewölbten, braunen, von bogenförmigen "
    "Versteifungen geteilten Bauch, auf dessen Höhe sich die Bettdecke, zum gänzlichen "
    "Niedergleiten bereit, kaum noch erhalten konnte.",
    "fr": "Longtemps, je me suis couché de bonne heure. Parfois, à peine ma bougie éteinte, mes "
    "yeux se fermaient si vite que je n'avais pas le temps de me dire : « Je m'endors. » Et, une "
    "demi-heure après, la pensée qu'il était temps de chercher le sommeil m'éveillait ; je voulais "
    "poser le volume que je croyais avoir encore dans les mains et souffler ma lumière.",
    "es": "En un lugar de la Mancha, de cuyo nombre no quiero acordarme, no ha mucho tiempo que "
    "vivía un hidalgo de los de lanza en astillero, adarga antigua, rocín flaco y galgo corredor. "
    "Una olla de algo más vaca que carnero, salpicón las más noches, duelos y quebrantos los "
    "sábados, lentejas los viernes, algún palomino de añadidura los domingos, consumían las tres "
    "partes de su hacienda.",
    "it": "Quel ramo del lago di Como, che volge a mezzogiorno, tra due catene non interrotte di "
    "monti, tutto a seni e a golfi, a seconda dello sporgere e del rientrare di quelli, vien, "
    "quasi a un tratto, a ristringersi, e a prender corso e figura di fiume, tra un promontorio a "
    "destra, e un'ampia costiera dall'altra parte.",
    "pt": "Uma noite destas, vindo da cidade para o Engenho Novo, encontrei no trem da Central um "
    "rapaz aqui do bairro, que eu conheço de vista e de chapéu. Cumprimentou-me, sentou-se ao pé "
    "de mim, falou da lua e dos ministros, e acabou recitando-me versos. A viagem era curta, e os "
    "versos pode ser que não fossem inteiramente maus.",
    "nl": "Ik ben makelaar in koffie, en woon op de Lauriergracht, No. 37. Het is mijn gewoonte "
    "niet, romans te schrijven, of zulke dingen, en het heeft dan ook lang geduurd, voor ik er toe "
    "overging een paar riem papier extra te bestellen, en het werk aan te vangen, dat gij, lieve "
    "lezer, zoo-even in de hand hebt genomen.",
    "ru": "Все счастливые семьи похожи друг на друга, каждая несчастливая семья несчастлива "
    "по-своему. Все смешалось в доме Облонских. Жена узнала, что муж был в связи с бывшею в их "
    "доме француженкою-гувернанткой, и объявила мужу, что не может жить с ним в одном доме.",
    "bg": "София е столицата и най-големият град на България. Тя се намира в западната част на "
    "страната, в подножието на планината Витоша. Градът има богата история, която започва преди "
    "повече от две хиляди години, и днес в него живеят около един милион и двеста хиляди души.",
    "pl": "Kraków jest jednym z najstarszych miast w Polsce i przez wiele wieków był jej stolicą. "
    "Na wzgórzu Wawel stoi zamek królewski, a obok niego katedra, w której koronowano i chowano "
    "polskich królów. Stare Miasto zostało wpisane na listę światowego dziedzictwa UNESCO.",
    "id": "Jakarta adalah ibu kota dan kota terbesar di Indonesia. Kota ini terletak di pesisir "
    "utara Pulau Jawa dan menjadi pusat pemerintahan, ekonomi, serta kebudayaan. Setiap hari "
    "jutaan orang datang dari daerah sekitarnya untuk bekerja, sehingga jalan-jalan utama sering "
    "mengalami kemacetan yang parah pada pagi dan sore hari.",
    "zh": "我冒了严寒，回到相隔二千余里，别了二十余年的故乡去。时候既然是深冬；渐近故乡时，"
    "天气又阴晦了，冷风吹进船舱中，呜呜的响，从篷隙向外一望，苍黄的天底下，远近横着几个萧索的"
    "荒村，没有一些活气。我的心禁不住悲凉起来了。",
    "ja": "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめ"
    "した所でニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。",
    "th": "ประเทศไทยมีประชากรประมาณหกสิบหกล้านคน กรุงเทพมหานครเป็นเมืองหลวงและเป็นศูนย์กลาง"
    "ทางเศรษฐกิจของประเทศ คนไทยส่วนใหญ่นับถือศาสนาพุทธ และภาษาไทยเป็นภาษาราชการที่ใช้ในการศึกษา",
}
# Text without prose: a navigation bar, a keyword list, a product listing.
JUNK = (
    "Home About Us Services Portfolio Blog Contact Login Register",
    "cheap flights hotels deals travel insurance car hire last minute holidays",
    "Samsung Galaxy S21 128GB Phantom Grey Unlocked $499.99 Free Shipping 4.5 stars",
)
GOPHER_WORD_LENGTH = (3, 10)  # datatrove's GopherQualityFilter


def test_words_lose_the_punctuation_around_them_and_keep_their_inner_marks():
    text = '"Well," she said -- "don\'t go... it\'s well-known!" (1984) _him_ #tag $5 «ça» ——— ...'
    assert words.split_words(text, "en") == [
        "Well",
        "she",
        "said",
        "don't",
        "go",
        "it's",
        "well-known",
        "1984",
        "him",
        "tag",
        "5",
        "ça",
    ]


def test_a_word_may_end_in_a_combining_mark():
    assert words.split_words("नमस्ते दुनिया। यह हिंदी है।", "hi") == [
        "नमस्ते",
        "दुनिया",
        "यह",
        "हिंदी",
        "है",
    ]


def test_a_long_run_of_punctuation_costs_its_length():
    start = time.perf_counter()
    assert words.split_words("-" * 200_000 + " " + "- " * 100_000, "en") == []
    assert time.perf_counter() - start < 0.5


def test_chinese_japanese_and_thai_are_segmented_quietly(capfd):
    assert words.split_words("我的心禁不住悲凉起来了。", "zh") == [
        "我",
        "的",
        "心",
        "禁不住",
        "悲凉",
        "起来",
        "了",
    ]
    assert words.split_words("吾輩は猫である。名前はまだ無い。", "ja") == [
        "吾輩",
        "は",
        "猫",
        "で",
        "ある",
        "名前",
        "は",
        "まだ",
        "無い",
    ]
    assert words.split_words("ภาษาไทยเป็นภาษาราชการ ของประเทศไทย", "th") == [
        "ภาษาไทย",
        "เป็น",
        "ภาษาราชการ",
        "ของ",
        "ประเทศ",
        "ไทย",
    ]
    assert capfd.readouterr().err == ""  # jieba's "Building prefix dict" silenced


@pytest.mark.parametrize("language", sorted(PROSE))
def test_prose_holds_stop_words_and_words_of_its_language_length(language):
    found = words.split_words(PROSE[language], language)
    stop = words.stop_words(language)
    assert 8 <= len(stop) <= 25
    assert len(stop & {word.lower() for word in found}) >= 3
    bounds = words.LANGUAGE_THRESHOLDS.get(language, {})
    least = bounds.get("gopher_quality.min_avg_word_length", GOPHER_WORD_LENGTH[0])
    most = bounds.get("gopher_quality.max_avg_word_length", GOPHER_WORD_LENGTH[1])
    assert least <= sum(map(len, found)) / len(found) <= most


@pytest.mark.parametrize("junk", JUNK)
def test_junk_holds_fewer_than_two_stop_words(junk):
    found = {word.lower() for word in words.split_words(junk, "en")}
    assert len(words.stop_words("en") & found) < 2


def test_english_starts_with_gophers_list_and_an_unknown_language_has_none():
    assert {"the", "be", "to", "of", "and", "that", "have", "with"} <= words.stop_words("en")
    assert words.stop_words("xx") == frozenset()


def test_an_english_instruction_to_its_reader_holds_two_stop_words():
    # the prose line of a short section of the Debian Reference (its commands aside)
    text = "You can merge two PostScript (PS) or Portable Document Format (PDF) files using gs(1)."
    assert len(words.stop_words("en") & {w.lower() for w in words.split_words(text, "en")}) >= 2


def test_german_short_prose_without_articles_holds_two_stop_words():
    text = "Sie können einen Alias für häufige Befehle als Kurzform in der Shell anlegen."
    found = {word.lower() for word in words.split_words(text, "de")}
    assert len(words.stop_words("de") & (found - {"der"})) >= 2


def test_every_language_threshold_is_a_registered_parameter_in_its_range():
    for language, bounds in words.LANGUAGE_THRESHOLDS.items():
        for name, value in bounds.items():
            rule, param = name.split(".")
            bound = settings.RULES[rule][param]
            assert bound.low <= value <= bound.high, (language, name)


def test_terminal_punctuation_covers_the_scripts_full_stops():
    for line in ("It ended.", "«Fin.»", "完了。", "本当？", "「はい」", "यह है।"):
        assert line.endswith(words.TERMINAL_PUNCTUATION)
    assert not "a list:".endswith(words.TERMINAL_PUNCTUATION)
