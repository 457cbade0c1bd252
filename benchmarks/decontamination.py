"""Recall, false flags and cost of `albert decontaminate`, on real books with SQuAD dev passages
planted in them.

The corpus: the 13 Project Gutenberg books of ../shared/data/books, each with `--per-book` SQuAD
v1.1 dev paragraphs (60+ words, spread over the articles) planted as paragraphs of their own,
lightly edited (all lower or upper case, commas dropped or doubled, one word near the middle
changed), segmented by `albert segment`. Prints one JSON line per figure:
- `planted`: the planted passages' questions found / planted, and the questions flagged that were
  not planted (false flags), against SQuAD dev, with --remove (sentences removed).
- `clean`: the same books without plants (false flags: questions flagged), and the cleaned corpus
  (--remove's output) checked again.
- `wikipedia`: the shared Wikipedia sample, which holds SQuAD dev's articles' real text in a few
  places: what is flagged there (the real overlap, for the record).
- `cost`: CPU seconds per MB of corpus text: the pure scan (`document_overlaps` per document,
  no Beam) and the whole stage in this process (Beam start-up and the SQuAD index included), and
  the index's build time and size.
Each line carries the CPU model and the load average. Run from the repository root:
`python -m benchmarks.decontamination`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
from pathlib import Path

from benchmarks.helpers.machine import cpu_model
from pipelines.common.segmented_corpus import input_files, read_documents
from pipelines.decontaminate import contamination
from pipelines.decontaminate import stage as decontaminate
from pipelines.decontaminate.eval_sets import eval_splits, read_examples
from pipelines.segment import stage as segment
from tests.decontamination_testdata import planted_books, squad_passages

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SQUAD = DATA / "squad" / "dev-v1.1.json"
WIKIPEDIA = (
    DATA / "wikipedia" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def emit(name: str, figures: dict) -> None:
    line = {"benchmark": f"decontamination.{name}", **figures}
    line.update(cpu=cpu_model(), load=round(os.getloadavg()[0], 2))
    print(json.dumps(line), flush=True)


def segmented(inputs: list[str], output: Path) -> str:
    config = segment.SegmentConfig(
        input=inputs, output=str(output), num_shards=4, fallback_encoding="latin-1"
    )
    segment.run(config)
    return str(output)


def flagged(corpus: str, output: Path, remove: bool = False) -> tuple[dict, dict, float]:
    """(SQuAD's entry of contamination.json, the corpus figures, CPU seconds of the stage)."""
    start = cpu_seconds()
    config = decontaminate.DecontaminateConfig(
        corpus=corpus, eval=[str(SQUAD)], output=str(output), remove=remove
    )
    report = decontaminate.run(config)
    return report["sets"][0], report["corpus"], cpu_seconds() - start


def corpus_mb(corpus: str) -> float:
    return sum(os.path.getsize(path) for path in input_files(corpus)) / 1e6


def scan_cost(corpus: str) -> dict:
    """The index's build time and size, and the pure scan's CPU seconds per MB."""
    start = cpu_seconds()
    index, _ = squad_index()
    built = cpu_seconds() - start
    start = cpu_seconds()
    for path in input_files(corpus):
        for key, lines in read_documents(path):
            contamination.document_overlaps(key.decode(), lines, index, 13)
    scan = cpu_seconds() - start
    mb = corpus_mb(corpus)
    return {
        "index_cpu_s": round(built, 2),
        "index_ngrams": len(index[0]),
        "corpus_mb": round(mb, 2),
        "scan_cpu_s_per_mb": round(scan / mb, 3),
    }


def squad_index() -> tuple[tuple, list[str]]:
    """SQuAD dev's n-gram index and example ids (the stage's own pure functions)."""
    (split,) = eval_splits(str(SQUAD))
    ngrams, shared, _, ids = contamination.split_index(read_examples(split), 0, 13)
    return contamination.merge_index([(ngrams, shared)]), ids


def also_overlapping(contexts: list[str]) -> set[str]:
    """The questions of every SQuAD dev paragraph that shares a 13-gram with one of `contexts`
    (SQuAD's paragraphs of one article sometimes repeat a sentence): flagging them is right."""
    index, ids = squad_index()
    return {
        ids[contamination.position_of(overlap.example)]
        for context in contexts
        for overlap in contamination.document_overlaps("", [context], index, 13)[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-book", type=int, default=3, help="passages planted in each book")
    args = parser.parse_args()
    books = sorted((DATA / "books").glob("*.txt"))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "raw").mkdir()
        _, questions = planted_books(books, SQUAD, args.per_book, root / "raw")
        planted_corpus = segmented([str(root / "raw")], root / "planted")
        squad, corpus, stage_cpu = flagged(planted_corpus, root / "planted-out", remove=True)
        found = {overlap["example"] for overlap in squad["overlaps"]}
        contexts = [context for context, _ in squad_passages(SQUAD, args.per_book * len(books))]
        shared = also_overlapping(contexts) - questions
        emit(
            "planted",
            {
                "passages": args.per_book * len(books),
                "questions_found": len(found & questions),
                "questions_planted": len(questions),
                "other_questions_flagged": len(found - questions),
                "of_which_share_text_with_a_planted_passage": len((found - questions) & shared),
                "false_flags": len(found - questions - shared),
                "shortest_overlap_words": min(o["words"] for o in squad["overlaps"]),
                "sentences_removed": corpus["removed"]["sentences_removed"],
            },
        )
        clean = segmented([str(book) for book in books], root / "clean")
        clean_squad, _, _ = flagged(clean, root / "clean-out")
        cleaned_squad, _, _ = flagged(str(root / "planted-out"), root / "cleaned-out")
        emit(
            "clean",
            {
                "books_false_flags": clean_squad["contaminated"],
                "cleaned_corpus_flags": cleaned_squad["contaminated"],
                "examples": clean_squad["examples"],
            },
        )
        wiki = segmented([str(WIKIPEDIA)], root / "wiki")
        wiki_squad, wiki_corpus, _ = flagged(wiki, root / "wiki-out")
        passages = {(o["document"], tuple(o["lines"])) for o in wiki_squad["overlaps"]}
        emit(
            "wikipedia",
            {
                "documents": wiki_corpus["documents"],
                "documents_flagged": wiki_corpus["documents_contaminated"],
                "questions_flagged": wiki_squad["contaminated"],
                "passages_flagged": len(passages),
                "longest_overlap_words": max(
                    (o["words"] for o in wiki_squad["overlaps"]), default=0
                ),
            },
        )
        mb = corpus_mb(planted_corpus)
        emit("cost", {**scan_cost(planted_corpus), "stage_cpu_s_per_mb": round(stage_cpu / mb, 3)})


if __name__ == "__main__":
    main()
