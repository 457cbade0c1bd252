"""`albert predict`'s reading of its input in spans (pipelines/predict/rows.py): a file cut at
every Nth row's start and read span by span gives the rows, their positions and the counts that
reading it whole gives."""

from __future__ import annotations

import pytest

from pipelines.predict.rows import Columns, Span, blocks, file_spans, read_rows, spans

pytestmark = pytest.mark.backend_free
CSV = (
    b'\xef\xbb\xbftext,label\n"two\nlines",1\n\xff bad,0\nplain,1\n"a ""quoted""\n,\none",0\n'
    b"short\nlast,1\n"
)
"""A BOM, quoted newlines, a line that is not UTF-8, a row with too few fields."""
TEXT = Columns(roles={"text": ()}, counts={"text": 1})


def test_spans_cut_a_file_at_every_nth_row_start():
    """Each span ends where the next begins; the first begins at the file's start."""
    starts = [Span(10 * i + 5, None, i + 2, i) for i in range(5)]
    assert list(spans(starts, 2)) == [
        Span(0, 25, 1, 0),
        Span(25, 45, 4, 2),
        Span(45, None, 6, 4),
    ]
    assert list(spans([], 2)) == [Span()]


def counter(counts: dict):
    def inc(name, amount):
        counts[name] = counts.get(name, 0) + amount

    return inc


@pytest.mark.parametrize(
    "name, fmt, data",
    [
        (
            "rows.csv",
            "csv",
            CSV,
        ),
        ("rows.txt", "text", b"one\n\ntwo\n\xff\nthree\n\n\nfour\nfive"),
        (
            "rows.jsonl",
            "jsonl",
            b'{"text": "a"}\n\n[1]\n{"text": "b"}\n{"text": 2}\n{"text": "c"}\n{"text": "d"}',
        ),
    ],
)
def test_a_file_read_span_by_span_gives_its_blocks_and_counts(tmp_path, name, fmt, data):
    """Spans of 2 rows read in blocks of 2: the blocks and counts of the file read whole."""
    path = tmp_path / name
    path.write_bytes(data)
    whole, by_span = {}, {}
    rows = list(read_rows(str(path), 3, fmt, TEXT, "skip", counter(whole)))
    cut = list(file_spans(str(path), 3, fmt, TEXT, "skip", 2))
    spread = [
        block
        for span in cut
        for block in blocks(read_rows(str(path), 3, fmt, TEXT, "skip", counter(by_span), span), 2)
    ]
    assert spread == list(blocks(rows, 2)) and by_span == whole and len(cut) > 1
    assert rows[0].position == (3, 0) and whole["rows"] == len(rows) > 3
