"""Pure functions of the segmentation stage: normalisation, sentences, books, input formats."""

from __future__ import annotations

import bz2
import io
from pathlib import Path

import pytest

from pipelines import books, input_formats, text_cleaning

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
        "Mr. Smith went to Washington. He said hello! Then he walked all the way along the river to the sea.",
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
    assert paragraphs[0].startswith("The ship left the harbour early in the morning, when the fog still lay")
    assert "at the wheel--silent, watchful--and said" in paragraphs[0]
    assert len(paragraphs) == 3
    text = "\n".join(paragraphs)
    assert "Gutenberg" not in text and "CHAPTER" not in text and "Chapter 2" not in text


def test_format_detection_by_name_and_content():
    assert input_formats.detect_format("dump.xml.bz2", b"") == "wikipedia"
    assert input_formats.detect_format("part-1", b"  <mediawiki xmlns=...") == "wikipedia"
    assert input_formats.detect_format("x.jsonl", b"") == "jsonl"
    assert input_formats.detect_format("x.data", b'{"text": "a"}') == "jsonl"
    book = (FIXTURES / "book.txt").read_bytes()
    assert input_formats.detect_format("book.txt", book) == "books"
    assert input_formats.detect_format("notes.txt", (FIXTURES / "notes.txt").read_bytes()) == "text"
    wrapped = ("a line of a hard-wrapped novel that goes on\n" * 5 + "\n") * 4
    assert input_formats.detect_format("novel.txt", wrapped.encode()) == "books"


def read_all(name: str, data: bytes, fmt: str = "auto", **kwargs) -> tuple[list, Counts]:
    counts = Counts()
    documents = list(input_formats.read_documents(name, io.BytesIO(data), fmt, inc=counts, **kwargs))
    return documents, counts


def test_text_and_jsonl_readers():
    documents, counts = read_all("notes.txt", (FIXTURES / "notes.txt").read_bytes())
    assert [d.doc_id for d in documents] == ["0", "1", "2"] and documents[2].text == "Too short."
    assert counts["files_text"] == 1 and counts["documents_in"] == 3
    data = (FIXTURES / "records.jsonl").read_bytes()
    documents, counts = read_all("records.jsonl", data, on_error="skip")
    assert [d.doc_id for d in documents] == ["1", "3"] and counts["skipped_bad_record"] == 1
    with pytest.raises(input_formats.BadInput, match=r"line 2: bad JSON record \(missing 'text'\)"):
        read_all("records.jsonl", data)


def test_bad_bytes_are_named_or_decoded_with_the_fallback():
    data = "Caf\u00e9 au lait.\n".encode("latin-1")
    with pytest.raises(input_formats.BadInput, match=r"line 1: not UTF-8 \(byte 0xe9 at column 4\)"):
        read_all("latin.txt", data, "text")
    documents, counts = read_all("latin.txt", data, "text", fallback_encoding="latin-1")
    assert documents[0].text == "Café au lait." and counts["lines_fallback_encoding"] == 1


def test_empty_truncated_and_corrupt_compressed_files():
    with pytest.raises(input_formats.BadInput, match="empty file"):
        read_all("empty.txt", b"")
    with pytest.raises(input_formats.BadInput, match="empty file"):
        read_all("empty.xml.bz2", bz2.compress(b""))
    whole = bz2.compress((FIXTURES / "articles.xml").read_bytes())
    with pytest.raises(EOFError) as truncated:
        read_all("cut.xml.bz2", whole[: len(whole) // 2])
    assert "truncated bz2 archive" in input_formats.describe_error(truncated.value, "cut.xml.bz2")
    with pytest.raises(OSError) as corrupt:
        read_all("bad.xml.bz2", whole[:10] + b"\x00" * 64 + whole[74:])
    assert "corrupt bz2 archive" in input_formats.describe_error(corrupt.value, "bad.xml.bz2")


def test_malformed_xml_is_bad_input():
    xml = (FIXTURES / "articles.xml").read_bytes()
    with pytest.raises(input_formats.BadInput, match=r"malformed XML \(.*line \d+"):
        read_all("cut.xml", xml[: len(xml) // 2])
    with pytest.raises(input_formats.BadInput, match="not a MediaWiki export"):
        read_all("other.xml", b"<html><body>hi</body></html>")
