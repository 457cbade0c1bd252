"""The command-line entry every stage shares: flags from its config, logging, clear errors."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from albert import reaper
from albert.config import ConfigError, StageConfig, add_config_arguments, config_from_namespace
from albert.log import setup_logging

logger = logging.getLogger(__name__)


class StageError(RuntimeError):
    """Bad input or a failed stage; the message names the file or record and the reason."""


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

    With `beam=True`, flags the config does not know are passed to `run` as Beam pipeline options
    (`--runner`, `--direct_num_workers`, Dataflow's `--project` ...).
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="Any other --flag is passed to Apache Beam as a pipeline option." if beam else None,
    )
    parser.add_argument("--verbose", action="store_true", help="show debug logs and TensorFlow/Beam output")
    add_config_arguments(parser, config_cls)
    if beam:
        args, beam_args = parser.parse_known_args(argv)
    else:
        args, beam_args = parser.parse_args(argv), None
    setup_logging(args.verbose)
    reaper.watch()  # a killed command leaves no server or worker processes behind
    try:
        config = config_from_namespace(config_cls, args)
    except ConfigError as error:
        parser.error(str(error))
    try:
        result = run(config, beam_args) if beam else run(config)
    except (StageError, ConfigError) as error:
        logger.error("%s failed: %s", prog, error)
        return 2
    if result is not None:
        print(json.dumps(result, indent=2, sort_keys=True, default=str), file=sys.stdout)
    return 0
