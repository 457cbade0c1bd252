"""Dataflow flex templates of the Beam stages: their metadata (one parameter per config field) and
the launcher's mapping of template parameters to the stage's own flags.

The image's launcher (`infra/dataflow/flex_main.py`) calls `main`: it runs the stage named by
$ALBERT_STAGE with Dataflow's `--field_name=value` parameters turned into the stage CLI's
`--field-name` flags, the remaining flags going to Beam, exactly as `python -m pipelines.<stage>`
would take them. `python -m pipelines.common.flex_template DIR` rewrites `DIR/<stage>-metadata.json`
from the stage configs (run it with `infra/dataflow` after a config gains or loses a field).
"""

from __future__ import annotations

import json
import os
import sys
import typing
from collections.abc import Sequence
from pathlib import Path

from albert.cli import command_module
from albert.config import field_help
from albert.stages import DATAFLOW_STAGES, config_class


def flex_template_metadata(stage: str) -> dict:
    """Flex-template metadata listing every field of the stage's config as a parameter.

    Dataflow passes each parameter as `--name=value`; `flex_argv` maps the underscore names to the
    stage's `--field-name` flags. List fields take a comma-separated list.
    """
    cls = config_class(stage)
    description = (command_module(stage).__doc__ or "").strip().splitlines()[0]
    parameters = []
    for name, field in cls.model_fields.items():
        is_list = typing.get_origin(field.annotation) is list
        parameters.append(
            {
                "name": name,
                "label": name.replace("_", " ").capitalize(),
                "helpText": field_help(field) + (" (comma-separated)" if is_list else ""),
                "isOptional": not field.is_required(),
            }
        )
    return {
        "name": f"albert-{stage}",
        "description": description,
        "streaming": False,
        "parameters": parameters,
    }


def flex_argv(stage: str, argv: Sequence[str]) -> list[str]:
    """Dataflow's `--field_name=value` parameters as the stage CLI's `--field-name` flags.

    A comma-separated list field becomes one repeated flag per item; every other flag (Beam's
    `--runner`, `--sdk_container_image`, ...) passes through unchanged.
    """
    fields = config_class(stage).model_fields
    out: list[str] = []
    for arg in argv:
        name, sep, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if sep and name in fields:
            flag = "--" + name.replace("_", "-")
            is_list = typing.get_origin(fields[name].annotation) is list
            items = [item for item in value.split(",") if item] if is_list else [value]
            annotation = fields[name].annotation
            if annotation is bool or annotation == bool | None:
                out.append(flag if value.lower() in ("true", "1", "yes") else "--no-" + flag[2:])
            else:
                out.extend(f"{flag}={item}" for item in items)
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The flex-template launcher: run the Beam stage named by $ALBERT_STAGE with the template's
    parameters."""
    stage = os.environ.get("ALBERT_STAGE", "")
    if stage not in DATAFLOW_STAGES:
        print(
            f"flex_main: set ALBERT_STAGE to one of {sorted(DATAFLOW_STAGES)} (got {stage!r})",
            file=sys.stderr,
        )
        return 2
    args = flex_argv(stage, sys.argv[1:] if argv is None else argv)
    return command_module(stage).main(args, prog=f"albert {stage} (flex template)")


def write_flex_metadata(directory: Path) -> list[Path]:
    """`directory/<stage>-metadata.json` for every Dataflow stage; the paths written."""
    written = []
    for stage in DATAFLOW_STAGES:
        path = Path(directory) / f"{stage}-metadata.json"
        path.write_text(
            json.dumps(flex_template_metadata(stage), indent=2) + "\n", encoding="utf-8"
        )
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m pipelines.common.flex_template DIR   (e.g. infra/dataflow)")
    for written_path in write_flex_metadata(Path(sys.argv[1])):
        print(written_path)
