"""Text repair: mojibake in several languages and scripts, control characters, and correct text
(Latin-1 letters, Portuguese capitals with Ã, CJK, emoji, curly quotes, entities) that comes out as
it went in."""

import ftfy
import pytest

from pipelines.quality.repair import CONFIG, repair_text

pytestmark = pytest.mark.backend_free

MOJIBAKE = [
    # UTF-8 read as Windows-1252 or Latin-1
    ("CafÃ©", "Café"),
    ("GrÃ¼ÃŸe aus MÃ¼nchen, schÃ¶ne GrÃ¼ÃŸe", "Grüße aus München, schöne Grüße"),
    ("Ã‡a a Ã©tÃ© un Ã©tÃ© trÃ¨s chaud", "Ça a été un été très chaud"),
    ("El niÃ±o comiÃ³ piÃ±a en EspaÃ±a", "El niño comió piña en España"),
    ("InformaÃ§Ã£o nÃ£o disponÃ\xadvel", "Informação não disponível"),
    ("ZaÅ¼Ã³Å‚Ä‡ gÄ™Å›lÄ… jaÅºÅ„", "Zażółć gęślą jaźń"),
    ("Itâ€™s â€œquotedâ€\x9d", "It’s “quoted”"),
    ("Â£5 for a cafÃ© crÃ¨me", "£5 for a café crème"),
    ("æ—¥æœ¬èªžã\x81®ãƒ†ã‚\xadã‚¹ãƒˆ", "日本語のテキスト"),
    ("ä¸\xadæ–‡", "中文"),
    # UTF-8 read as Windows-1251
    ("РџСЂРёРІРµС‚, РјРёСЂ", "Привет, мир"),
    # twice
    ("CafÃƒÂ©", "Café"),
    # a no-break space that became a space
    ("voilÃ  tout", "voilà tout"),
    # C1 controls that stand for Windows-1252 punctuation
    ("\x93quoted\x94", "“quoted”"),
]

CONTROLS = [
    ("Hello\x00World", "HelloWorld"),
    (
        "\x07Zu lange keine Eingabe: Automatisch ausgeloggt.",
        "Zu lange keine Eingabe: Automatisch ausgeloggt.",
    ),
    ("\x1b[31mred\x1b[0m text", "red text"),
    ("\ufeffByte order mark", "Byte order mark"),
    ("del\x7fete", "delete"),
]

CORRECT = [
    "Café crème, naïve façade, Ærøskøbing, ¿Qué pasó? ¡Olé! «Guillemets» 25 °C, 5 € ½",
    "NÃO HÁ VAGAS, A IRMÃ DE JOÃO, A MAÇÃ E A LARANJA, CAPITÃ MARVEL",
    "São Paulo é a maior cidade do Brasil.",
    "Grüße aus München",
    "Привет, мир",
    "中文文本保持不变。",
    "日本語のテキスト",
    "I ❤️ Python 🐍👍🏽",
    "“Hello,” she said—‘quietly’…",
    "ﬁne ﬂour",
    "ＡＢＣ１２３",
    "Tom &amp; Jerry &lt;3",
    "e\u0301",
    "line\u2028separator",
    "tab\tform feed\x0ccarriage return\r",
    "¯\\_(ツ)_/¯",
    "Æsop's Fables",
]


@pytest.mark.parametrize(("broken", "fixed"), MOJIBAKE + CONTROLS)
def test_mojibake_and_controls_are_repaired(broken, fixed):
    assert repair_text(broken) == fixed


@pytest.mark.parametrize("text", CORRECT)
def test_correct_text_is_kept(text):
    assert repair_text(text) == text


def test_latin_1_book_text_decoded_right_is_kept_and_its_mojibake_repaired():
    # As the Latin-1 files of Project Gutenberg's Chesterton and Shakespeare have it.
    for text in (
        (
            "France, which shows today the conquering march of Catholicism, as brain after brain "
            "surrenders to it, Brunetière, Coppée, Hauptmann, Barrès, Bourget, Lemaître."
        ),
        (
            "As the market-place opened before him he saw Count Gregory, that distinguished "
            "foreigner, standing and smoking in elegant meditation at the corner of the local café."
        ),
        "Cassi. And why should Cæsar be a Tyrant then?",
    ):
        assert repair_text(text) == text
        assert repair_text(text.encode("utf-8").decode("latin-1")) == text
        assert repair_text(text.encode("utf-8").decode("windows-1252")) == text


def test_single_byte_cyrillic_read_as_latin_1_is_beyond_repair():
    # Windows-1251 bytes read as Latin-1 hold no UTF-8 to recover: ftfy leaves them.
    assert repair_text("Ïðèâåò, ìèð") == "Ïðèâåò, ìèð"


def test_a_lone_a_tilde_before_a_space_in_lower_case_text_is_taken_for_mojibake():
    # ftfy's reading of "Ã " as an "à" whose no-break space was lost; capitals are kept (above).
    assert repair_text("The Ã character") == "The à character"


def test_ascii_text_without_controls_skips_ftfy():
    text = "Plain ASCII text, as most English is: nothing to repair."
    assert repair_text(text) is text


def test_the_ascii_fast_path_agrees_with_ftfy_on_every_ascii_character():
    for code in range(128):
        text = f"a{chr(code)}b"
        assert repair_text(text) == ftfy.fix_text(text, CONFIG), code


def test_repair_is_idempotent():
    for broken, fixed in MOJIBAKE + CONTROLS:
        assert repair_text(repair_text(broken)) == fixed
