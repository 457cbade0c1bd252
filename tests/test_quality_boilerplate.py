"""pipelines.quality.boilerplate: page furniture removed in seven languages and the prose around it
kept (recipes naming cookies, articles on copyright and JavaScript, verse, titles), and C4's line
rules as datatrove's C4QualityFilter applies them, each switchable, counted per check."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import shared_path

from pipelines.common import text_cleaning
from pipelines.quality import boilerplate
from pipelines.segment import input_formats

pytestmark = pytest.mark.backend_free

DEFAULTS = {
    "boilerplate.max_notice_words": 60,
    "boilerplate.max_link_words": 10,
    "boilerplate.min_nav_items": 3,
    "boilerplate.max_nav_item_words": 3,
    "c4_lines.min_words_per_line": 3,
    "c4_lines.max_word_length": 1000,
    "c4_lines.remove_citations": 1,
    "c4_lines.filter_no_terminal_punct": 0,
    "c4_lines.filter_javascript": 1,
    "c4_lines.filter_policy": 1,
}


class Settings:
    """The two methods of QualitySettings that line cleaning reads."""

    def __init__(self, off: tuple[str, ...] = (), **values: float):
        self.off = off
        self.values = {**DEFAULTS, **{name.replace("__", "."): v for name, v in values.items()}}

    def enabled(self, rule: str) -> bool:
        return rule not in self.off

    def threshold(self, rule: str, param: str, language: str) -> float:
        return self.values[f"{rule}.{param}"]


def clean(lines, language="en", settings=None):
    counts: Counter[str] = Counter()
    kept, removed = boilerplate.clean_lines(
        tuple(lines), language, settings or Settings(), lambda name, n: counts.update({name: n})
    )
    return kept, removed, counts


BOILERPLATE = {
    "cookie": (
        "We use cookies to improve your experience on our website.",
        "This website uses cookies to ensure you get the best experience.",
        "By continuing to browse the site you are agreeing to our use of cookies.",
        "Accept all cookies",
        "Diese Website verwendet Cookies. Wir verwenden Cookies, um Inhalte zu personalisieren.",
        "Ce site utilise des cookies pour améliorer votre expérience.",
        "Este sitio web utiliza cookies para mejorar su experiencia.",
        "Questo sito utilizza cookie tecnici e di profilazione.",
        "Este site utiliza cookies para melhorar a sua experiência.",
        "Deze website maakt gebruik van cookies.",
        # consent-management platforms' standard texts (IAB TCF, Cookiebot, OneTrust, CookieYes,
        # Complianz, iubenda, Usercentrics), notices and buttons
        (
            "We and our partners store and/or access information on a device, such as cookies and "
            "process personal data, such as unique identifiers and standard information sent by a "
            "device for personalised ads and content, ad and content measurement, and audience "
            "insights, as well as to develop and improve products."
        ),
        "With your permission we and our partners may use precise geolocation data.",
        "You may click to consent to our and our partners' processing as described above.",
        (
            "We also share information about your use of our site with our social media, "
            "advertising and analytics partners."
        ),
        "Marketing cookies are used to track visitors across websites.",
        (
            "By clicking “Accept All Cookies”, you agree to the storing of cookies on your device "
            "to enhance site navigation."
        ),
        "These cookies are necessary for the website to function and cannot be switched off.",
        "Consenting to these technologies will allow us to process data such as unique IDs.",
        "You can freely give, deny, or withdraw your consent at any time.",
        "We value your privacy",
        "Accept all",
        "Use necessary cookies only",
        "Manage consent preferences",
        "Privacy Preference Center",
        "Do Not Sell or Share My Personal Information",
        "Your Privacy Choices",
        "Agree and close",
        (
            "Wir und unsere Partner speichern und/oder greifen auf Informationen auf einem Gerät "
            "zu, beispielsweise auf Cookies."
        ),
        "Mit Ihrer Erlaubnis können wir und unsere Partner genaue Standortdaten verwenden.",
        "Notwendige Cookies helfen dabei, eine Webseite nutzbar zu machen.",
        "Alle akzeptieren",
        "Nur notwendige Cookies verwenden",
        "Nous et nos partenaires stockons et/ou accédons à des informations sur un appareil.",
        "Vous pouvez modifier vos préférences avant de consentir ou de refuser de consentir.",
        "Continuer sans accepter",
        "Tout refuser",
        "Nosotros y nuestros socios almacenamos o accedemos a información en un dispositivo.",
        (
            "Al hacer clic en “Aceptar todas las cookies”, usted acepta que las cookies se "
            "guarden en su dispositivo."
        ),
        "Rechazarlas todas",
        "Noi e terze parti selezionate utilizziamo cookie o tecnologie simili.",
        "Con il tuo consenso, noi e i nostri partner possiamo utilizzare dati precisi.",
        "Rifiuta tutti",
        "Nós e os nossos parceiros armazenamos e/ou acedemos a informações num dispositivo.",
        "Ao clicar em “Aceitar todos os cookies”, concorda com o armazenamento de cookies.",
        "Rejeitar todos",
        "Wij en onze partners slaan informatie op een apparaat op en/of openen deze.",
        "Door op „Alle cookies accepteren” te klikken, gaat u akkoord.",
        "Voorkeuren beheren",
    ),
    "rights": (
        "© 2024 Acme Corporation. All rights reserved.",
        "Copyright 2019-2024 Example Media Ltd",
        "Copyright © 2010 The Daily Courier. All Rights Reserved. Terms | Privacy",
        "© 2023 Musterfirma GmbH. Alle Rechte vorbehalten.",
        "Tous droits réservés.",
        "Todos los derechos reservados.",
        "Tutti i diritti riservati.",
        "Todos os direitos reservados.",
        "Alle rechten voorbehouden.",
    ),
    "javascript": (
        "Please enable JavaScript in your browser to view this page.",
        "JavaScript is disabled in your browser.",
        "Bitte aktivieren Sie JavaScript, um diese Seite zu nutzen.",
    ),
    "skip": (
        "Skip to main content",
        "Jump to navigation",
        "Zum Inhalt springen",
        "Aller au contenu principal",
    ),
    "breadcrumb": ("You are here: Home",),
    "call_to_action": (
        "Read more",
        "Click here to subscribe",
        "Share this article",
        "Weiterlesen",
        "Lire la suite",
        "Leer más",
        "Leggi tutto",
        "Leia mais",
        "Lees meer",
        "The council met on Tuesday to discuss the new budget, and members... Read more »",
    ),
    "account": ("Sign in", "Log in / Register", "Anmelden", "Se connecter", "Iniciar sesión"),
    "policy": ("Privacy Policy", "Terms of Use", "Impressum", "Datenschutzerklärung"),
    "navigation": (
        "Home | About | Services | Contact",
        "Home » Products » Shoes » Running",
        "News · Sport · Weather · Travel · Culture",
        "Home About Us Services Portfolio Blog Contact",
        "Home & Garden Kitchen Bath Outdoor Living",
    ),
}
PROSE = (
    "Bake the cookies for twelve minutes, until the edges are golden and the centres still soft.",
    "We baked cookies for the school fair.",
    (
        "Copyright is a type of intellectual property that gives its owner the exclusive right to "
        "copy, distribute, adapt, display, and perform a creative work, usually for a limited time."
    ),
    (
        'The phrase "All rights reserved" was a formal requirement of copyright notices under the '
        "Buenos Aires Convention of 1910."
    ),
    "All rights reserved is a phrase that originated in copyright law.",
    "If JavaScript is disabled, the page falls back to plain links.",
    "He told me to read more of the old masters before I judged them.",
    "Shall I compare thee to a summer's day? / Thou art more lovely and more temperate",
    "The Man Who Was Thursday",
    "Enter Brutus and Cassius.",
    "Die Stadt liegt am Rhein und hat viele alte Brücken.",
    "Home is where the heart is.",
    '"Yes," said Harriet, "I read more than you think."',
    "IF S > R THEN",
    "Subscribers received a free copy.",
    # recipes, and articles on consent law: of users and their consent, not the site's voice
    "These cookies will keep for a week if you store them in an airtight tin.",
    "Store the cookies and/or the dough in the fridge for up to three days.",
    "Marketing cookies are a staple of bake sales across the country.",
    "Accept the things you cannot change.",
    (
        "The General Data Protection Regulation requires that consent be freely given, specific, "
        "informed and unambiguous, and users must be able to withdraw their consent as easily as "
        "they gave it."
    ),
    (
        "Under the ePrivacy Directive, websites must obtain the consent of users before storing "
        "cookies on their devices, unless the cookies are strictly necessary for a service the "
        "user requested."
    ),
    (
        "In 2019 the Court of Justice ruled in Planet49 that a pre-ticked checkbox does not amount "
        "to valid consent to the storage of cookies."
    ),
    "The company and its partners store and process the personal data of millions of customers.",
    "With your permission, I will read the letter aloud.",
    "He refused consent to the marriage.",
    "Die Datenschutz-Grundverordnung verlangt, dass die Einwilligung freiwillig erteilt wird.",
    "Le règlement exige que le consentement des utilisateurs soit libre et éclairé.",
)


@pytest.mark.parametrize("check", sorted(BOILERPLATE))
def test_boilerplate_lines_go_counted_per_check(check):
    lines = BOILERPLATE[check]
    kept, removed, counts = clean(lines, settings=Settings(off=("c4_lines",)))
    assert kept == ()
    assert removed == {"boilerplate": len(lines)}
    assert counts == {f"quality_linecheck_boilerplate_{check}": len(lines)}


def test_prose_around_the_boilerplate_is_kept():
    lines = ("Skip to main content", *PROSE, "© 2024 Acme Corporation. All rights reserved.")
    kept, removed, _ = clean(lines, settings=Settings(off=("c4_lines",)))
    assert kept == PROSE
    assert removed == {"boilerplate": 2}


def test_prose_naming_cookies_or_javascript_is_c4s_to_drop_not_boilerplates():
    article = (
        (
            "Many websites use cookies to remember users between visits, which led the European "
            "Union to require consent."
        ),
        "JavaScript is one of the core technologies of the World Wide Web.",
    )
    assert clean(article, settings=Settings(off=("c4_lines",)))[0] == article
    kept, _, counts = clean(article, settings=Settings(off=("boilerplate",)))
    assert kept == ()
    assert counts == {
        "quality_linecheck_c4_lines_policy": 1,
        "quality_linecheck_c4_lines_javascript": 1,
    }


def test_notices_and_links_are_matched_only_in_short_lines():
    notice = "We use cookies to give you the most relevant experience. " * 7  # 70 words
    link = "Read more about the history of the town and of its old bridges"  # 13 words
    assert clean((notice.strip(), link), settings=Settings(off=("c4_lines",)))[1] == {}
    wider = Settings(
        off=("c4_lines",), boilerplate__max_notice_words=70, boilerplate__max_link_words=13
    )
    assert clean((notice.strip(), link), settings=wider)[1] == {"boilerplate": 2}
    button = "Reject all offers of help, she said, and keep going."  # a sentence, not a label
    assert clean((button,), settings=Settings(off=("c4_lines",)))[1] == {}


def test_c4s_line_checks_in_datatroves_order():
    lines = (
        "a" * 1001 + " is too long a word.",
        "The city was founded in 1200.[1][citation needed]",
        "[edit]",
        "Yes.",
        "Exit Cicero.",
        "Macb. My dearest Loue, Duncan comes here to Night",
        "You need JavaScript for this page to work.",
        "By using this site you agree to the terms of use.",
    )
    kept, removed, counts = clean(lines, settings=Settings(off=("boilerplate",)))
    assert kept == ("The city was founded in 1200.", lines[5])
    assert removed == {"c4_lines": 6}
    assert counts == {
        "quality_linecheck_c4_lines_too_long_word": 1,
        "quality_linecheck_c4_lines_too_few_words": 3,
        "quality_linecheck_c4_lines_javascript": 1,
        "quality_linecheck_c4_lines_policy": 1,
    }


def test_terminal_punctuation_is_required_only_when_switched_on():
    lines = ("Macb. My dearest Loue, Duncan comes here to Night", "And so it went on...", "Done.")
    on = Settings(off=("boilerplate",), c4_lines__filter_no_terminal_punct=1)
    kept, _, counts = clean(lines + ("Really?", "«C'est fini.»"), settings=on)
    assert kept == ()
    assert counts == {
        "quality_linecheck_c4_lines_no_terminal_punct": 2,
        "quality_linecheck_c4_lines_too_few_words": 3,
    }
    assert clean(lines[:2], settings=Settings(off=("boilerplate",)))[0] == lines[:2]


def test_words_of_japanese_lines_come_from_the_segmenter():
    lines = ("吾輩は猫である。", "はい。")
    kept, _, counts = clean(lines, "ja", Settings(off=("boilerplate",)))
    assert kept == ("吾輩は猫である。",)
    assert counts == {"quality_linecheck_c4_lines_too_few_words": 1}


def test_both_rules_off_keep_every_line():
    lines = ("Skip to main content", "Yes.", "JavaScript is disabled in your browser.")
    assert clean(lines, settings=Settings(off=("boilerplate", "c4_lines"))) == (lines, {}, {})


def test_the_books_keep_all_but_their_shortest_lines():
    """Plays (Latin-1) and verse: boilerplate finds nothing, C4 drops only lines of 1-2 words
    (stage directions: 0.6 % of Julius Caesar's characters)."""
    for name in ("shakespeare-caesar.txt", "whitman-leaves.txt"):
        raw = shared_path("books", name).read_bytes()
        text = raw.decode("utf-8" if name.startswith("whitman") else "latin-1")
        document = input_formats.RawDocument("books", name, text)
        lines = [text_cleaning.normalize_text(p) for p in input_formats.raw_paragraphs(document)]
        kept, _, counts = clean([line for line in lines if line])
        assert set(counts) <= {"quality_linecheck_c4_lines_too_few_words"}, name
        assert sum(map(len, kept)) > 0.99 * sum(map(len, lines)), name  # "Exit Cicero."
