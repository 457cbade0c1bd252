"""The junk and boilerplate of the quality mix (benchmarks/helpers/quality_mix.py), made to the
patterns of real pages: ten kinds of junk page (JUNK_KINDS) drawn from templates and words of real
text, and the navigation bar, cookie banner and footer that `wrap` puts around an article. Every
page is a list of non-empty lines, the same for the same generator state."""

from __future__ import annotations

import random
import re

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
