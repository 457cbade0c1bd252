"""How much of each evaluation set a segmented corpus holds, and optionally the corpus without it.

Reads segment's output (`CORPUS/*.txt`) and evaluation sets (`--eval`, repeated: GLUE task
directories, SQuAD JSON, RACE directories, text or JSONL; see pipelines.decontaminate.eval_sets) and
writes
`OUTPUT/contamination.json`: per set and split, its examples, those long enough to hold an n-gram,
the contaminated ones (sharing a normalised word n-gram, default 13 words, with the corpus) and
each one's overlaps (example id, corpus document, its sentence lines, the overlap's length in
words). With `--remove` it also writes the corpus without the overlapping sentence lines in
segment's layout (the same `part-*.txt` files, documents in the same order; a document left empty
is dropped) and a `stats.json` counting what it removed; without it the corpus is only read.

Pipeline: read each split and index its n-grams -> merge the index (one dict: n-gram hash -> text
ids, a side input every worker holds; SQuAD v1.1 dev is about 0.25 M n-grams) -> scan the corpus
one file per element, streaming its documents -> contamination.json (and stats.json) written by
the pipeline. The same inputs give byte-identical outputs for any runner and number of workers.
"""

from __future__ import annotations

import json
import posixpath

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from pydantic import Field

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import exists, filesystem, join, open_file
from albert.stage import stage_main
from pipelines.common.runner import CountingDoFn, WriteSummary, counted, run_stage
from pipelines.common.segmented_corpus import input_files, read_documents
from pipelines.decontaminate import contamination
from pipelines.decontaminate.eval_sets import EvalSplit, eval_splits, read_examples

NAMESPACE = "decontaminate"
REPORT_FILE = "contamination.json"
STATS_FILE = "stats.json"
SEGMENT_FIELDS = ("documents_out", "sentences_out")
"""Figures every segmented corpus's stats.json holds (segment's and decontaminate's with --remove),
beside its `shards` list."""


class DecontaminateConfig(StageConfig):
    """The corpus, the evaluation sets, the n-gram length and whether to remove overlaps."""

    corpus: str = Field(description="segmented corpus: segment's output directory, or a glob")
    eval: list[str] = Field(
        min_length=1,
        description="evaluation set: GLUE task directory, SQuAD .json, RACE directory, .txt or "
        ".jsonl (repeat the flag)",
    )
    output: str = Field(description="output directory for contamination.json (and the corpus)")
    remove: bool = Field(
        False, description="also write the corpus without the overlapping sentence lines"
    )
    ngram: int = Field(
        contamination.DEFAULT_NGRAM, ge=3, description="words in a shared n-gram (GPT-3: 13)"
    )
    strict: bool = Field(
        False,
        description="a directory inside an --eval directory that is not read (an unknown name, a "
        "task without dev or test tables) is an error, not a warning",
    )


def resolve_splits(paths: list[str], strict: bool = False) -> list[EvalSplit]:
    """Every split the paths name, once each (a file two paths name is reported once), each read
    once here so that a bad or empty evaluation set fails before the output is touched."""
    splits: dict[str, EvalSplit] = {}
    for path in paths:
        for split in eval_splits(path, strict):
            if split.path in splits:
                continue
            if not sum(1 for _ in read_examples(split)):
                raise StageError(f"{split.path}: no examples in this evaluation set")
            splits[split.path] = split
    return list(splits.values())


def corpus_files(corpus: str) -> list[str]:
    """The corpus's shard files; StageError if there are none or two share a name (`--remove`
    writes each under its own name)."""
    files = input_files(corpus)
    if not files:
        raise StageError(f"{corpus}: no segmented corpus files (*.txt, *.txt.gz, *.txt.bz2)")
    names = [output_name(path) for path in files]
    if len(set(names)) != len(names):
        raise StageError(f"{corpus}: two corpus files share a name; give one directory")
    return files


def output_name(path: str) -> str:
    """The name of a corpus file's cleaned copy: its own, without a compression suffix."""
    name = posixpath.basename(path)
    return name.rsplit(".", 1)[0] if name.endswith((".gz", ".bz2")) else name


def corpus_stats(corpus: str) -> dict:
    """The stats.json of a corpus directory (segment's, or decontaminate's with --remove), {} for a
    file or glob; StageError where a directory is not a segment output: no stats.json, or one that
    is not UTF-8 JSON holding segment's figures."""
    if any(c in corpus for c in "*?[") or not _is_dir(corpus):
        return {}
    path = join(corpus, STATS_FILE)
    if not exists(path):
        raise StageError(f"{corpus}: not a segment output (no {STATS_FILE}); give segment's output")
    with open_file(path, "rb") as handle:
        data = handle.read()
    try:
        stats = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise StageError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise StageError(f"{path}: not JSON: {error.msg}") from None
    if not isinstance(stats, dict):
        kind = "a JSON array" if isinstance(stats, list) else f"a JSON {type(stats).__name__}"
        raise StageError(
            f"{path}: not a segment output ({kind}, not segment's fields {SEGMENT_FIELDS})"
        )
    missing = [name for name in SEGMENT_FIELDS if not isinstance(stats.get(name), int)]
    if missing or not isinstance(stats.get("shards"), list):
        missing += [] if isinstance(stats.get("shards"), list) else ["shards"]
        raise StageError(f"{path}: not a segment output (no {', '.join(missing)})")
    return stats


def _is_dir(path: str) -> bool:
    fs, local = filesystem(path)
    return fs.isdir(local)


def index_split(element: tuple[int, EvalSplit], n: int) -> tuple:
    """(split index, split) -> (split index, n-grams, shared texts, examples, with an n-gram,
    ids)."""
    index, split = element
    ngrams, shared, checkable, ids = contamination.split_index(read_examples(split), index, n)
    return index, ngrams, shared, len(ids), checkable, ids


class ScanFile(CountingDoFn):
    """corpus file -> its overlaps (plain tuples), writing its cleaned copy when `output_dir`."""

    def __init__(self, n: int, output_dir: str | None):
        super().__init__(NAMESPACE)
        self.n, self.output_dir = n, output_dir

    def process(self, path: str, index):
        writer = (
            FileSystems.create(join(self.output_dir, output_name(path)))
            if self.output_dir
            else None
        )
        try:
            for key, lines in read_documents(path):
                overlaps, touched = contamination.document_overlaps(
                    key.decode(), lines, index, self.n
                )
                self.inc("documents", 1)
                self.inc("documents_contaminated", int(bool(overlaps)))
                for o in overlaps:
                    yield o.example, o.document, o.first_line, o.last_line, o.words
                if writer is not None:
                    self._write(writer, lines, touched)
        finally:
            if writer is not None:
                writer.close()

    def _write(self, writer, lines: list[str], touched: set[int]) -> None:
        kept = contamination.remaining_lines(lines, touched)
        self.inc("sentences_removed", len(lines) - len(kept))
        self.inc("characters_removed", sum(len(lines[i].rstrip("\n")) for i in touched))
        if not kept:
            self.inc("documents_removed", 1)
            return
        self.inc("documents_out", 1)
        self.inc("sentences_out", len(kept))
        self.inc("characters_out", sum(len(line.rstrip("\n")) for line in kept))
        writer.write(("".join(kept) + "\n").encode("utf-8"))


def write_outputs(
    counts: dict,
    read: list,
    overlaps: list,
    splits: list[EvalSplit],
    n: int,
    output_dir: str,
    files: list[str],
    cleaned: dict | None,
) -> None:
    """contamination.json; with `cleaned` (the corpus's own stats.json, {} if none), the cleaned
    corpus's stats.json: what it keeps and removed, the corpus's own statistics under "segment"."""
    report = contamination.contamination_report(
        splits, read, contamination.overlaps_from(overlaps), n
    )
    corpus = {name: counts.get(name, 0) for name in ("documents", "documents_contaminated")}
    if cleaned is not None:
        removed = ("documents_removed", "sentences_removed", "characters_removed")
        corpus["removed"] = {name: counts.get(name, 0) for name in removed}
        kept = ("documents_out", "sentences_out", "characters_out")
        stats = {
            **{name: counts.get(name, 0) for name in kept},
            "shards": sorted(output_name(path) for path in files),
            "decontamination": {**corpus["removed"], "report": REPORT_FILE},
            "segment": cleaned,
        }
        _write_json(join(output_dir, STATS_FILE), stats)
    _write_json(join(output_dir, REPORT_FILE), {**report, "corpus": corpus})


def _write_json(path: str, value: dict) -> None:
    with FileSystems.create(path) as handle:
        handle.write((json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def build_pipeline(
    pipeline: beam.Pipeline,
    files: list[str],
    splits: list[EvalSplit],
    config: DecontaminateConfig,
    output_dir: str,
    cleaned: dict | None,
) -> None:
    counts: list = []
    read = (
        pipeline
        | "Splits" >> beam.Create(list(enumerate(splits)))
        | "IndexSplits" >> beam.Map(index_split, config.ngram)
    )  # split index, n-grams, shared texts, examples, with an n-gram, ids
    index = (
        read
        | "IndexParts" >> beam.Map(lambda part: (part[1], part[2]))
        | "AllParts" >> beam.combiners.ToList()
        | "MergeIndex" >> beam.Map(contamination.merge_index)
    )  # (n-gram hash -> text ids, shared text id -> example numbers)
    scanned = pipeline | "Files" >> beam.Create(files)  # spread over the workers by its reshuffle
    writer = ScanFile(config.ngram, output_dir if config.remove else None)
    overlaps = counted(scanned, "Scan", writer, counts, beam.pvalue.AsSingleton(index))
    _ = pipeline | "WriteReport" >> WriteSummary(
        write_outputs,
        counts,
        read=beam.pvalue.AsList(read | "SplitFigures" >> beam.Map(lambda p: (p[0], *p[3:]))),
        overlaps=beam.pvalue.AsList(overlaps),
        splits=splits,
        n=config.ngram,
        output_dir=output_dir,
        files=files,
        cleaned=cleaned,
    )


def run(config: DecontaminateConfig, beam_args: list[str] | None = None) -> dict:
    """Write contamination.json (and with `remove` the cleaned corpus) into `config.output`;
    returns the report. A missing, empty or unknown evaluation set or an empty corpus is a
    StageError naming it, raised before the output is touched."""
    stats = corpus_stats(config.corpus)
    files = corpus_files(config.corpus)
    splits = resolve_splits(config.eval, config.strict)
    cleaned = stats if config.remove else None
    return run_stage(
        config.output,
        beam_args,
        lambda pipeline, output_dir: build_pipeline(
            pipeline, files, splits, config, output_dir, cleaned
        ),
        REPORT_FILE,
    )


def main(argv=None, prog="python -m pipelines.decontaminate") -> int:
    return stage_main(DecontaminateConfig, run, argv, prog=prog, description=__doc__, beam=True)
