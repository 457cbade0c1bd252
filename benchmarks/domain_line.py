"""A model line night after night on real text (docs/measurements.md, "A model line night after
night"): a general base pretrained on Wikipedia and prose books, then a domain (Shakespeare's
plays, Milton, Blake) fed in three nights of new documents, each line from the same base.

    python -m benchmarks.domain_line [--work /tmp/domain-line] [--base-steps 4000]
        [--replays 0:0,0.2:0.2] [--gated 0.2:0.2] [--epochs 1]

1. Corpora from ../shared/data/books and the Wikipedia sample: every book cut into documents of
   whole paragraphs (about 2,000 characters), blank-line separated. General: the Wikipedia sample,
   Austen, Chesterton, Melville, Whitman. Domain: Shakespeare, Milton, Blake, its documents dealt
   by a stable hash into three nights of 1/4, 1/2 and 1/4 of them.
2. The base: `python -m flows.pipeline.flow` on the general corpus (albert-tiny, 64 tokens).
3. One line per replay setting of --replays (`D:G` = --domain-replay D --general-replay G), three
   nights each, with a gate that promotes every night (their figures are what a gate would see),
   and with --gated a line with the flow's default gate.
4. Every version of every line scored on the same final in-domain held-out set (the held-out
   documents of all three nights) and the general held-out set.
5. On the --gated line, a fourth night whose file is the first night's documents with their words
   shuffled: the gate must refuse it, `current` must stay.

Prints one JSON line per night (line, version, status, seconds, new sequences, losses) and a last
JSON line with the whole table, the CPU model and the load average. Every step is resumable:
finished nights are "nothing new" when the script runs again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import PROSE_BOOKS

SHARED = REPO.parent / "shared" / "data"
GENERAL_BOOKS = (*PROSE_BOOKS, "whitman-leaves")
DOMAIN_BOOKS = (
    "shakespeare-caesar",
    "shakespeare-hamlet",
    "shakespeare-macbeth",
    "milton-paradise",
    "blake-poems",
)
WIKIPEDIA = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
NIGHT_SHARES = (0.25, 0.5, 0.25)
FLOW_FLAGS = [
    *("--batch-size", "32", "--dupe-factor", "4"),
    *("--pretrain", '{"jit_compile": true, "progress": false}'),
]


def read_book(name: str) -> str:
    raw = (SHARED / "books" / f"{name}.txt").read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # two of the books are Latin-1
        return raw.decode("latin-1")


def paragraphs(text: str, size: int) -> list[str]:
    """Blank-line separated paragraphs, one line each; one longer than `size` (verse without
    stanza breaks) cut at line ends into pieces of about `size` characters."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        piece: list[str] = []
        for line in block.split("\n"):
            piece.append(line.strip())
            if sum(map(len, piece)) >= size:
                found.append(" ".join(piece))
                piece = []
        found.append(" ".join(piece))
    return [" ".join(p.split()) for p in found if p.strip()]


def documents(text: str, size: int = 2000) -> list[str]:
    """Whole paragraphs (one line each) grouped into documents of about `size` characters."""
    docs, current = [], []
    for paragraph in paragraphs(text, size):
        current.append(paragraph)
        if sum(map(len, current)) >= size:
            docs.append("\n".join(current))
            current = []
    if current:
        docs.append("\n".join(current))
    return docs


def write_docs(path: Path, docs: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


def corpora(work: Path) -> tuple[list[str], list[Path], Path]:
    """(general inputs, the three nights' files, the bad night's file), written once."""
    general = [str(SHARED / "wikipedia" / WIKIPEDIA)]
    for book in GENERAL_BOOKS:
        docs = documents(read_book(book))
        general.append(str(write_docs(work / "general" / f"{book}.txt", docs)))
    domain = [d for book in DOMAIN_BOOKS for d in documents(read_book(book))]
    domain.sort(key=lambda d: hashlib.sha256(d.encode()).hexdigest())
    bounds = [0]
    for share in NIGHT_SHARES:
        bounds.append(bounds[-1] + round(share * len(domain)))
    bounds[-1] = len(domain)
    nights = [
        write_docs(work / "nights" / f"night-{i + 1}.txt", domain[bounds[i] : bounds[i + 1]])
        for i in range(len(NIGHT_SHARES))
    ]
    rng = random.Random(0)
    shuffled = []
    for doc in domain[bounds[0] : bounds[1]]:
        words = doc.split()
        rng.shuffle(words)
        shuffled.append(" ".join(words))
    bad = write_docs(work / "nights" / "bad-shuffled-words.txt", shuffled)
    return general, nights, bad


def run(args: list[str], log: Path) -> float:
    """Run a flow command (output to `log`); its wall seconds."""
    start = time.monotonic()
    with log.open("a") as handle:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=handle,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed (exit {done.returncode}); see {log}")
    return time.monotonic() - start


def night(line: Path, base: Path, inputs: Path, new: Path, flags: list[str], log: Path) -> dict:
    """Run the night whose new file is `new`; its wall seconds, its version's record (found by
    the file's digest, so a resumed benchmark finds nights done before) and `current`."""
    seconds = run(
        [
            *("-m", "flows.domain.flow", "--line", str(line), "--base", str(base)),
            *("--input", str(inputs / "*.txt"), *FLOW_FLAGS, *flags),
        ],
        log,
    )
    digest = hashlib.sha256(new.read_bytes()).hexdigest()
    record = None
    for path in sorted(line.glob("v[0-9]*/version.json")):
        candidate = json.loads(path.read_text())
        if digest in {f["sha256"] for f in (candidate.get("corpus") or {}).get("files") or ()}:
            record = candidate
    current = (line / "current").read_text().strip()
    return {"seconds": seconds, "record": record, "current": current, "line": line}


def score_versions(line: Path, heldout: Path) -> dict[str, float]:
    """Every version's masked-LM loss on the fixed in-domain held-out set `heldout` (a mix dir)."""
    from model.evaluation.heldout import evaluate_pretraining  # heavy: Keras

    scores = {}
    for version in sorted(line.glob("v[0-9]*")):
        record = json.loads((version / "version.json").read_text())
        metrics = evaluate_pretraining(
            str(version / record.get("export", "export/model.keras")), str(heldout), 64
        )
        scores[version.name] = round(metrics["masked_lm_loss"], 4)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/domain-line")
    parser.add_argument("--base-steps", type=int, default=4000)
    parser.add_argument(
        "--replays", default="0:0,0.2:0.2", help="lines whose gate promotes every night"
    )
    parser.add_argument(
        "--gated", default="", help="D:G of a line with the default gate and the bad night"
    )
    parser.add_argument("--epochs", default="1")
    parser.add_argument("--night-flags", default="", help="more flow flags for every night")
    args = parser.parse_args()
    if not (SHARED / "books").is_dir():
        print(json.dumps({"skipped": f"needs {SHARED / 'books'}"}))
        return
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "flows.log"
    general, nights, bad = corpora(work)
    base = work / "base"
    inputs = [flag for path in general for flag in ("--input", path)]
    base_seconds = run(
        [
            *("-m", "flows.pipeline.flow", "--run-dir", str(base)),
            *("--steps", str(args.base_steps), *inputs, "--max-seq-length", "64"),
            *("--dupe-factor", "4", "--pretrain", '{"progress": false}'),
        ],
        log,
    )
    results: dict[str, list] = {}
    settings = [(s, False) for s in args.replays.split(",") if s] + (
        [(args.gated, True)] if args.gated else []
    )
    for setting, gated in settings:
        domain_share, general_share = setting.split(":")
        name = f"{'gated-' if gated else ''}replay-{domain_share}-{general_share}"
        line, inputs = work / "lines" / name, work / "inputs" / name
        gate = [] if gated else ["--min-improvement", "-1000", "--max-forgetting", "1000"]
        flags = [
            *("--domain-replay", domain_share, "--general-replay", general_share),
            *("--epochs", args.epochs, *gate, *args.night_flags.split()),
        ]
        rows = []
        for number, path in enumerate(nights, start=1):
            inputs.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, inputs / path.name)
            outcome = night(line, base, inputs, path, flags, log)
            rows.append(night_row(name, number, outcome))
            print(json.dumps(rows[-1]), flush=True)
        if gated:
            shutil.copy(bad, inputs / bad.name)
            outcome = night(line, base, inputs, bad, flags, log)
            rows.append(night_row(name, "bad", outcome))
            print(json.dumps(rows[-1]), flush=True)
        results[name] = rows
    first = work / "lines" / next(iter(results))  # a line that took every night
    final_mix = sorted(first.glob("nights/v*/replay"), key=lambda p: p.stat().st_mtime)
    final_mix = [m for m in final_mix if len(list(m.glob("heldout-*.tfrecord"))) == len(nights)]
    fixed = {name: score_versions(work / "lines" / name, final_mix[-1]) for name in results}
    print(
        json.dumps(
            {
                "benchmark": "domain_line",
                "base_seconds": round(base_seconds, 1),
                "base_steps": args.base_steps,
                "nights": results,
                "fixed_domain_heldout": {"data": str(final_mix[-1]), "masked_lm_loss": fixed},
                "cpu_model": cpu_model(),
                "cpus": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


def training_seconds(metrics: Path) -> float | None:
    """Seconds spent in training steps: the sum over the training log's windows of steps /
    steps per second (model building, compiling, checkpoints and exports left out)."""
    if not metrics.exists():
        return None
    total, previous = 0.0, 0
    for line in metrics.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("split") == "train" and entry.get("steps_per_second"):
            total += (entry["step"] - previous) / entry["steps_per_second"]
            previous = entry["step"]
    return round(total, 1)


def night_row(line: str, number, outcome: dict) -> dict:
    record = outcome["record"] or {}
    version = outcome["line"] / record["version"] if record.get("version") else None
    trained = record.get("trained_on") or {}
    scores, parent = record.get("scores") or {}, record.get("parent_scores") or {}
    stages = (record.get("night") or {}).get("stages") or {}
    return {
        "line": line,
        "night": number,
        "version": record.get("version"),
        "status": record.get("status"),
        "current": outcome["current"],
        "command_seconds": round(outcome["seconds"], 1),
        "night_wall_seconds": round((record.get("night") or {}).get("wall_seconds", 0), 1),
        "night_cpu_seconds": round((record.get("night") or {}).get("cpu_seconds", 0), 1),
        "pretrain_seconds": round((stages.get("pretrain") or {}).get("seconds", 0), 1),
        "training_seconds": training_seconds(version / "training" / "metrics.jsonl")
        if version
        else None,
        "new_sequences": trained.get("new"),
        "replay_domain": trained.get("replay_domain"),
        "replay_general": trained.get("replay_general"),
        "steps": trained.get("steps"),
        "domain_loss": _loss(scores, "domain"),
        "parent_domain_loss": _loss(parent, "domain"),
        "general_loss": _loss(scores, "general"),
        "parent_general_loss": _loss(parent, "general"),
        "reason": record.get("reason"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _loss(scores: dict, key: str):
    value = (scores.get(key) or {}).get("masked_lm_loss")
    return round(value, 4) if isinstance(value, float) else None


if __name__ == "__main__":
    main()
