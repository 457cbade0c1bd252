"""`albert`: one console script whose subcommands are the stages' own `python -m` entry points
(the table is `albert.stages.COMMANDS`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from albert import signals
from albert.config import ConfigError
from albert.log import setup_logging
from albert.stage import guarded, report_failure
from albert.stages import COMMANDS

WRITES_AT_END = ("segment", "decontaminate", "predict")
"""Commands that train nothing and write their output whole at the end: a signal says that nothing
was written (as `albert line check` and `show`, which write nothing), not training's "before the
first step: nothing to save"."""


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items())
    return (
        "usage: albert COMMAND [flags]   (albert COMMAND --help for its "
        f"flags)\n\ncommands:\n{rows}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    module_name = COMMANDS[name][0] if name in COMMANDS else None
    verbose = "--verbose" in rest
    setup_logging(verbose)  # before the import: some stages load TensorFlow when imported
    if module_name is None:
        known = ", ".join(COMMANDS)
        error = ConfigError(f"unknown command {name!r}; the commands are {known}")
        return report_failure("albert", error, verbose)
    writes_at_end = name in WRITES_AT_END or (name == "line" and rest[:1] in (["check"], ["show"]))
    command = " ".join(["albert", name, *rest[:1]] if name == "line" else ["albert", name])
    previous = signals.stopping(signals.nothing_written(command)) if writes_at_end else None
    try:
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # noqa: BLE001  (reported in one line; the exit code: failed)
            return report_failure(f"albert {name}", error, verbose)
        return guarded(f"albert {name}", verbose, lambda: module.main(rest, prog=f"albert {name}"))
    finally:
        if previous is not None:
            signals.stopping(previous)


if __name__ == "__main__":
    sys.exit(main())
