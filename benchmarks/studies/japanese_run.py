"""A Japanese `albert run --language ja`, checked end to end: one JSON line on a finished run
directory.

- `corpus_voiced`: the share of the segmented corpus's sentences holding a voiced kana (a kana with
  dakuten or handakuten: が, デ, ぱ ...); `instances_voiced`: the share of the training instances
  (`tfrecords/data-*.tfrecord`, decoded with the vocabulary) holding one. An instance holds several
  sentences, so it holds voiced kana at least as often as a sentence does where nothing is lost;
  a vocabulary that strips accents gives none.
- `pieces_never_in_training`: the vocabulary's pieces (past the special and user-defined ones)
  that no training instance holds.
- `export_pieces`, `export_decodes`: the Hugging Face export's (`pretrain/export/hf/tokenizer.json`)
  pieces of SAMPLE and whether they decode to it.

Usage: python -m benchmarks.studies.japanese_run RUN_DIR (a run of e.g.
`albert run --language ja --input ja.jsonl --segment '{"format": "jsonl"}' ...`; docs/languages.md
has the command and corpus of the recorded figures).
"""

from __future__ import annotations

import argparse
import json
import os
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer

from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from albert.tokenization import AlbertTokenizer
from benchmarks.helpers.machine import cpu_model

SAMPLE = "データベースが必要です。"
FIRST_TEXT_PIECE = 13  # past <pad> <unk> [CLS] [SEP] [MASK] and the 8 user-defined symbols


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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    run = parser.parse_args(argv).run_dir
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
    exported = Tokenizer.from_file(str(run / "pretrain" / "export" / "hf" / "tokenizer.json"))
    encoding = exported.encode(SAMPLE, add_special_tokens=False)
    line = {
        "study": "japanese_run",
        "preprocessing": tokenizer.preprocessing.describe(),
        "language": tokenizer.preprocessing.language,
        "sentences": len(sentences),
        "corpus_voiced": round(sum(map(voiced, sentences)) / len(sentences), 4),
        "instances": instances,
        "instances_voiced": round(with_voiced / instances, 4),
        "pieces_never_in_training": len(set(range(FIRST_TEXT_PIECE, tokenizer.vocab_size)) - seen),
        "vocab_size": tokenizer.vocab_size,
        "export_pieces": encoding.tokens,
        "export_decodes": exported.decode(encoding.ids) == SAMPLE,
        "cpu": cpu_model(),
        "load": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    main()
