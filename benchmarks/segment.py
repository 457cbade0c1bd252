"""Speed and memory of pipelines.segment on the shared Wikipedia sample and the books.

Prints one JSON line with:
- `per_core`: the per-document work without Beam (decompress and stream the XML, wikitext -> prose,
  normalise, split sentences) in one process: MB of input text per CPU second (the figure the
  1 MB/s/core target is about) and the process's peak RSS.
- `beam`: the whole Beam job (`segment.run`) in a fresh process for each corpus with 1 and 2
  workers (`--direct_running_mode=multi_processing`): wall seconds, MB/s per worker
  (input MB / wall / workers), MB per CPU second of the job's processes (Beam start-up included)
  and peak RSS of the largest process.
- `wikiextractor`: where WikiExtractor 3.1 is importable (e.g. PYTHONPATH=/path/to/wikiextractor),
  its documents, characters, speed and markup residues next to ours on the same pages.
- `scale`: the Wikipedia sample repeated 1x and 4x in one dump: peak RSS of the streaming work
  (flat) and of the local Beam job (whose in-process runner keeps shuffled data in memory).
The machine is shared, so CPU-time figures are the stable ones. Run: python -m benchmarks.segment
"""

from __future__ import annotations

import bz2
import importlib.util
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from pipelines.common.text_cleaning import SentenceSplitter, normalize_text
from pipelines.segment import input_formats, wikipedia, wikitext
from pipelines.segment import stage as segment

DATA = ROOT.parent / "shared" / "data"
WIKI = DATA / "wikipedia" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
BOOKS = DATA / "books"


def stream_case(paths: list[str]) -> dict:
    """Read, clean and split every document of `paths` in this process, without Beam."""
    splitter = SentenceSplitter()
    counts: dict[str, int] = {}

    def inc(key: str, amount: int = 1) -> None:
        counts[key] = counts.get(key, 0) + amount

    start = time.process_time()
    sentences = 0
    for path in paths:
        with open(path, "rb") as raw:
            for doc in input_formats.read_documents(
                path, raw, "auto", fallback_encoding="latin-1", inc=inc
            ):
                for paragraph in segment.clean_paragraphs(doc.format, doc.text, "NFKC"):
                    sentences += len(splitter.split(paragraph))
    seconds = time.process_time() - start
    return {
        "input_mb": round(counts["characters_in"] / 1e6, 3),
        "cpu_s": round(seconds, 3),
        "mb_per_cpu_s": round(counts["characters_in"] / 1e6 / seconds, 3),
        "sentences": sentences,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def beam_case(inputs: list[str], workers: int, output: str) -> dict:
    """Run the Beam job in this process (called in a fresh subprocess) and report its resources."""
    flags = ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    start = time.perf_counter()
    stats = segment.run(
        segment.SegmentConfig(input=inputs, output=output, fallback_encoding="latin-1"), flags
    )
    wall = time.perf_counter() - start
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return {
        "wall_s": wall,
        "cpu_s": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
        "peak_rss_mb": max(own.ru_maxrss, children.ru_maxrss) / 1024,
        "stats": stats,
    }


def subprocess_case(mode: str, arguments: dict) -> dict:
    """Run `mode` ('--beam' or '--stream') in a fresh Python process; its JSON result."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.segment", mode, json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_case(inputs: list[str], workers: int) -> dict:
    with tempfile.TemporaryDirectory() as temp:
        case = subprocess_case(
            "--beam", {"inputs": inputs, "workers": workers, "output": temp + "/out"}
        )
    stats = case.pop("stats")
    megabytes = stats["characters_in"] / 1e6
    return {
        "workers": workers,
        "input_mb": round(megabytes, 3),
        "documents_out": stats["documents_out"],
        "sentences_out": stats["sentences_out"],
        "wall_s": round(case["wall_s"], 2),
        "mb_per_s_per_worker": round(megabytes / case["wall_s"] / workers, 3),
        "mb_per_cpu_s": round(megabytes / case["cpu_s"], 3),
        "peak_rss_mb": round(case["peak_rss_mb"], 1),
    }


def repeated_dump(path: Path, copies: int) -> None:
    """The sample's pages `copies` times in one dump, each copy with new page ids."""
    xml = bz2.decompress(WIKI.read_bytes()).decode("utf-8")
    head, rest = xml.split("<page>", 1)
    body, tail = ("<page>" + rest).rsplit("</page>", 1)
    with bz2.open(path, "wt", encoding="utf-8") as out:
        out.write(head)
        for copy in range(copies):
            out.write(
                re.sub(
                    r"(<page>\s*<title>[^<]*</title>\s*<ns>\d+</ns>\s*<id>)(\d+)",
                    lambda m, c=copy: f"{m.group(1)}{c}{m.group(2)}",
                    body,
                )
            )
            out.write("</page>")
        out.write(tail)


RESIDUES = {
    "template braces": r"\{\{|\}\}",
    "link brackets": r"\[\[|\]\]",
    "table rows": r"^\s*[|!]|\|\|",
    "html tags": r"</?[a-z]+[ >/]",
    "html entities": r"&[a-z]+;",
    "formula placeholders": r"formula_\d",
    "empty parentheses": r"\(\s*[,;]?\s*\)",
    "space before punctuation": r" [.,;:](?:\s|$)",
    "section headings": r"^[A-Z][^.!?]{0,60}\.$",
}


def wikiextractor_comparison() -> dict | None:
    """Our prose vs WikiExtractor 3.1's on the sample (skipped where wikiextractor is not
    importable)."""
    if importlib.util.find_spec("wikiextractor") is None:
        return None
    with tempfile.TemporaryDirectory() as temp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "wikiextractor.WikiExtractor",
                str(WIKI),
                "-o",
                temp,
                "--processes",
                "1",
                "-q",
            ],
            check=True,
            capture_output=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        theirs = {}
        for path in sorted(Path(temp).rglob("wiki_*")):
            for match in re.finditer(
                r'<doc id="\d+"[^>]*title="([^"]*)">\n(.*?)</doc>', path.read_text(), re.DOTALL
            ):
                theirs[match.group(1)] = [
                    line for line in match.group(2).split("\n") if line.strip()
                ][1:]
    ours = {}
    with bz2.open(WIKI) as stream:
        for page in wikipedia.iter_pages(stream):
            if page.page_id and page.title in theirs:
                ours[page.title] = [
                    normalize_text(p) for p in wikitext.wikitext_to_paragraphs(page.text)
                ]
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    def residues(docs: dict) -> dict:
        patterns = {name: re.compile(rx, re.MULTILINE) for name, rx in RESIDUES.items()}
        return {
            name: sum(len(rx.findall(line)) for lines in docs.values() for line in lines)
            for name, rx in patterns.items()
        }

    return {
        "documents": {"wikiextractor": len(theirs), "ours": len(ours)},
        "characters": {
            name: sum(len(line) for lines in docs.values() for line in lines)
            for name, docs in (("wikiextractor", theirs), ("ours", ours))
        },
        "wikiextractor_mb_per_cpu_s": round(
            sum(len(p.text) for p in wikipedia.iter_pages(bz2.open(WIKI))) / 1e6 / cpu, 3
        ),
        "residues": {"wikiextractor": residues(theirs), "ours": residues(ours)},
    }


def main() -> None:
    books = [str(p) for p in sorted(BOOKS.glob("*.txt"))]
    figures = {
        "per_core": {
            "wikipedia": subprocess_case("--stream", {"paths": [str(WIKI)]}),
            "books": subprocess_case("--stream", {"paths": books}),
        },
        "beam": {},
        "scale": {},
    }
    for name, inputs in {"wikipedia": [str(WIKI)], "books": books}.items():
        figures["beam"][name] = [run_case(inputs, workers) for workers in (1, 2)]
    with tempfile.TemporaryDirectory() as temp:
        for copies in (1, 4):
            dump = Path(temp) / f"x{copies}.xml.bz2"
            repeated_dump(dump, copies)
            stream = subprocess_case("--stream", {"paths": [str(dump)]})
            case = run_case([str(dump)], 1)
            figures["scale"][f"x{copies}"] = {
                "input_mb": case["input_mb"],
                "stream_peak_rss_mb": stream["peak_rss_mb"],
                "stream_mb_per_cpu_s": stream["mb_per_cpu_s"],
                "beam_peak_rss_mb": case["peak_rss_mb"],
                "beam_mb_per_cpu_s": case["mb_per_cpu_s"],
            }
    figures["wikiextractor"] = wikiextractor_comparison()
    print(json.dumps(figures))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--beam", "--stream"):
        case = beam_case if sys.argv[1] == "--beam" else stream_case
        print(json.dumps(case(**json.loads(sys.argv[2]))))
    else:
        main()
