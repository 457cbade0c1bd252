"""Pure functions of the segmentation stage: normalisation, sentences, books, input formats."""

from __future__ import annotations

import bz2
import io
import re
from pathlib import Path

import pytest

from pipelines.common import text_cleaning
from pipelines.segment import books, input_formats, input_streams

pytestmark = pytest.mark.backend_free

FIXTURES = Path(__file__).parent / "fixtures" / "segment"


class Counts(dict):
    def __call__(self, name: str, amount: int = 1) -> None:
        self[name] = self.get(name, 0) + amount


def test_normalize_text_unicode_controls_and_whitespace():
    text = "caf\u0065\u0301\u00a0\u200b ﬁne\x07\tend\n\n  next\u2028line"
    assert text_cleaning.normalize_text(text, "NFKC") == "café fine end next line"
    assert text_cleaning.normalize_text("ﬁ\ue000x", "NFC") == "ﬁx"


def test_long_sentences_are_cut_at_spaces_within_the_bound():
    sentence = " ".join(["word"] * 50)
    pieces = text_cleaning.split_long_sentence(sentence, 23)
    assert all(len(piece) <= 23 for piece in pieces)
    assert " ".join(pieces) == sentence
    assert text_cleaning.split_long_sentence("x" * 50, 20) == ["x" * 20, "x" * 20, "x" * 10]


def test_sentence_splitter_handles_abbreviations_and_counts_cuts():
    counts = Counts()
    splitter = text_cleaning.SentenceSplitter(max_sentence_chars=40)
    sentences = splitter.split(
        "Mr. Smith went to Washington. He said hello! Then he walked all the way along the river "
        "to the sea.",
        counts,
    )
    assert sentences[:2] == ["Mr. Smith went to Washington.", "He said hello!"]
    assert all(len(s) <= 40 for s in sentences) and len(sentences) == 4
    assert counts == {"sentences_cut": 1}


def test_document_block_is_the_reference_input_format():
    assert text_cleaning.document_block(["One.", "Two."]) == "One.\nTwo.\n\n"
    assert text_cleaning.content_hash(["a", "b"]) == text_cleaning.content_hash(("a", "b"))
    assert text_cleaning.content_hash(["a", "b"]) != text_cleaning.content_hash(["ab"])


def test_book_header_footer_headings_and_wrapped_lines():
    paragraphs = books.book_paragraphs((FIXTURES / "book.txt").read_text())
    assert paragraphs[0].startswith(
        "The ship left the harbour early in the morning, when the fog still lay"
    )
    assert "at the wheel--silent, watchful--and said" in paragraphs[0]
    assert len(paragraphs) == 3
    text = "\n".join(paragraphs)
    assert "Gutenberg" not in text and "CHAPTER" not in text and "Chapter 2" not in text


def test_format_detection_by_name_and_content():
    def detect(name, head):
        return input_formats.detect_format(name, head)[0]

    assert detect("dump.xml.bz2", b"") == "wikipedia"
    assert detect("part-1", b"  <mediawiki xmlns=...") == "wikipedia"
    assert detect("x.jsonl", b"") == "jsonl"
    assert detect("x.data", b'{"text": "a"}') == "jsonl"
    book = (FIXTURES / "book.txt").read_bytes()
    assert input_formats.detect_format("book.txt", book) == ("books", "a Project Gutenberg header")
    assert input_formats.detect_format("notes.txt", (FIXTURES / "notes.txt").read_bytes()) == (
        "text",
        "5 lines, not hard-wrapped: one paragraph per line",
    )
    wrapped = ("a line of a hard-wrapped novel that goes on\n" * 5 + "\n") * 4
    assert input_formats.detect_format("novel.txt", wrapped.encode()) == (
        "books",
        "hard-wrapped lines in blank-line blocks of 219 characters on average: paragraph-sized",
    )


def read_all(name: str, data: bytes, fmt: str = "auto", **kwargs) -> tuple[list, Counts]:
    counts = Counts()
    documents = list(
        input_formats.read_documents(name, io.BytesIO(data), fmt, inc=counts, **kwargs)
    )
    return documents, counts


def test_text_and_jsonl_readers():
    documents, counts = read_all("notes.txt", (FIXTURES / "notes.txt").read_bytes())
    assert [d.doc_id for d in documents] == ["0", "1", "2"] and documents[2].text == "Too short."
    assert counts["files_text"] == 1 and counts["documents_in"] == 3
    data = (FIXTURES / "records.jsonl").read_bytes()
    documents, counts = read_all("records.jsonl", data, on_error="skip")
    assert [d.doc_id for d in documents] == ["1", "3"] and counts["skipped_bad_record"] == 1
    with pytest.raises(input_streams.BadInput, match=r"line 2: bad JSON record \(missing 'text'\)"):
        read_all("records.jsonl", data)


def test_a_lone_surrogate_escape_in_jsonl_is_a_bad_record_where_it_is_decoded():
    # json.loads turns a lone \ud800 escape into a str that no UTF-8 encoder takes: refused here,
    # the pipeline's coders and spill files never see one, whatever the other inputs.
    words = " ".join(f"word{i}" for i in range(300))
    data = b'{"text": "fine"}\n{"text": "' + words.encode() + b' \\ud800 end"}\n'
    with pytest.raises(
        input_streams.BadInput,
        match=r"^line 2: bad JSON record \(\"text\" holds a lone surrogate escape \\ud800 at "
        r"character 2291, not a Unicode character\)$",
    ):
        read_all("s.jsonl", data)
    documents, counts = read_all("s.jsonl", data, on_error="skip")
    assert [d.text for d in documents] == ["fine"] and counts["skipped_bad_record"] == 1
    paired = b'{"text": "a pair \\ud83d\\ude00 is one character"}\n'
    assert read_all("p.jsonl", paired)[0][0].text == "a pair \U0001f600 is one character"


def test_bad_bytes_are_named_or_decoded_with_the_fallback():
    data = "Caf\u00e9 au lait.\n".encode("latin-1")
    with pytest.raises(
        input_streams.BadInput, match=r"line 1: not UTF-8 \(byte 0xe9 at column 4\)"
    ):
        read_all("latin.txt", data, "text")
    documents, counts = read_all("latin.txt", data, "text", fallback_encoding="latin-1")
    assert documents[0].text == "Café au lait." and counts["lines_fallback_encoding"] == 1


def test_empty_truncated_and_corrupt_compressed_files():
    with pytest.raises(input_streams.BadInput, match="empty file"):
        read_all("empty.txt", b"")
    with pytest.raises(input_streams.BadInput, match="empty file"):
        read_all("empty.xml.bz2", bz2.compress(b""))
    whole = bz2.compress((FIXTURES / "articles.xml").read_bytes())
    with pytest.raises(EOFError) as truncated:
        read_all("cut.xml.bz2", whole[: len(whole) // 2])
    assert "truncated bz2 archive" in input_streams.describe_error(truncated.value, "cut.xml.bz2")
    with pytest.raises(OSError) as corrupt:
        read_all("bad.xml.bz2", whole[:10] + b"\x00" * 64 + whole[74:])
    assert "corrupt bz2 archive" in input_streams.describe_error(corrupt.value, "bad.xml.bz2")


def test_malformed_xml_is_bad_input():
    xml = (FIXTURES / "articles.xml").read_bytes()
    with pytest.raises(input_streams.BadInput, match=r"malformed XML \(.*line \d+"):
        read_all("cut.xml", xml[: len(xml) // 2])
    with pytest.raises(input_streams.BadInput, match="not a MediaWiki export"):
        read_all("other.xml", b"<html><body>hi</body></html>")


def test_an_over_long_line_is_read_in_bounded_pieces_and_counted(monkeypatch):
    words = (FIXTURES / "book.txt").read_text().split()
    line = " ".join(words * (3 * input_streams.MAX_LINE_BYTES // len(" ".join(words)) + 1))
    documents, counts = read_all("one-line.txt", line.encode() + b"\n", "text")
    pieces = documents[0].text.split("\n")
    assert "".join(pieces) == line and counts["lines_cut"] == len(pieces) - 1 == 3
    assert max(len(piece.encode()) for piece in pieces) <= input_streams.MAX_LINE_BYTES
    # a character is never cut in two, even in a line without spaces
    documents, counts = read_all("x.txt", "é".encode() * input_streams.MAX_LINE_BYTES, "text")
    assert set(documents[0].text) == {"é", "\n"} and counts["lines_cut"] == 1
    # documents (and books) longer than the bound become several documents
    monkeypatch.setattr(input_formats, "MAX_DOCUMENT_CHARS", 1000)
    documents, counts = read_all(
        "long.txt", ("A sentence of the long document.\n" * 100).encode(), "text"
    )
    assert len(documents) == 4 and counts["documents_cut"] == 3 and counts["documents_in"] == 4
    book = (FIXTURES / "book.txt").read_bytes() * 3
    documents, counts = read_all("book.txt", book, "books")
    assert len(documents) == counts["documents_cut"] + 1 > 1
    assert all(
        document.text.split("\n")[0].strip() == "" for document in documents[1:]
    )  # cut at blank lines


@pytest.mark.parametrize(
    "paragraph, sentences",
    [
        (
            "The plan was approved. 12 The committee then met. 13 It adjourned.",
            ["The plan was approved.", "12 The committee then met.", "13 It adjourned."],
        ),
        (
            "God created the heaven and the earth. 3:2 And the earth was without form.",
            ["God created the heaven and the earth.", "3:2 And the earth was without form."],
        ),
        (
            "It was approved.12 The committee then met.",
            ["It was approved.12", "The committee then met."],
        ),
        (
            "This section applies. (3) The Secretary shall report. (a) Nothing else applies.",
            [
                "This section applies.",
                "(3) The Secretary shall report.",
                "(a) Nothing else applies.",
            ],
        ),
        (
            "The rules are as follows: 1. The first item applies. 2. The second item applies.",
            [
                "The rules are as follows:",
                "1. The first item applies.",
                "2. The second item applies.",
            ],
        ),
        # not numbering: a number after "No."/"vol."/"p.", or followed by a lower-case word
        (
            (
                "See No. 5 Squadron and vol. 2 The Return, p. 12 Table. He was born in 1990. 3 "
                "children survived."
            ),
            [
                "See No. 5 Squadron and vol. 2 The Return, p. 12 Table.",
                "He was born in 1990. 3 children survived.",
            ],
        ),
        (
            "Agassi was ranked world no. 91. He won his first title in 1987.",
            ["Agassi was ranked world no. 91.", "He won his first title in 1987."],
        ),
    ],
)
def test_sentences_are_split_before_inline_numbering(paragraph, sentences):
    assert text_cleaning.SentenceSplitter().split(paragraph) == sentences


def test_domain_text_with_numbered_clauses_is_read_as_documents_and_split(caplog):
    """Real paragraphs (Persuasion) as a domain corpus: 6 chapters separated by blank lines,
    hard-wrapped lines, an inline number after every sentence end."""
    import statistics

    from conftest import shared_path
    from segment_testdata import numbered_chapters, source_paragraphs

    book = shared_path("books", "austen-persuasion.txt").read_text(encoding="utf-8")
    corpus = numbered_chapters(book, chapters=6, paragraphs_per_chapter=25)
    with caplog.at_level("INFO", logger="pipelines.segment.input_formats"):
        documents, counts = read_all("domain.txt", corpus.encode())
    assert re.search(
        r"domain.txt: read as blank-line separated documents \(hard-wrapped lines in blank-line "
        r"blocks of "
        r"[\d,]+ characters on average in the first 64 KB: too long for a book's paragraphs\)",
        caplog.text,
    )
    assert len(documents) == counts["documents_in"] == 6 and counts["files_text"] == 1
    splitter = text_cleaning.SentenceSplitter()
    found = [
        s for d in documents for p in input_formats.raw_paragraphs(d) for s in splitter.split(p)
    ]
    numbered = sum(bool(re.match(r"\d+ [A-Z]", s)) for s in found)
    inserted = len(re.findall(r"[.!?] \d+ [A-Z]", " ".join(corpus.split())))
    assert numbered >= 0.95 * inserted
    source = source_paragraphs(book)[:150]
    source_median = statistics.median(len(s) for p in source for s in splitter.split(p))
    assert statistics.median(len(s) for s in found) <= 1.1 * source_median  # 549 characters before
    assert not any(
        s.endswith((" the", " and", " of")) for s in found
    )  # no sentence ends at a line end


@pytest.mark.parametrize(
    "line, heading",
    [
        ("Genesis 1", True),
        ("Chapter IV", True),
        ("§ 12", True),
        ("1 Kings 3", True),
        ("Song of Solomon 2", True),
        ("CHAPTER XII.", True),
        ("Psalm 119:", True),
        ("In the year 1066", False),
        ("Then I did", False),
        ("12 And he said", False),
        ("and the earth. 2", False),
        ("chapter 3", False),
        ("The End", False),
    ],
)
def test_chapter_headings(line, heading):
    assert books.is_chapter_heading(line) is heading


def test_a_file_of_short_chapters_is_one_document_per_chapter(caplog):
    """Real paragraphs (Persuasion) as scripture comes: a title, then 40 chapters `Genesis N`, each
    a heading alone on its line before blank-line separated, hard-wrapped paragraphs of numbered
    verses."""
    from conftest import shared_path
    from segment_testdata import headed_chapters

    book = shared_path("books", "austen-persuasion.txt").read_text(encoding="utf-8")
    corpus = headed_chapters(book, chapters=40, paragraphs_per_chapter=3)
    with caplog.at_level("INFO", logger="pipelines.segment.input_formats"):
        documents, counts = read_all("scripture.txt", corpus.encode())
    assert re.search(
        r"scripture.txt: read as one document per chapter \(\d+ chapter headings "
        r"alone before a block in the first 64 KB \(Genesis 1, Genesis 2, …\): "
        r"short chapters\)",
        caplog.text,
    )
    assert len(documents) == counts["documents_in"] == 1 + 40 and counts["files_chapters"] == 1
    assert "documents_cut" not in counts and not any("Genesis" in d.text for d in documents)
    assert input_formats.raw_paragraphs(documents[0]) == []  # the title alone: a heading, dropped
    chapter_two = input_formats.raw_paragraphs(documents[2])
    assert chapter_two[0].startswith("1 Then followed the history and rise of the ancient and")
    assert len(chapter_two) == 3 and "\n" not in chapter_two[0]  # hard-wrapped lines re-joined
    as_book, _ = read_all("scripture.txt", corpus.encode(), "books")
    assert len(as_book) == 1  # --format books keeps the whole file one document


def test_a_danda_ends_a_sentence_and_a_verse_number_stays_with_its_verse():
    splitter = text_cleaning.SentenceSplitter()
    paragraph = (
        "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है। उन्हें बुद्धि "
        "और अन्तरात्मा की देन प्राप्त है॥ धर्मक्षेत्रे कुरुक्षेत्रे ॥ १ ॥ सञ्जय उवाच"
    )
    assert splitter.split(paragraph) == [
        "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है।",
        "उन्हें बुद्धि और अन्तरात्मा की देन प्राप्त है॥",
        "धर्मक्षेत्रे कुरुक्षेत्रे ॥ १ ॥",
        "सञ्जय उवाच",
    ]


def test_burmese_ethiopic_and_armenian_full_stops_end_sentences():
    splitter = text_cleaning.SentenceSplitter()
    for first, second in (
        ("ဒါက ပထမ ဝါကျ ဖြစ်သည်။", "ဒါက ဒုတိယ ဝါကျ ဖြစ်သည်။"),
        ("ይህ የመጀመሪያው ዓረፍተ ነገር ነው።", "ይህ ሁለተኛው ነው።"),
        ("Սա առաջին նախադասությունն է։", "Սա երկրորդն է։"),
    ):
        assert splitter.split(f"{first} {second}") == [first, second]


def test_a_cjk_sentence_before_a_lower_case_latin_word_is_not_rejoined():
    splitter = text_cleaning.SentenceSplitter()
    assert splitter.split("パッケージが必要です。debian パッケージを作ります。") == [
        "パッケージが必要です。",
        "debian パッケージを作ります。",
    ]
    assert splitter.split("使用方法如下！ls 命令列出文件。") == [
        "使用方法如下！",
        "ls 命令列出文件。",
    ]
    # BlingFire's cut inside a quotation is mended with the paragraph's spacing
    assert splitter.split("「はい。」と彼は言った。") == ["「はい。」と彼は言った。"]
    assert splitter.split("「はい。」 と彼は言った。") == ["「はい。」 と彼は言った。"]
    assert text_cleaning.repair_splits(["He said “What!”", "said Mrs.", "Weston."]) == [
        "He said “What!” said Mrs. Weston."
    ]


def test_document_length_counts_dense_scripts_as_latin_characters():
    length = text_cleaning.latin_equivalent_length
    assert length("All human beings are born free.") == 31
    assert length("人人生而自由。") == 6 * 4 + 1
    assert length("모든 인간은") == 5 * 2.7 + 1
    assert length("データです。") == pytest.approx(5 * 1.3 + 1)
    # a Chinese document and its English twin both pass 200 (the UDHR's article 1)
    chinese = (
        "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
    )
    english = (
        "All human beings are born free and equal in dignity and rights. They are endowed with "
        "reason and conscience and should act towards one another in a spirit of brotherhood."
    )
    assert len(chinese) < 50 and length(chinese) > 150 and len(english) == 170
