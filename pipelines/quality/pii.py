"""Personal data redaction: e-mail addresses, phone numbers, public IP addresses and payment card
numbers are replaced by fixed placeholders (`PLACEHOLDERS`): ASCII words in angle brackets that
NFKC leaves as they are and no detector here matches again. A SentencePiece model keeps each whole
when it is one of the model's user_defined_symbols; one trained on text without "<" and ">" (the
reference model of shared/data/reference) reads those two characters as unknown.

What is redacted, in this order (a placeholder is never part of a later match):
- email: local@domain.tld with an alphabetic top-level domain, not an image file name such as
  "logo@2x.png".
- ip: IPv4 (dotted quad) and IPv6 addresses that `ipaddress` parses and that are public: IPv4
  globally routable unicast or inside the documentation ranges (192.0.2.0/24, 198.51.100.0/24,
  203.0.113.0/24), which text uses to stand for a public address; IPv6 inside the global unicast
  block 2000::/3, its special-purpose and documentation ranges (2001::/23, 2001:db8::/32) included,
  for the same reason and because a Teredo address (2001::/32) carries a public IPv4 address.
  Private, loopback, link-local, shared (100.64.0.0/10), multicast, reserved (netmasks such as
  255.255.255.0) and unspecified addresses are kept, and so is a dotted quad less than 24
  characters after the word "version", "release", "build", "ver" or "v" (man-db 2.7.6.1).
- card: 13 to 19 digits, single spaces or dashes between them, passing the Luhn check, with the
  issuer prefix and length of Visa (16, 19), Mastercard (51-55, 2221-2720; 16), American Express
  (34, 37; 15), Diners (300-305, 36, 38, 39; 14-19), JCB (3528-3589; 16-19), Discover, UnionPay and
  Maestro (50, 56-69; 13-19). ISBN-13s (978, 979) and most other long numbers fail these.
- phone: international numbers written with "+" and a country code (+4915112345678,
  +1 415 555 2671, +44 (0)20 7946 0958; 8 to 15 digits) or with "00" for "+" (0049 30 1234567);
  North American numbers ((415) 555-2671, 415-555-2671, 415.555.2671, 1-800-555-0199; area code
  and exchange starting 2-9); national numbers with the trunk prefix 0 (030 12345678,
  030/1234567, 01 23 45 67 89, 020 7946 0958, 06 1234 5678; 9 to 12 digits); Russian numbers with
  the trunk prefix 8 (8 (495) 123-45-67). National numbers without a trunk prefix (Spain, Poland)
  look like grouped figures and are kept, and so are US ZIP+4 codes (02110-1301).

Kept as they are: verse references, dates, times, version strings, ISBNs, prices, population
figures, coordinates, hex hashes, UUIDs, MAC addresses (a device's, not a person's, and rare in
prose), numbers of fewer than 8 digits. Digits inside a word or after a dash are never a start.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

PLACEHOLDERS: dict[str, str] = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "ip": "<IP_ADDRESS>",
    "card": "<CARD_NUMBER>",
}

_DIGIT = re.compile(r"\d")
# Seven digits with at most two separators between neighbours: the least a card or phone has.
_LONG_NUMBER = re.compile(r"\d(?:[ ().\-/]{0,2}\d){6}")

_EMAIL = re.compile(
    r"(?<![\w.%+-])[\w%+-]+(?:\.[\w%+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
    r"[A-Za-z]{2,24}(?![\w@-])"
)
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
_VERSION_WORD = re.compile(r"(?i)\b(?:version|release|build|ver|v)\b[^.!?]*$")
_DOCUMENTATION = tuple(
    ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")

_ZIP_PLUS_4 = re.compile(r"\d{5}-\d{4}")

_CARD = re.compile(r"(?<![\w+.,/-])\d(?:[ -]?\d){12,18}(?![\w]|[.,/-]\d)")

# A quick test of each position first (four times faster), then the forms: international; North
# American (the same separator twice unless "(area) "); trunk prefix 0; Russian 8 (area).
_PHONE = re.compile(
    r"(?=[+(\d])"
    r"(?:(?<![\w+])\+\d{1,3}(?: ?\(0\))?(?:[ .-]?\(?\d{1,5}\)?){1,6}(?![\w]|[.,/-]\d)"
    r"|(?<![\w+.,/-])(?:1[ .-])?(?:\([2-9]\d\d\) ?|[2-9]\d\d([ .-]))[2-9]\d\d(?(1)\1|[ .-])\d{4}"
    r"(?![\w]|[.,/-]\d)"
    r"|(?<![\w+.,/:-])\(?0\d{1,4}\)?(?: ?/ ?| |-)?\d{2,8}(?:[ -]\d{2,8}){0,4}(?![\w]|[.,/-]\d)"
    r"|(?<![\w+.,/:-])8 ?\(\d{3,4}\) ?\d{2,3}-\d\d-\d\d(?![\w]|[.,/-]\d))"
)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _issued_length(digits: str) -> bool:
    """Whether `digits` has an issuer prefix and a length that belong together."""
    n, p2, p3, p4 = len(digits), int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":
        return n in (16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p2 in (36, 38, 39) or 300 <= p3 <= 305:
        return 14 <= n <= 19
    if 3528 <= p4 <= 3589:
        return 16 <= n <= 19
    if p2 == 50 or 56 <= p2 <= 69:
        return 13 <= n <= 19
    return False


def is_card_number(text: str) -> bool:
    """Whether `text` (digits with single spaces or dashes) is a payment card number."""
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and _issued_length(digits) and _luhn(digits)


def is_public_ip(text: str) -> bool:
    """Whether `text` is an IP address that is redacted: public or a documentation address."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if address.version == 6:
        return address in _GLOBAL_UNICAST_V6
    if any(address in net for net in _DOCUMENTATION):
        return True
    return address.is_global and not address.is_multicast


def is_phone_number(text: str) -> bool:
    """Whether a candidate of the phone pattern has a phone number's digits: 8 to 15 after "+" (a
    "(0)" not counted) with at most one pair of parentheses, 10 to 17 after "00", 9 to 12 after the
    trunk prefix 0; the North American and Russian forms are exact already."""
    digits = sum(ch.isdigit() for ch in text)
    if _ZIP_PLUS_4.fullmatch(text):
        return False
    if text.startswith("+"):
        parentheses = text.count("(") == text.count(")") <= 1
        return 8 <= digits - text.count("(0)") <= 15 and parentheses
    if text.startswith(("00", "(00")):
        return 10 <= digits <= 17
    if text.startswith(("0", "(0")):
        return 9 <= digits <= 12
    return True


def _email(match: re.Match[str]) -> bool:
    return not match[0].lower().endswith(_IMAGE_SUFFIXES)


def _ipv4(match: re.Match[str]) -> bool:
    before = match.string[max(0, match.start() - 24) : match.start()]
    return is_public_ip(match[0]) and not _VERSION_WORD.search(before)


def _ipv6(match: re.Match[str]) -> bool:
    return is_public_ip(match[0])


def _card(match: re.Match[str]) -> bool:
    return is_card_number(match[0])


def _phone(match: re.Match[str]) -> bool:
    return is_phone_number(match[0])


def _may_hold_ipv6(text: str) -> bool:
    return "::" in text or text.count(":") >= 7


def _has_long_number(text: str) -> bool:
    return _LONG_NUMBER.search(text) is not None


# (kind, cheap test that a text may hold one, candidates, test of a candidate), in order.
_DETECTORS: tuple[
    tuple[str, Callable[[str], bool], re.Pattern[str], Callable[[re.Match[str]], bool]], ...
] = (
    ("email", lambda text: "@" in text, _EMAIL, _email),
    ("ip", lambda text: "." in text, _IPV4, _ipv4),
    ("ip", _may_hold_ipv6, _IPV6, _ipv6),
    ("card", _has_long_number, _CARD, _card),
    ("phone", _has_long_number, _PHONE, _phone),
)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """`text` with its e-mail addresses, public IP addresses, card numbers and phone numbers
    replaced by their `PLACEHOLDERS`, and the number replaced per kind (kinds with none are
    absent). A text without "@" and without a digit costs two scans."""
    counts: dict[str, int] = {}
    has_digit = _DIGIT.search(text) is not None
    for kind, may_hold, pattern, accept in _DETECTORS:
        if (kind == "email" or has_digit) and may_hold(text):
            text, count = _substitute(text, pattern, accept, PLACEHOLDERS[kind])
            if count:
                counts[kind] = counts.get(kind, 0) + count
    return text, counts


def _substitute(
    text: str,
    pattern: re.Pattern[str],
    accept: Callable[[re.Match[str]], bool],
    placeholder: str,
) -> tuple[str, int]:
    """`text` with the matches of `pattern` that `accept` takes replaced by `placeholder`, and how
    many were replaced."""
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        if not accept(match):
            return match[0]
        count += 1
        return placeholder

    return pattern.sub(one, text), count
