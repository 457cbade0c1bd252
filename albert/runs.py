"""`albert runs gc RUN_DIR`: remove the outputs that earlier runs moved aside, when you ask.

No stage, flow or cache deletes a finished output: one that a run with other parameters would have
replaced is moved aside to `NAME.previous-<UTC time>` beside it (docs/flows.md, "The contract").
This command lists those among RUN_DIR's entries with their sizes and removes nothing; with `--yes`
it removes them, printing each. An output that a live run is writing is skipped: its moved-aside
copies are removed under the output's own lock.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from albert.errors import StageError
from albert.fs import filesystem, join, remove
from albert.locks import OutputBusyError, output_lock
from albert.outputs import MOVED_ASIDE
from albert.stage import command_parser, run_command


@dataclass(frozen=True)
class MovedAside:
    """One moved-aside output: where it is, the output it was, its size in bytes."""

    path: str
    output: str
    size: int


def moved_aside_outputs(run_dir: str) -> list[MovedAside]:
    """RUN_DIR's entries named `NAME.previous-<UTC time>[-n]`, sorted by name; StageError if
    RUN_DIR is not a directory."""
    fs, path = filesystem(run_dir)
    if not fs.isdir(path):
        raise StageError(f"{run_dir}: no such run directory")
    found = []
    for entry in sorted(fs.ls(path, detail=False)):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        match = MOVED_ASIDE.match(name)
        if match:
            output = join(run_dir, match["output"])
            found.append(MovedAside(join(run_dir, name), output, fs.du(entry, total=True)))
    return found


def human_size(size: int) -> str:
    """A byte count for people: 980 B, 3.2 kB, 45.0 MB, 1.3 GB (powers of 1000)."""
    units = ("B", "kB", "MB", "GB", "TB")
    power = 0
    while power < len(units) - 1 and size >= 1000 ** (power + 1):
        power += 1
    return f"{size} B" if power == 0 else f"{size / 1000**power:.1f} {units[power]}"


def collect(run_dir: str, delete: bool) -> list[MovedAside]:
    """Print RUN_DIR's moved-aside outputs; with `delete`, remove each (skipping those whose
    output a live run holds); returns those removed."""
    found = moved_aside_outputs(run_dir)
    if not found:
        print(f"{run_dir}: no moved-aside outputs")
        return []
    total = human_size(sum(item.size for item in found))
    if not delete:
        print(f"{run_dir}: {len(found)} moved-aside output(s), {total}:")
        for item in found:
            print(f"  {item.path}  ({human_size(item.size)})")
        print(f"nothing removed: `albert runs gc {run_dir} --yes` removes them")
        return []
    removed = []
    for item in found:
        try:
            with output_lock(item.output):
                remove(item.path)
        except OutputBusyError as error:
            print(f"skipped {item.path}: {error}")
            continue
        print(f"removed {item.path}  ({human_size(item.size)})")
        removed.append(item)
    print(
        f"{run_dir}: removed {len(removed)} of {len(found)} moved-aside output(s), "
        f"{human_size(sum(item.size for item in removed))}"
    )
    return removed


def main(argv: Sequence[str] | None = None, prog: str = "python -m albert.runs") -> int:
    parser, command = command_parser(prog, __doc__)
    gc = command("gc", "list (and with --yes remove) the outputs runs moved aside")
    gc.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (local or gs://)")
    gc.add_argument("--yes", action="store_true", help="remove them (default: only list them)")

    def gc_command(args: argparse.Namespace, _: list[str] | None) -> int:
        collect(args.run_dir, delete=args.yes)
        return 0

    return run_command(prog, parser, argv, gc_command)


if __name__ == "__main__":
    sys.exit(main())
