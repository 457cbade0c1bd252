"""The command-line entry every stage shares: flags from its config, logging, clear errors.

Every failure reaches the user as one line, `PROG failed: PATH: REASON` or, for a bad setting,
`PROG failed: FIELD: REASON` (exit code 2 for bad input, a bad flag or configuration, 1 for an
internal error); the traceback is shown only with `--verbose`. A run stopped by SIGTERM or SIGINT
once its work was saved (`Interrupted`) ends with one line, `PROG interrupted: WHAT; resume with:
COMMAND`, and exit code 75 (`EXIT_INTERRUPTED`). Errors Beam re-raises from a worker
(a long remote traceback ending in `[while running 'step']`) are reduced to the innermost
StageError's `PATH: REASON`."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from albert import flags, reaper, signals
from albert.config import StageConfig, add_config_arguments, config_from_namespace
from albert.errors import (
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    ConfigError,
    Interrupted,
    describe_error,
)
from albert.log import setup_logging

logger = logging.getLogger(__name__)


def report_failure(prog: str, error: BaseException, verbose: bool) -> int:
    """Log `PROG failed: PATH: REASON` (and the traceback when verbose); return the exit code."""
    message, code = describe_error(error)
    logger.error("%s failed: %s", prog, message)
    if verbose:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    elif code == EXIT_INTERNAL_ERROR:
        logger.error("run with --verbose for the traceback")
    return code


def report_interruption(prog: str, stop: Interrupted, command: str | None) -> int:
    """Log `PROG interrupted: WHAT; resume with: COMMAND` (the same command continues the run);
    return EXIT_INTERRUPTED."""
    resume = f"resume with: {command}" if command else "run the same command again to resume"
    logger.warning("%s interrupted: %s; %s", prog, stop, resume)
    return EXIT_INTERRUPTED


def guarded(prog: str, verbose: bool, body: Callable[[], int], command: str | None = None) -> int:
    """Run `body`; any exception becomes one logged line and an exit code (see `report_failure`);
    a run stopped by a signal with its work saved, one line naming `command` to resume it and
    EXIT_INTERRUPTED (`report_interruption`). Inside it a signal the command handles from its first
    instant (`albert.signals`) raises `Interrupted` where the program is."""
    try:
        with signals.raising():
            return body()
    except Interrupted as stop:
        return report_interruption(prog, stop, command)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as error:  # noqa: BLE001  (every failure is reported, none is swallowed: exit != 0)
        return report_failure(prog, error, verbose)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors (an unknown flag, a missing value) raise ConfigError, so that
    they are reported like every other failure: one line, exit code 2. An unknown flag is named
    with the closest flag of the command (of its subcommand, for `albert line show ...`). A flag
    is spelled whole: an abbreviation (`--outp`) is an unknown flag, never `--output`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} ({self.prog} --help lists the flags)")

    def parse_args(self, args=None, namespace=None):  # argparse's signature
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            raise flags.unknown_flags_error(unknown, self.known_flags(parsed), self.prog)
        return parsed

    def known_flags(self, parsed: argparse.Namespace) -> list[str]:
        """This parser's long flags and those of the subcommand `parsed` chose."""
        known = flags.option_strings(self)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, ArgumentParser):
                    known += chosen.known_flags(parsed)
        return known


def command_parser(
    prog: str, description: str
) -> tuple[ArgumentParser, Callable[[str, str], argparse.ArgumentParser]]:
    """The parser of `PROG COMMAND ...` (`description` shown as written) and `add(name, help)`,
    which adds a command: its --help shows `description` too, and it takes --verbose."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = ArgumentParser(prog=prog, description=description, formatter_class=raw)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        command = commands.add_parser(name, help=help, description=description, formatter_class=raw)
        command.add_argument("--verbose", action="store_true", help="debug logs")
        return command

    return parser, add


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    body: Callable[[argparse.Namespace, list[str] | None], int],
    *,
    known_args: bool = False,
) -> int:
    """Parse `argv` and return `body(args, unknown flags or None)`; from parsing on, every failure
    is one line and an exit code (`guarded`). With `known_args`, the flags the parser does not know
    go to `body` if they are Beam's pipeline options; any other is an error (`albert.flags`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    setup_logging(verbose)

    def parse_and_run() -> int:
        if known_args:  # what the command does not know must be one of Beam's options
            args, unknown = parser.parse_known_args(argv)
            flags.check_beam_flags(unknown, flags.option_strings(parser), parser.prog)
            return body(args, unknown)
        return body(parser.parse_args(argv), None)

    return guarded(prog, verbose, parse_and_run, command=shlex.join([*prog.split(), *argv]))


BEAM_EPILOG = (
    "Apache Beam's pipeline options (--runner, --direct_num_workers, Dataflow's --project ...) "
    "are passed to Beam; any other flag is an error (exit code 2)."
)


def stage_main(
    config_cls: type[StageConfig],
    run: Callable[..., Any],
    argv: Sequence[str] | None = None,
    *,
    prog: str,
    description: str,
    beam: bool = False,
) -> int:
    """Parse flags into `config_cls`, run the stage, print its summary as JSON; return an exit code.

    The configuration (`--config` file and flags) is validated before anything else runs. With
    `beam=True`, Beam's registered pipeline options (`--runner`, `--direct_num_workers`,
    Dataflow's `--project` ...) are passed to `run`; a flag that is neither the config's nor
    Beam's is an error naming it, as it is without `beam`.
    """
    parser = ArgumentParser(
        prog=prog,
        description=description,
        epilog=BEAM_EPILOG if beam else None,
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show debug logs and TensorFlow/Beam output"
    )
    add_config_arguments(parser, config_cls)

    def body(args: argparse.Namespace, beam_args: list[str] | None) -> int:
        config = config_from_namespace(config_cls, args)
        reaper.watch()  # a killed command leaves no server or worker processes behind
        result = run(config, beam_args) if beam else run(config)
        if result is not None:
            print(json.dumps(result, indent=2, sort_keys=True, default=str), file=sys.stdout)
        return 0

    return run_command(prog, parser, argv, body, known_args=beam)
