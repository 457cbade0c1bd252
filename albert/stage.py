"""The command-line entry every stage shares: flags from its config, logging, clear errors.

Every failure reaches the user as one line, `PROG failed: PATH: REASON` or, for a bad setting,
`PROG failed: FIELD: REASON` (exit code 2 for bad input, a bad flag or configuration, 1 for an
internal error); the traceback is shown only with `--verbose`. Errors Beam re-raises from a worker
(a long remote traceback ending in `[while running 'step']`) are reduced to the innermost
StageError's `PATH: REASON`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from albert import reaper
from albert.config import ConfigError, StageConfig, add_config_arguments, config_from_namespace
from albert.log import setup_logging

logger = logging.getLogger(__name__)

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1


class StageError(RuntimeError):
    """Bad input or a failed stage; the message names the file or record and the reason."""


USER_ERRORS: tuple[type[BaseException], ...] = (StageError, ConfigError, ValueError, OSError)
"""Errors that mean bad input, configuration or environment (exit 2); anything else is internal (exit 1).

ValueError covers what libraries raise for a bad argument or file (Keras refusing an unsafe .keras
file, Beam an unknown --runner); OSError a missing, unreadable or unwritable path.
"""

_BEAM_STEP = re.compile(r"\s*\[while running '[^']*'\]")
_OUR_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(StageError|ConfigError): (.+)$", re.MULTILINE)


def _strip_beam_steps(text: str) -> str:
    return _BEAM_STEP.sub("", text).strip()


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and the errors it was raised from / during, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )


def describe_error(error: BaseException) -> tuple[str, int]:
    """(one-line `PATH: REASON`, exit code) of a failure, whatever raised it.

    The innermost StageError/ConfigError wins, whether it is in the exception chain or only in the
    text of an error a Beam worker sent back; an OSError names its file; any other error gives its
    type and the first line of its message.
    """
    ours = [e for e in _chain(error) if isinstance(e, (StageError, ConfigError))]
    text = str(ours[-1] if ours else error)
    quoted = _OUR_ERROR_LINE.findall(text)
    if quoted:  # a worker's traceback as text: its last StageError line is the root cause
        return _strip_beam_steps(quoted[-1][1]), EXIT_USER_ERROR
    if ours:
        return _strip_beam_steps(text), EXIT_USER_ERROR
    if isinstance(error, OSError) and error.filename is not None:
        reason = error.strerror or _first_line(_strip_beam_steps(str(error)))
        return f"{error.filename}: {reason}", EXIT_USER_ERROR
    reason = _first_line(_strip_beam_steps(text)) or "(no message)"
    if isinstance(error, USER_ERRORS):
        return reason, EXIT_USER_ERROR
    return f"internal error: {type(error).__name__}: {reason}", EXIT_INTERNAL_ERROR


def report_failure(prog: str, error: BaseException, verbose: bool) -> int:
    """Log `PROG failed: PATH: REASON` (and the traceback when verbose); return the exit code."""
    message, code = describe_error(error)
    logger.error("%s failed: %s", prog, message)
    if verbose:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    elif code == EXIT_INTERNAL_ERROR:
        logger.error("run with --verbose for the traceback")
    return code


def guarded(prog: str, verbose: bool, body: Callable[[], int]) -> int:
    """Run `body`; any exception becomes one logged line and an exit code (see `report_failure`)."""
    try:
        return body()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as error:  # noqa: BLE001  (every failure is reported, none is swallowed: exit != 0)
        return report_failure(prog, error, verbose)


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Turn a library's ValueError/OSError while reading `path` into `StageError('PATH: REASON')`."""
    try:
        yield
    except StageError:
        raise
    except (ValueError, OSError) as error:
        reason = _first_line(str(error)) or type(error).__name__
        raise StageError(
            reason if reason.startswith(f"{path}:") else f"{path}: {reason}"
        ) from error


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors (an unknown flag, a missing value) raise ConfigError, so that
    they are reported like every other failure: one line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} ({self.prog} --help lists the flags)")


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    body: Callable[[argparse.Namespace, list[str] | None], int],
    *,
    known_args: bool = False,
) -> int:
    """Parse `argv` and return `body(args, unknown flags or None)`; from parsing on, every failure
    is one line and an exit code (`guarded`). With `known_args`, unknown flags go to `body`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    setup_logging(verbose)

    def parse_and_run() -> int:
        if known_args:
            args, unknown = parser.parse_known_args(argv)
            return body(args, unknown)
        return body(parser.parse_args(argv), None)

    return guarded(prog, verbose, parse_and_run)


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
    `beam=True`, flags the config does not know are passed to `run` as Beam pipeline options
    (`--runner`, `--direct_num_workers`, Dataflow's `--project` ...).
    """
    parser = ArgumentParser(
        prog=prog,
        description=description,
        epilog="Any other --flag is passed to Apache Beam as a pipeline option." if beam else None,
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
