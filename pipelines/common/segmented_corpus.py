"""Reading the segmented corpus format: one sentence a line, a blank line between documents.

What pipelines.segment writes and pipelines.tfrecords and pipelines.select read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from albert.errors import StageError
from albert.fs import expand_files, open_file

CORPUS_FILES = ("*.txt", "*.txt.gz", "*.txt.bz2")


def input_files(pattern: str) -> list[str]:
    """The corpus files: every *.txt[.gz|.bz2] of a directory, or a file or glob."""
    return expand_files(pattern, CORPUS_FILES)


def read_documents(path: str) -> Iterator[tuple[bytes, list[str]]]:
    """(key, lines) per document of a segmented file; the key is '<file name>:<document index>'.

    Text that is not UTF-8 is a StageError naming the file and the document."""
    name = os.path.basename(path)
    lines: list[str] = []
    index = 0
    try:
        with open_file(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    lines.append(line)
                elif lines:
                    yield f"{name}:{index}".encode(), lines
                    lines, index = [], index + 1
    except UnicodeDecodeError as error:
        raise StageError(f"{path}: not UTF-8 text ({error.reason} in document {index})") from None
    if lines:
        yield f"{name}:{index}".encode(), lines
