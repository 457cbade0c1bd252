"""One document through the cleaning step: the order of its parts (language, line cleaning, the
document rules, personal data), the removal each reports with its value and bound, the counters,
the mixed-language rule, and long-form documents (books). Language identification is a fake."""

from collections import Counter

import pytest

from pipelines.quality import listing, pii
from pipelines.quality.chain import clean_document, foreign_paragraphs
from pipelines.quality.settings import QualitySettings, Removal

pytestmark = pytest.mark.backend_free

PROSE = (
    "The river rises in the northern hills and flows for some two hundred kilometres to the sea.",
    "Its valley was settled early, and the town at its mouth grew rich on the trade in wool.",
    "In the nineteenth century a canal joined the river to the industrial cities of the south.",
    "The canal fell out of use after the railway arrived, but parts of it are still navigable.",
    "Today the valley is known for its orchards, its walking trails and its medieval churches.",
)
GERMAN = "Der Fluss entspringt in den nördlichen Hügeln und fließt ungefähr zweihundert Kilometer."
COOKIES = "We use cookies to improve your experience. By continuing you accept our cookie policy."
NAVIGATION = "Home | About | Contact | Privacy Policy | Terms of Use"


def identify(text: str) -> tuple[str, float]:
    """French for a text starting "Bonjour", German for one starting "Der Fluss", else English."""
    if text.startswith("Bonjour"):
        return "fr", 0.97
    if text.startswith("Der Fluss"):
        return "de", 0.95
    return "en", 0.93


def settings(languages=(), rules_off=(), pii_mode="redact", **thresholds) -> QualitySettings:
    values = {name.replace("__", "."): value for name, value in thresholds.items()}
    return QualitySettings.from_options(
        list(languages), None, list(rules_off), values, pii_mode, False
    )


def clean(paragraphs, s=None, **options):
    counts: Counter = Counter()
    cleaned = clean_document(
        tuple(paragraphs),
        s or settings(),
        identify,
        lambda name, n: counts.update({name: n}),
        **options,
    )
    return cleaned, counts


def test_prose_is_kept_whole_and_its_language_counted():
    cleaned, counts = clean(PROSE)
    assert cleaned.paragraphs == PROSE and cleaned.removal is None
    assert (cleaned.language, cleaned.language_score) == ("en", 0.93)
    assert counts == {"language_en": 1}


def test_boilerplate_lines_go_before_the_document_is_judged():
    page = (NAVIGATION, COOKIES, *PROSE, "Read more")
    cleaned, counts = clean(page)
    assert cleaned.removal is None and cleaned.paragraphs == PROSE
    assert sum(cleaned.lines_removed.values()) == 3
    assert sum(n for name, n in counts.items() if name.startswith("quality_lines_")) == 3
    cleaned, counts = clean((NAVIGATION, COOKIES, "Read more"))
    assert cleaned.removal == Removal("boilerplate.all_lines", 0, 1)
    assert cleaned.paragraphs == (NAVIGATION, COOKIES, "Read more")  # the input, for the audit
    assert counts["quality_removed_boilerplate.all_lines"] == 1


def test_a_consent_banner_is_all_boilerplate_and_an_article_on_consent_law_is_kept():
    banner = (
        "We value your privacy",
        (
            "We and our partners store and/or access information on a device, such as cookies, "
            "and process personal data, such as unique identifiers and standard information sent "
            "by a device for personalised ads and content, ad and content measurement, and "
            "audience insights, as well as to develop and improve products."
        ),
        (
            "With your permission we and our partners may use precise geolocation data and "
            "identification through device scanning. You may click to consent to our and our "
            "partners' processing as described above."
        ),
        "Necessary cookies help make a website usable by enabling basic functions.",
        "Accept all",
        "Reject all",
        "Manage preferences",
    )
    cleaned, _ = clean(banner)
    assert cleaned.removal == Removal("boilerplate.all_lines", 0, 1)
    article = (
        (
            "The ePrivacy Directive requires websites to obtain the consent of users before "
            "storing information on their devices, unless it is strictly necessary for a service "
            "the user requested."
        ),
        (
            "Regulators found that many banners made refusing harder than accepting, and that "
            "users could not withdraw their consent as easily as they gave it."
        ),
        (
            "In 2019 the Court of Justice ruled that a pre-ticked checkbox does not amount to "
            "valid consent, whatever the site and its partners say."
        ),
    )
    cleaned, _ = clean(article)
    assert cleaned.removal is None and cleaned.paragraphs == article


def test_the_document_rules_report_the_first_failing_check_in_order():
    repeated = PROSE + PROSE[:3]
    cleaned, counts = clean(repeated)
    assert cleaned.removal == Removal("gopher_repetition.dup_para_frac", 3 / 8, 0.3)
    assert counts["quality_removed_gopher_repetition.dup_para_frac"] == 1
    cleaned, _ = clean(repeated, settings(rules_off=["gopher_repetition"]))
    assert cleaned.removal == Removal(
        "fineweb.char_duplicates_ratio",
        pytest.approx(sum(map(len, PROSE[:3])) / sum(map(len, repeated))),
        0.01,
    )
    cleaned, _ = clean(PROSE[:1])
    assert cleaned.removal == Removal("gopher_quality.min_doc_words", 17, 50)
    cleaned, _ = clean(PROSE[:1], settings(rules_off=["gopher_quality"]))
    assert cleaned.removal == Removal("c4_document.min_num_sentences", 1, 3)


def test_a_book_or_its_chapter_has_no_word_count_bounds():
    few = settings(gopher_quality__max_doc_words=60)
    assert clean(PROSE, few)[0].removal == Removal("gopher_quality.max_doc_words", 83, 60)
    assert clean(PROSE, few, documents_format="books")[0].removal is None
    # a short chapter (Moby-Dick's "Midnight Aloft" has 40 words) is the author's
    chapter = (*PROSE[:2], "It is very old.")
    assert clean(chapter)[0].removal == Removal("gopher_quality.min_doc_words", 39, 50)
    assert clean(chapter, documents_format="books")[0].removal is None


def test_documents_not_in_a_target_language_or_under_its_threshold_are_removed():
    french = ("Bonjour. " + PROSE[0],) + PROSE[1:]
    cleaned, counts = clean(french, settings(["en", "de"]))
    # the bound of the language found (French: langid.THRESHOLDS), which no score of it passes
    assert cleaned.removal == Removal("language.not_target", 0.97, 0.7)
    assert counts == {"language_fr": 1, "quality_removed_language.not_target": 1}
    strict = QualitySettings.from_options(["en"], 0.95, [], {}, "redact", False)
    cleaned, _ = clean(PROSE, strict)
    assert cleaned.removal == Removal("language.low_score", 0.93, 0.95)
    # no targets: counted, not removed for its language, judged as French (whose stop words
    # this English text lacks)
    cleaned, counts = clean(french)
    assert cleaned.removal == Removal("gopher_quality.min_stop_words", 0, 2)
    assert counts == {"language_fr": 1, "quality_removed_gopher_quality.min_stop_words": 1}
    cleaned, counts = clean(PROSE, settings(rules_off=["language"]))
    assert cleaned.language == "unknown" and not counts


def test_paragraphs_confidently_in_another_language_are_dropped_with_their_short_neighbours():
    short_de, short_en = "Das ist sehr alt.", "It is very old."  # under 40 characters
    page = (PROSE[0], PROSE[1], GERMAN, short_de, GERMAN + " Mehr.", PROSE[2], short_en, *PROSE[3:])
    cleaned, counts = clean(page, settings(["en"]))
    assert cleaned.paragraphs == (*PROSE[:3], short_en, *PROSE[3:])
    assert cleaned.lines_removed["language"] == 3
    assert counts["quality_lines_language"] == 3
    # without targets nothing is dropped for its language
    assert "language" not in clean(page)[0].lines_removed


def test_foreign_paragraphs_judge_long_ones_and_let_short_ones_follow():
    s = settings(["en"])
    assert foreign_paragraphs(["Hi.", GERMAN, "Ja."], s, identify) == [True, True, True]
    assert foreign_paragraphs(["Hi.", "Ja."], s, identify) == [False, False]  # nothing judged
    assert foreign_paragraphs([GERMAN, "Ja.", PROSE[0]], s, identify) == [True, False, False]
    # a target language or a score under paragraph_threshold is not foreign
    assert foreign_paragraphs([GERMAN], settings(["en", "de"]), identify) == [False]
    lenient = settings(["en"], language__paragraph_threshold=0.99)
    assert foreign_paragraphs([GERMAN], lenient, identify) == [False]


def test_personal_data_is_redacted_kept_or_drops_the_document():
    mail = PROSE[:4] + ("Write to jane.doe@example.com for the walking map of the valley.",)
    cleaned, counts = clean(mail)
    assert (
        cleaned.paragraphs[-1]
        == f"Write to {pii.PLACEHOLDERS['email']} for the walking map of the valley."
    )
    assert cleaned.pii == {"email": 1} and counts["pii_email"] == 1
    cleaned, counts = clean(mail, settings(pii_mode="keep"))
    assert cleaned.paragraphs == mail and cleaned.pii == {} and "pii_email" not in counts
    cleaned, counts = clean(mail, settings(pii_mode="drop-document"))
    assert cleaned.removal == Removal("pii.drop_document", 1, 0)
    assert counts["quality_removed_pii.drop_document"] == 1 and counts["pii_email"] == 1
    assert clean(PROSE, settings(pii_mode="drop-document"))[0].removal is None


# A short section of the Debian Reference (German): a sentence, then an /etc/fstab listing, which
# lid.176 reads as Russian (0.30) in the whole section and as German (0.93) in the sentence alone.
FSTAB = (
    (
        'Die grundlegende statische Dateisystem-Konfiguration wird in "/etc/fstab" festgelegt. '
        "Zum Beispiel:"
    ),
    (
        "«file system» «mount point» «type» «options» «dump» «pass» proc /proc proc defaults 0 0 "
        "UUID=709cbe4c-80c1-56db-8ab1-dbce3146d2f7 / ext4 errors=remount-ro 0 1 /dev/scd0 "
        "/media/cdrom0 udf,iso9660 user,noauto 0 0"
    ),
    "$ sudo mount -a",
)


def test_listing_lines_are_prompts_and_lines_of_few_words():
    assert [listing.is_listing(line) for line in FSTAB] == [False, True, True]
    assert listing.is_listing("# losetup -v -f partition.img")
    assert listing.is_listing("-rw-r--r-- 2 root root 0 2008-09-15 20:21 baz")
    assert not listing.is_listing("Loop device is /dev/loop0")
    assert listing.prose_lines(FSTAB) == FSTAB[:1]
    assert listing.prose_lines(PROSE) == PROSE


def identify_listing(text: str) -> tuple[str, float]:
    """Russian for a text holding the fstab listing, German for its sentence, else French."""
    if "UUID=" in text:
        return "ru", 0.30
    if text.startswith("Die grundlegende"):
        return "de", 0.93
    return "fr", 0.95


def test_a_document_with_a_listing_is_identified_on_its_prose_lines():
    counts: Counter = Counter()
    inc = lambda name, n: counts.update({name: n})
    cleaned = clean_document(FSTAB, settings(["de"]), identify_listing, inc)
    assert (cleaned.language, cleaned.language_score) == ("de", 0.93)
    assert cleaned.removal.rule == "gopher_quality.min_doc_words" and cleaned.overridable
    assert counts["language_ru"] == 1  # counted as identified on the whole text
    # prose lines in no target language: the whole document's language removes it
    cleaned = clean_document(FSTAB, settings(["en"]), identify_listing, inc)
    assert cleaned.removal == Removal("language.not_target", 0.30, 0.8)
    # a target language under its threshold whole, over it on the prose lines
    low = lambda text: ("de", 0.43) if "UUID=" in text else ("de", 0.93)
    cleaned = clean_document(FSTAB, settings(["de"]), low, inc)
    assert (cleaned.language, cleaned.language_score) == ("de", 0.93)
    assert cleaned.removal.rule != "language.low_score"
    # a document without listing lines is identified on its whole text only
    french = ("Bonjour à tous.", *FSTAB[:1])
    assert clean_document(french, settings(["de"]), identify, inc).language == "fr"
