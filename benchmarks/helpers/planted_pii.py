"""The personal data and decoys the quality mix (benchmarks/helpers/quality_mix.py) plants in clean
passages: e-mail addresses, phone numbers (E.164, North American, European international and
national forms), public IPv4/IPv6 addresses and Luhn-valid card numbers (PII_KINDS), and strings
a redactor must leave alone (DECOY_KINDS: verse references, dates, times, versions, ISBNs, prices,
private and loopback addresses). Each kind is (a maker drawing one value from a generator, a
sentence that holds it); `plant` appends the sentences to the passage's paragraphs."""

from __future__ import annotations

import random


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
