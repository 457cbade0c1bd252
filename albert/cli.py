"""`albert`: one console script whose subcommands are the stages' own `python -m` entry points
(the stages of `albert.stages.STAGES`, two of them wrapped by the flows: `WRAPPED_STAGES`) and the
commands that are not stages (`OTHER_COMMANDS`, the flows' among them); the table is
`COMMANDS`. The dispatcher is the one module of `albert/` that names modules of `flows/`
(tests/test_layering.py)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from albert import signals
from albert.config import ConfigError
from albert.log import setup_logging
from albert.stage import guarded, report_failure
from albert.stages import STAGES

WRAPPED_STAGES: dict[str, str] = {
    "finetune": "flows.finetune",
    "predict": "flows.predict",
}
"""The stages whose command joins two layers, so a flows module runs it: stage -> that module
(further pretraining before fine-tuning: `pipelines.tfrecords` and `model.pretrain`; the
prediction pipeline handed its fine-tuned model: `pipelines.predict` and `model.predict`)."""

OTHER_COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("model.evaluation.evaluate", "score predictions or a model"),
    "run": (
        "flows.pipeline.flow",
        "Prefect: the end-to-end flow segment -> vocab -> tfrecords -> pretrain -> heldout",
    ),
    "ablate": (
        "flows.ablation.flow",
        (
            "Prefect: the paper's ablation tables (objective, sharing, E) over a grid of "
            "pretraining runs"
        ),
    ),
    "deploy": (
        "flows.deploy",
        "Prefect: apply prefect.yaml's deployments (run, domain-adaptive, ablation, model line)",
    ),
    "runs": ("albert.runs", "runs gc RUN_DIR: list outputs runs moved aside (--yes removes them)"),
    "line": (
        "flows.line.cli",
        (
            "line show|check|prune LINE: a model line's versions, its integrity; prune what is "
            "outside current's lineage"
        ),
    ),
}
"""The `albert` subcommands that are not stages: subcommand -> (module with main(argv), summary)."""

COMMANDS: dict[str, tuple[str, str]] = {
    **{
        name: (WRAPPED_STAGES.get(name, stage.module), stage.summary)
        for name, stage in STAGES.items()
        if stage.summary is not None
    },
    **OTHER_COMMANDS,
}
"""Every `albert` subcommand in `albert --help` order: name -> (module with main(argv), summary)."""


def command_module(name: str) -> ModuleType:
    """The module whose `main(argv)` runs `albert NAME` (imported now: commands load Beam,
    TensorFlow or Prefect)."""
    return importlib.import_module(COMMANDS[name][0])


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
            module = command_module(name)
        except Exception as error:  # noqa: BLE001  (reported in one line; the exit code: failed)
            return report_failure(f"albert {name}", error, verbose)
        return guarded(f"albert {name}", verbose, lambda: module.main(rest, prog=f"albert {name}"))
    finally:
        if previous is not None:
            signals.stopping(previous)


if __name__ == "__main__":
    sys.exit(main())
