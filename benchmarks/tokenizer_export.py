"""How often the exported tokenizers give our ids, on every line of the shared corpora.

    python -m benchmarks.tokenizer_export [--vocab-size 16000]

For the reference vocabulary (reference/sp16k.model) and one `pipelines.vocab` trains here on the
books and the SQuAD contexts: the Hugging Face export (`AutoTokenizer.from_pretrained` on what
`write_hf_tokenizer` writes) as a fast tokenizer, transformers' own `AlbertTokenizer` on the bare
`spiece.model` for comparison, and the SentencePiece model with ALBERT's preprocessing compiled in
(what the keras-hub preset ships). Prints one JSON line: lines equal / lines, by source, and the
differing lines' counts of equal-score ties.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import sentencepiece as spm
import transformers

from albert.tokenization import AlbertTokenizer
from albert.tokenizer_export import sentencepiece_with_preprocessing, write_hf_tokenizer
from pipelines.vocab import stage as vocab
from tests.tokenizer_corpora import book_lines, corpus_lines, squad_lines

SHARED = Path(os.environ.get("ALBERT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def tie(ours: AlbertTokenizer, ids: list[int], other: list[int]) -> bool:
    same_text = "".join(map(ours.id_to_piece, ids)) == "".join(map(ours.id_to_piece, other))
    return (
        same_text
        and abs(sum(map(ours.sp.get_score, ids)) - sum(map(ours.sp.get_score, other))) < 1e-4
    )


def compare(ours: AlbertTokenizer, lines: list[tuple[str, str]], work: Path) -> dict:
    texts = [text for _, text in lines]
    expected = [ours.encode(text) for text in texts]
    write_hf_tokenizer(ours, str(work / "hf"))
    bare = work / "bare"
    bare.mkdir()
    shutil.copy(ours.model_file, bare / "spiece.model")
    candidates = {
        "hf_export": transformers.AutoTokenizer.from_pretrained(str(work / "hf"))(
            texts, add_special_tokens=False
        )["input_ids"],
        "transformers_albert_tokenizer": transformers.AlbertTokenizer.from_pretrained(str(bare))(
            texts, add_special_tokens=False
        )["input_ids"],
        "sentencepiece_with_preprocessing": spm.SentencePieceProcessor(
            model_proto=sentencepiece_with_preprocessing(ours)
        ).encode(texts),
    }
    result = {}
    for name, ids in candidates.items():
        by_source: dict[str, list[int]] = {}
        ties = 0
        for (source, _), got, want in zip(lines, ids, expected):
            counts = by_source.setdefault(source, [0, 0])
            counts[0] += got == want
            counts[1] += 1
            ties += got != want and tie(ours, want, got)
        equal = sum(c[0] for c in by_source.values())
        result[name] = {
            "equal": equal,
            "lines": len(lines),
            "rate": round(equal / len(lines), 6),
            "equal_score_ties": ties,
            "by_source": by_source,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=16000)
    args = parser.parse_args()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    lines = list(corpus_lines(SHARED))
    report = {"lines": len(lines)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "corpus").mkdir()
        with open(work / "corpus" / "part-00000-of-00001.txt", "w", encoding="utf-8") as handle:
            handle.writelines(line.strip() + "\n" for _, line in book_lines(SHARED))
            for source, text in squad_lines(SHARED):
                if source == "squad_context":
                    handle.write(text.strip() + "\n\n")
        vocab.run(
            vocab.VocabConfig(
                input=str(work / "corpus"),
                output=str(work / "vocab"),
                vocab_size=args.vocab_size,
                num_threads=1,
            )
        )
        for name, model_file in (
            ("reference_sp16k", str(SHARED / "reference" / "sp16k.model")),
            (f"trained_{args.vocab_size}", str(work / "vocab" / "spiece.model")),
        ):
            (work / name).mkdir()
            report[name] = compare(AlbertTokenizer(model_file), lines, work / name)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
