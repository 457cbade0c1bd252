"""Unknown flags are errors: one line naming each, with the closest known flag, before any work.

A command's flags are its parser's; a Beam stage's (and a flow's) are its parser's and Apache
Beam's registered pipeline options, those of every `PipelineOptions` subclass (`--runner`,
`--direct_num_workers`, Dataflow's `--project` ...), which pass on to Beam unchanged. Beam is
imported only to check flags that are not the command's own, so a command run with its own flags
alone loads none of it.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Sequence

from albert.errors import ConfigError


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags `parser` takes (`--input`, `--no-quality`, `--help` ...)."""
    return [
        flag for action in parser._actions for flag in action.option_strings if flag[:2] == "--"
    ]


def beam_parser() -> argparse.ArgumentParser:
    """A parser of every flag Beam's pipeline options register, built as Beam builds its own
    (`PipelineOptions.get_all_options`: each subclass once, no abbreviations)."""
    from apache_beam.options import pipeline_options

    parser = pipeline_options._BeamArgumentParser(allow_abbrev=False)
    parser.error = _raise  # a bad value of Beam's flag: one line too, not argparse's exit
    classes = {str(cls): cls for cls in pipeline_options.PipelineOptions.__subclasses__()}
    for cls in classes.values():
        cls._add_argparse_args(parser)
    return parser


def _raise(message: str) -> None:
    raise ConfigError(message)


def unknown_flags_error(leftover: Sequence[str], known: Iterable[str], prog: str) -> ConfigError:
    """The one-line error for the arguments no parser took: each flag named (`--name=value` by its
    name) with the closest of `known`, if one is close; a word that is no flag's value, as an
    unexpected argument."""
    known = sorted(set(known))
    named: list[str] = []
    previous_flag = False
    for arg in leftover:
        if arg.startswith("-") and arg != "-" and not arg[1:2].isdigit():
            flag, has_value, _ = arg.partition("=")
            match = difflib.get_close_matches(flag, known, n=1)
            named.append(f"{flag} (did you mean {match[0]}?)" if match else flag)
            previous_flag = not has_value
        elif previous_flag:  # the value of the unknown flag before it
            previous_flag = False
        else:
            named.append(f"unexpected argument {arg!r}")
    flags = [item for item in named if not item.startswith("unexpected")]
    words = [item for item in named if item.startswith("unexpected")]
    parts = [f"unknown flag{'s' if len(flags) > 1 else ''} {', '.join(flags)}"] if flags else []
    return ConfigError("; ".join([*parts, *words]) + f" ({prog} --help lists the flags)")


def check_beam_flags(args: Sequence[str], ours: Iterable[str], prog: str) -> None:
    """Raise the one-line error if any of `args` (the flags a Beam command's own parser did not
    take) is not a Beam pipeline option; suggestions are drawn from ours and Beam's."""
    if not args:
        return
    parser = beam_parser()
    try:
        _, leftover = parser.parse_known_args(list(args))
    except ConfigError as error:
        raise ConfigError(f"{error} ({prog} --help lists the flags)") from None
    if leftover:
        raise unknown_flags_error(leftover, [*ours, *option_strings(parser)], prog)
