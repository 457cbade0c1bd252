"""Personal data redaction: each kind's forms in a sentence, and the decoys (numbers, dates,
versions, private addresses, identifiers) that must come out as they went in."""

import unicodedata

import pytest

from pipelines.quality import pii
from pipelines.quality.pii import PLACEHOLDERS, redact

pytestmark = pytest.mark.backend_free

HITS = [
    ("email", "john.doe@example.com"),
    ("email", "JANE_SMITH+news@mail.example.co.uk"),
    ("email", "josé.garcía@correo.es"),
    ("email", "a.b-c@sub.domain.org"),
    ("email", "user123@gmail.com"),
    ("email", "first.last@uni-heidelberg.de"),
    ("email", "x@y.museum"),
    ("ip", "8.8.8.8"),
    ("ip", "1.1.1.1"),
    ("ip", "151.101.1.69"),
    ("ip", "203.0.113.42"),
    ("ip", "192.0.2.1"),
    ("ip", "198.51.100.7"),
    ("ip", "2001:db8::1"),
    ("ip", "2606:4700:4700::1111"),
    ("ip", "2a00:1450:4001:82b::200e"),
    ("ip", "2001:4860:4860::8888"),
    ("ip", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
    ("ip", "2001:125:445b:d316:2796:3e72:51ec:565f"),
    ("ip", "2001:0:4136:e378:8000:63bf:3fff:fdd2"),
    ("card", "4111 1111 1111 1111"),
    ("card", "4111-1111-1111-1111"),
    ("card", "4111111111111111"),
    ("card", "4000 0566 5566 5556"),
    ("card", "5500 0000 0000 0004"),
    ("card", "5105105105105100"),
    ("card", "2221 0000 0000 0009"),
    ("card", "3782 822463 10005"),
    ("card", "371449635398431"),
    ("card", "6011 1111 1111 1117"),
    ("card", "3530111333300000"),
    ("card", "30569309025904"),
    ("card", "6200000000000005"),
    ("phone", "+4915112345678"),
    ("phone", "(415) 555-2671"),
    ("phone", "415-555-2671"),
    ("phone", "+1 415 555 2671"),
    ("phone", "+1 (415) 555-2671"),
    ("phone", "415.555.2671"),
    ("phone", "1-800-555-0199"),
    ("phone", "+49 30 1234567"),
    ("phone", "+49 30 1234567-89"),
    ("phone", "030 12345678"),
    ("phone", "030/1234567"),
    ("phone", "(030) 1234567"),
    ("phone", "0049 30 1234567"),
    ("phone", "+33 1 23 45 67 89"),
    ("phone", "01 23 45 67 89"),
    ("phone", "+44 20 7946 0958"),
    ("phone", "+44 (0)20 7946 0958"),
    ("phone", "020 7946 0958"),
    ("phone", "+39 06 1234 5678"),
    ("phone", "06 1234 5678"),
    ("phone", "+34 912 345 678"),
    ("phone", "+48 22 123 45 67"),
    ("phone", "+7 495 123-45-67"),
    ("phone", "8 (495) 123-45-67"),
    ("phone", "+81 3-1234-5678"),
    ("phone", "+86 10 1234 5678"),
]

DECOYS = [
    "John 3:16",
    "3:16-18",
    "Genesis 1:1-3",
    "2024-05-17",
    "17.05.2024",
    "05/17/2024",
    "17/05/2024",
    "from 1914-1918",
    "in 1984",
    "14:30",
    "14:30:15",
    "1.2.3",
    "v2.10.4",
    "10.0.19041.1",
    "version 4.2.1.0",
    "Project-Id-Version: man-db 2.7.6.1",
    "$Id: strftime.c,v 1.10.2.3 2005/11/07",
    "Boston, MA 02110-1301",
    "OID 1.3.6.1.4.1",
    "978-3-16-148410-0",
    "ISBN 0-306-40615-2",
    "ISBN 978-0-306-40615-7",
    "EAN 4006381333931",
    "$1,234.56",
    "1.234,56 €",
    "1,234,567",
    "83 200 000 inhabitants",
    "48.8566° N, 2.3522° E",
    "40.7128, -74.0060",
    "10.0.0.1",
    "192.168.1.1",
    "172.16.0.5",
    "127.0.0.1",
    "100.64.0.1",
    "169.254.1.1",
    "0.0.0.0",
    "255.255.255.0",
    "224.0.0.1",
    "::1",
    "fe80::1",
    "fd12:3456:789a::1",
    "std::vector<int>",
    "4111 1111 1111 1112",
    "1234 5678 9012 3456",
    "(123) 456-7890",
    "555-1234",
    "12 34 56",
    "d41d8cd98f00b204e9800998ecf8427e",
    "3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
    "123e4567-e89b-12d3-a456-426614174000",
    "00:1A:2B:3C:4D:5E",
    "00-1A-2B-3C-4D-5E",
    "@username",
    "user@localhost",
    "logo@2x.png",
]


def test_each_form_is_replaced_by_its_placeholder():
    wrong = {}
    for kind, value in HITS:
        text = f"Contact: {value}, or write."
        got = redact(text)
        if got != (f"Contact: {PLACEHOLDERS[kind]}, or write.", {kind: 1}):
            wrong[value] = got
    assert wrong == {}


def test_decoys_are_kept():
    wrong = {}
    for value in DECOYS:
        text = f"See {value} here."
        got = redact(text)
        if got != (text, {}):
            wrong[value] = got
    assert wrong == {}


def test_the_tables_are_large_enough():
    assert len(HITS) >= 40
    assert len(DECOYS) >= 40
    assert {kind for kind, _ in HITS} == set(PLACEHOLDERS)


def test_hits_at_the_edges_of_the_text():
    assert redact("8.8.8.8") == ("<IP_ADDRESS>", {"ip": 1})
    assert redact("+4915112345678") == ("<PHONE>", {"phone": 1})
    assert redact("(415) 555-2671.") == ("<PHONE>.", {"phone": 1})


def test_counts_per_kind_in_one_paragraph():
    text = (
        "Mail anna@example.org or bob@example.org, call +49 30 1234567 from 10.0.0.1 "
        "(public 8.8.4.4:53), pay with 4111 1111 1111 1111 before 2024-05-17."
    )
    expected = (
        "Mail <EMAIL> or <EMAIL>, call <PHONE> from 10.0.0.1 (public <IP_ADDRESS>:53), pay with "
        "<CARD_NUMBER> before 2024-05-17."
    )
    assert redact(text) == (expected, {"email": 2, "phone": 1, "ip": 1, "card": 1})


def test_an_address_with_digits_is_one_email_not_a_phone():
    assert redact("write to 4915112345678@sms.example.net") == ("write to <EMAIL>", {"email": 1})


def test_text_without_digits_or_at_signs_is_returned_unchanged():
    text = "Nothing personal in this sentence, only words: Vim est un éditeur très puissant."
    assert redact(text) == (text, {})


def test_placeholders_survive_nfkc_and_a_second_redaction():
    for placeholder in PLACEHOLDERS.values():
        assert placeholder.isascii()
        assert unicodedata.normalize("NFKC", placeholder) == placeholder
    once, _ = redact("a@b.de 8.8.8.8 +4915112345678 4111111111111111")
    assert redact(once) == (once, {})


def test_card_checks():
    assert pii.is_card_number("4111 1111 1111 1111")
    assert not pii.is_card_number("4111 1111 1111 1112")  # Luhn
    assert not pii.is_card_number("4222222222222")  # a Visa of 13 digits is no longer issued
    assert not pii.is_card_number("9780306406157")  # ISBN-13, Luhn or not


def test_ip_checks():
    assert pii.is_public_ip("8.8.8.8")
    assert pii.is_public_ip("2001:db8::1")
    assert not pii.is_public_ip("1:2:3")
    assert not pii.is_public_ip("a::b")  # parses, but outside 2000::/3
    assert not pii.is_public_ip("300.1.1.1")
