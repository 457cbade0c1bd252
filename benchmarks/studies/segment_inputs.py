"""Segment on awkward real inputs, this checkout side by side with a baseline checkout of the code.

Two corpora built from the shared Gutenberg books:
- `long_line`: 50 MB of book text on ONE line (and, for reference, the same text in 600-character
  lines with a blank line every 50 lines): the segment job's peak RSS.
- `domain`: the prose books rearranged as a domain corpus (tests/segment_testdata.numbered_chapters:
  chapters of 25 paragraphs separated by blank lines, hard-wrapped at 72 characters, an inline
  verse/clause number after every sentence end): documents out, the format `auto` chose, the median
  sentence length and the share of sentences cut at max_sentence_chars.
Each case runs `python -m pipelines.segment` in a fresh process from this checkout and, with
`--baseline DIR` (e.g. an older commit unpacked with `git archive COMMIT | tar -x -C DIR`), from
that one too. Prints one JSON line.
Run: python -m benchmarks.studies.segment_inputs [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import PROSE_BOOKS

ROOT = Path(__file__).resolve().parents[2]

from tests.segment_testdata import numbered_chapters, source_paragraphs

BOOKS = ROOT.parent / "shared" / "data" / "books"
PROSE = PROSE_BOOKS
LONG_LINE_CHARS = 50_000_000


def book_text(name: str) -> str:
    return (BOOKS / f"{name}.txt").read_bytes().decode("utf-8", errors="replace")


def build_inputs(folder: Path) -> dict[str, Path]:
    """The three input files of the benchmark, written into `folder`."""

    words = " ".join(book_text(p.stem) for p in sorted(BOOKS.glob("*.txt"))).split()
    text = " ".join(words)
    text = (text + " ") * (LONG_LINE_CHARS // len(text) + 1)
    text = text[:LONG_LINE_CHARS].strip()
    paths = {name: folder / f"{name}.txt" for name in ("long_line", "ordinary_lines", "domain")}
    paths["long_line"].write_text(text + "\n")
    lines, start = [], 0
    while start < len(text):
        end = text.find(" ", start + 600)
        end = len(text) if end < 0 else end
        lines.append(text[start:end].strip())
        start = end
        if len(lines) % 51 == 50:
            lines.append("")
    paths["ordinary_lines"].write_text("\n".join(lines) + "\n")
    chapters = []
    for name in PROSE:
        book = book_text(name)
        chapters.append(numbered_chapters(book, len(source_paragraphs(book)) // 25, 25).strip())
    paths["domain"].write_text("\n\n".join(chapters) + "\n")
    return paths


def run_segment(code: Path, source: Path, output: Path, *flags: str) -> dict:
    """`python -m pipelines.segment` from checkout `code`: wall seconds, peak RSS, stats, log
    lines."""
    env = dict(os.environ, PYTHONPATH=str(code))
    start = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipelines.segment",
            "--input",
            str(source),
            "--output",
            str(output),
            *flags,
        ],
        cwd=code,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"segment failed in {code}: {log[-2000:]}")
    stats = json.loads((output / "stats.json").read_text())
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "stats": stats,
        "log": [line for line in log.splitlines() if "read as" in line],
    }


def sentence_lengths(output: Path) -> list[int]:
    return [
        len(line)
        for shard in sorted(output.glob("part-*.txt"))
        for line in shard.read_text(encoding="utf-8").splitlines()
        if line
    ]


def measure(code: Path, inputs: dict[str, Path], temp: Path) -> dict:
    result = {}
    for name in ("long_line", "ordinary_lines"):
        run = run_segment(code, inputs[name], temp / f"{name}-out", "--format", "text")
        stats = run["stats"]
        result[name] = {
            "peak_rss_mb": run["peak_rss_mb"],
            "wall_s": run["wall_s"],
            "documents_out": stats["documents_out"],
            "lines_cut": stats.get("lines_cut"),
            "documents_cut": stats.get("documents_cut"),
        }
    run = run_segment(code, inputs["domain"], temp / "domain-out")
    stats, lengths = run["stats"], sentence_lengths(temp / "domain-out")
    result["domain"] = {
        "formats": stats["formats"],
        "documents_out": stats["documents_out"],
        "sentences_out": stats["sentences_out"],
        "median_sentence_chars": statistics.median(lengths),
        "sentences_cut_pct": round(100 * stats["sentences_cut"] / stats["sentences_out"], 2),
        "format_log": run["log"],
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, help="another checkout of the project to compare with"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        temp = Path(folder)
        inputs = build_inputs(temp)
        result = {
            "cpu": cpu_model(),
            "input_mb": {k: round(p.stat().st_size / 1e6, 2) for k, p in inputs.items()},
        }
        for label, code in (("this", ROOT), ("baseline", args.baseline)):
            if code is not None:
                (temp / label).mkdir()
                result[label] = measure(code.resolve(), inputs, temp / label)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
