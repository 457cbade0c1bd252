"""`albert line`: look at a model line (albert.model_line), and prune it when you ask.

    albert line show LINE                 its versions, oldest first: status, parent, held-out
                                          masked-LM loss in-domain and general, what each was
                                          trained on; current marked
    albert line prune LINE [VERSION ...]  lists what pruning would remove, with sizes, and removes
                                          nothing; --yes removes it, under the line's lock

Pruning removes the versions outside current's ancestry (refused nights, branches a rollback left)
or the versions named, and their nights' working directories; it refuses to touch current or an
ancestor of it. `--nights` also removes the working directories of the kept versions' nights
(stage outputs and checkpoints: the versions hold the export, vocabulary and data). Nothing else in
a line is ever deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from albert.errors import StageError
from albert.fs import exists, filesystem, remove
from albert.locks import output_lock
from albert.model_line import ModelLine, prune_plan
from albert.promotion import held_out_loss
from albert.runs import human_size
from albert.stage import ArgumentParser, run_command


def _loss(record: dict[str, Any], held_out: str) -> str:
    value = held_out_loss(record.get("scores"), held_out)
    return f"{value:.4f}" if value is not None else "–"


def show(url: str) -> list[str]:
    """One line per version (and print them)."""
    line = ModelLine(url)
    line.settings()  # a clear error when it is no line
    records, current = line.records(), line.current()
    lines = [f"{url}: current {current}, {len(records)} version(s)"]
    for name, record in records.items():
        files = (record.get("corpus") or {}).get("files") or []
        mix = record.get("trained_on") or {}
        trained = (
            f"{len(files)} file(s), {mix.get('new', 0)} new + {mix.get('replay_domain', 0)} "
            f"earlier + {mix.get('replay_general', 0)} general sequences"
            if files
            else "the base"
        )
        lines.append(
            f"{'*' if name == current else ' '} {name}  {record.get('status'):<8}  parent "
            f"{record.get('parent') or '-':<5}  in-domain {_loss(record, 'domain')}  general "
            f"{_loss(record, 'general')}  {trained}"
        )
        if record.get("status") == "refused":
            lines.append(f"    refused: {record.get('reason')}")
    print("\n".join(lines))
    return lines


def _size(url: str) -> int:
    fs, path = filesystem(url)
    return int(fs.du(path, total=True)) if exists(url) else 0


def prune(url: str, names: Sequence[str], delete: bool, nights: bool) -> list[str]:
    """Print what pruning removes; with `delete`, remove it under the line's lock. Returns the
    paths removed (or that would be)."""
    line = ModelLine(url)
    line.settings()
    with output_lock(line.url) if delete else contextlib.nullcontext():
        records, current = line.records(), line.current()
        if current is None:
            raise StageError(f"{url}: the line has no current version yet; nothing to prune")
        versions = prune_plan(records, current, names)
        paths = [line.path(v) for v in versions]
        work = [(records[v].get("night") or {}).get("work_dir") for v in versions]
        if nights:
            work += [(r.get("night") or {}).get("work_dir") for r in records.values()]
        paths += sorted({w for w in work if w and exists(w)})
        if not paths:
            print(f"{url}: nothing to prune (every version is current or one of its ancestors)")
            return []
        sizes = {p: _size(p) for p in paths}
        verb = "removed" if delete else "would remove"
        for path in paths:
            if delete:
                remove(path)
            print(f"{verb} {path}  ({human_size(sizes[path])})")
        total = human_size(sum(sizes.values()))
        if delete:
            print(
                f"{url}: removed {len(paths)} path(s), {total}; current {current} and its "
                "ancestors kept"
            )
        else:
            print(f"nothing removed: `albert line prune {url} --yes` removes them ({total})")
        return paths


def main(argv: Sequence[str] | None = None, prog: str = "python -m albert.lines") -> int:
    parser = ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show_parser = commands.add_parser("show", help="the line's versions")
    show_parser.add_argument("line", metavar="LINE", help="a model line (local or gs://)")
    prune_parser = commands.add_parser(
        "prune",
        help="list (and with --yes remove) the versions outside current's ancestry",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prune_parser.add_argument("line", metavar="LINE", help="a model line (local or gs://)")
    prune_parser.add_argument(
        "versions", nargs="*", metavar="VERSION", help="only these (default: all outside)"
    )
    prune_parser.add_argument("--yes", action="store_true", help="remove (default: only list)")
    prune_parser.add_argument(
        "--nights", action="store_true", help="also the kept versions' nights' working dirs"
    )
    for sub in (show_parser, prune_parser):
        sub.add_argument("--verbose", action="store_true", help="debug logs")

    def command(args: argparse.Namespace, _: list[str] | None) -> int:
        if args.command == "show":
            show(args.line)
        else:
            prune(args.line, args.versions, args.yes, args.nights)
        return 0

    return run_command(prog, parser, argv, command)


if __name__ == "__main__":
    sys.exit(main())
