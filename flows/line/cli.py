"""`albert line`: look at a model line (flows.line.records), check it, and prune it when you ask.

    albert line show LINE                 its versions, oldest first: status, parent, held-out
                                          masked-LM loss in-domain and general, what each was
                                          trained on; current marked
    albert line check LINE                its integrity (flows.line.check), every listed file's
                                          sha256 included: exit 0 if sound, else exit 2 and one
                                          line per fault
    albert line prune LINE [VERSION ...]  lists what pruning would remove, with sizes, and removes
                                          nothing; --yes removes it, under the line's lock

Show and prune check the line first (file sizes, not digests) and refuse a line that is not sound,
saying what is wrong. Pruning removes the versions outside current's ancestry (refused nights,
branches a rollback left) or the versions named, and their nights' working directories, and what
killed commits left; it refuses to touch current or an ancestor of it. A pruned version's record
stays in LINE/pruned.json: the files of a pruned refused night stay taken (a night's
--retry-refused makes them new again). `--nights` also removes the working directories of the kept
versions' nights (stage outputs and checkpoints: the versions hold the export, vocabulary and
data). Nothing else in a line is ever deleted.
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
from albert.runs import human_size
from albert.stage import command_parser, run_command
from flows.line.check import faults
from flows.line.gate import held_out_loss
from flows.line.paths import night_dir
from flows.line.records import ModelLine, prune_plan


def _loss(record: dict[str, Any], held_out: str) -> str:
    value = held_out_loss(record.get("scores"), held_out)
    return f"{value:.4f}" if value is not None else "–"


def refuse(url: str, found: Sequence[str]) -> None:
    """StageError for a line with faults: the fault, or (several) each printed and a summary."""
    if len(found) > 1:
        print("\n".join(found))
        raise StageError(f"{url}: {len(found)} faults (listed above); the first: {found[0]}")
    raise StageError(found[0])


def check(url: str) -> list[str]:
    """Check the line, every listed file's sha256 included; StageError listing the faults."""
    line = ModelLine(url)
    found = faults(line, digests=True)
    if found:
        refuse(url, found)
    records = line.records()
    listed = sum(len(r.get("files") or {}) for r in records.values())
    message = (
        f"{url}: sound: current {line.current()}, {len(records)} version(s), {listed} listed "
        "file(s) with their sha256"
    )
    print(message)
    return [message]


def show(url: str) -> list[str]:
    """One line per version (and print them); StageError saying what is broken in a line that
    is not sound."""
    line = ModelLine(url)
    found = faults(line)
    if found:
        refuse(url, found)
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
    with output_lock(line.url) if delete else contextlib.nullcontext():
        found = faults(line, leftovers=False)  # what killed commits left is pruned below
        if found:
            refuse(url, found)
        records, current = line.records(), line.current()
        versions = prune_plan(records, current, names)
        paths = [line.path(v) for v in versions]
        work = [night_dir(line, records[v]) for v in versions]
        if nights:
            work += [night_dir(line, r) for r in records.values()]
        else:  # a night re-run after a refusal shares its directory: the kept one keeps it
            kept = {night_dir(line, r) for v, r in records.items() if v not in versions}
            work = [w for w in work if w not in kept]
        paths += sorted({w for w in work if w and exists(w)}) + line.leftovers()
        if not paths:
            print(f"{url}: nothing to prune (every version is current or one of its ancestors)")
            return []
        sizes = {p: _size(p) for p in paths}
        verb = "removed" if delete else "would remove"
        if delete and versions:  # their records first: a refused night's files stay taken
            line.keep_pruned({v: records[v] for v in versions})
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


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.line.cli") -> int:
    parser, add = command_parser(prog, __doc__)
    show_parser = add("show", "the line's versions")
    check_parser = add("check", "the line's integrity, every listed file's sha256 included")
    prune_parser = add(
        "prune", "list (and with --yes remove) the versions outside current's ancestry"
    )
    for sub in (show_parser, check_parser, prune_parser):
        sub.add_argument("line", metavar="LINE", help="a model line (local or gs://)")
    prune_parser.add_argument(
        "versions", nargs="*", metavar="VERSION", help="only these (default: all outside)"
    )
    prune_parser.add_argument("--yes", action="store_true", help="remove (default: only list)")
    prune_parser.add_argument(
        "--nights", action="store_true", help="also the kept versions' nights' working dirs"
    )

    def command(args: argparse.Namespace, _: list[str] | None) -> int:
        if args.command == "show":
            show(args.line)
        elif args.command == "check":
            check(args.line)
        else:
            prune(args.line, args.versions, args.yes, args.nights)
        return 0

    return run_command(prog, parser, argv, command)


if __name__ == "__main__":
    sys.exit(main())
