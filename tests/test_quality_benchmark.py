"""benchmarks/helpers/quality_mix and the sources it assembles (planted_pii, junk_pages, mojibake,
udhr_texts, real_prose): the planted data and the junk are the same for one seed, of the kinds
the benchmark scores, and the truth it scores against holds (Luhn-valid cards, valid ISBNs, public
and private addresses as planted, mojibake that differs from its original, the Bible's chapters
and verses, a manual's paragraphs without its tables)."""

import ipaddress
import random
import re

import pytest

from benchmarks.helpers import junk_pages, planted_pii, quality_mix, real_prose, udhr_texts
from benchmarks.helpers.mojibake import mojibake

pytestmark = pytest.mark.backend_free

PASSAGE = (
    "The river rises in the hills north of the town.",
    "Its course was changed twice in the last century, and the old bed is now a park.",
)


def planted(seed: int):
    g = random.Random(seed)
    return planted_pii.plant(PASSAGE, g, list(planted_pii.PII_KINDS), list(planted_pii.DECOY_KINDS))


def test_planting_is_deterministic_and_every_string_is_in_the_text():
    assert planted(3) == planted(3) and planted(3) != planted(4)
    paragraphs, pii, decoys = planted(3)
    text = "\n".join(paragraphs)
    assert [kind for kind, _ in pii] == list(planted_pii.PII_KINDS)
    assert [kind for kind, _ in decoys] == list(planted_pii.DECOY_KINDS)
    assert all(value in text for _, value in pii + decoys)
    assert all(p.startswith(q) for p, q in zip(paragraphs, PASSAGE, strict=True))


@pytest.mark.parametrize("seed", range(20))
def test_the_planted_values_are_what_they_claim(seed):
    g = random.Random(seed)
    digits = re.sub(r"\D", "", planted_pii.card_number(g))
    assert planted_pii.luhn_digit(digits[:-1]) == digits[-1] and len(digits) in (15, 16)
    assert ipaddress.ip_address(planted_pii.public_ipv4(g)).is_global
    assert ipaddress.ip_address(planted_pii.public_ipv6(g)).is_global
    isbn = planted_pii.isbn13(g).replace("-", "")
    assert sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(isbn)) % 10 == 0
    make, _ = planted_pii.DECOY_KINDS["private_ip"]
    address = ipaddress.ip_address(make(g))
    assert address.is_private or address.is_loopback


@pytest.mark.parametrize("kind", junk_pages.JUNK_KINDS)
def test_every_junk_kind_is_a_page_of_lines_and_deterministic(kind):
    vocabulary = ["river", "garden", "lamp", "winter", "market", "station"]
    sentences = ["The market opens at dawn on every day of the week."]

    def page(seed):
        return junk_pages.junk(kind, random.Random(seed), vocabulary, sentences)

    assert page(1) == page(1)
    assert len(page(1)) >= 2 and all(line.strip() and "\n" not in line for line in page(1))


def test_wrapped_prose_keeps_the_article_between_its_boilerplate():
    lines, boilerplate = junk_pages.wrap(PASSAGE, random.Random(5))
    assert [line for line in lines if line not in boilerplate] == list(PASSAGE)
    assert len(boilerplate) >= 5


def test_mojibake_differs_from_its_original_and_decodes_back():
    text = "Café society – the “naïve” years"
    broken, encoding = mojibake(text, random.Random(0))
    assert broken != text and broken.encode(encoding).decode("utf-8") == text


def test_chunks_keep_every_paragraph_in_order_and_reach_the_least_size():
    paragraphs = [f"word {i} " * 30 for i in range(10)]
    runs = udhr_texts.chunks(paragraphs, "fr", 100)
    assert [p for run in runs for p in run] == paragraphs
    assert all(sum(udhr_texts.size(p, "fr") for p in run) >= 100 for run in runs)
    assert udhr_texts.size("人人生而自由", "zh") == 3


def test_copies_vary_ids_and_paragraphs():
    doc = quality_mix.Doc("junk-x-0001", "junk", "x", "a line\nanother line")
    one, two = quality_mix.copies([doc], 2)
    assert one == quality_mix.Doc("junk-x-0001-c0", "junk", "x", doc.text)
    assert two.id == "junk-x-0001-c1" and two.text == "a line (1)\nanother line (1)"


def test_real_prose_reads_chapters_verses_paragraphs_and_code_and_leaves_tables_out(tmp_path):
    (tmp_path / "kjv.txt").write_text(
        "\nPsalms 117\n\n  1 O praise the LORD, all ye nations:\npraise him, all ye people.\n"
        "  2 For his merciful kindness is great toward us.\n\nPsalms 118\n\n  1 O give thanks.\n",
        encoding="utf-8",
    )
    first, second = real_prose.scripture(tmp_path)
    assert first.source == "Psalms 117" and first.held_out == second.held_out
    assert first.paragraphs == (
        "1 O praise the LORD, all ye nations: praise him, all ye people.",
        "2 For his merciful kindness is great toward us.",
    )
    assert real_prose._paragraphs(["    You type", "    Ctrl-D."]) == ["You type Ctrl-D."]
    assert real_prose._paragraphs(["    $ ls -l", "    $ cd /"]) == ["$ ls -l", "$ cd /"]
    assert real_prose._paragraphs(["    +----+", "    |a  |"]) == []
