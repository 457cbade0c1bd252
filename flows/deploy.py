"""`albert deploy`: apply the deployments of prefect.yaml to the Prefect server (PREFECT_API_URL):
the end-to-end run, the domain-adaptive run, the ablation grid, a fine-tune (a team's own files
and columns) and the model line's nights, each
with the parameter form Prefect builds from its flow's signature (`parameter_form_faults`).

The whole file is checked first (`check`: work pools, schedules, entrypoints, parameter forms),
then the server (`check_server`: PREFECT_API_URL set and answering); only then is anything
applied. Each deployment's work pool is created if missing (type `process` by default, served by
`prefect worker start --pool NAME`); the flow code is pulled from this repository's directory.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Flow, flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.schedules import CronSchedule
from prefect.exceptions import ObjectAlreadyExists, PrefectException
from prefect.settings import PREFECT_API_URL
from prefect.utilities.callables import parameter_schema
from pydantic import ValidationError

from albert.config import ConfigError, read_yaml
from albert.stage import ArgumentParser, run_command
from flows.engine.prefect_settings import flow_defaults

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]


def load_deployments(path: Path) -> list[dict[str, Any]]:
    """The `deployments:` entries of a prefect.yaml file (ConfigError `PATH: REASON` if none, or
    not a list of mappings)."""
    spec = read_yaml(path)
    deployments = spec.get("deployments") if isinstance(spec, dict) else None
    if not deployments:
        raise ConfigError(f"{path}: no deployments")
    if not isinstance(deployments, list):
        raise ConfigError(
            f"{path}: deployments: a list of deployments, not {type(deployments).__name__}"
        )
    for index, deployment in enumerate(deployments):
        if not isinstance(deployment, dict) or not isinstance(deployment.get("name"), str):
            raise ConfigError(f"{path}: deployments[{index}]: a mapping with a name")
    return deployments


def ensure_work_pool(name: str, pool_type: str) -> None:
    """Create the work pool unless it exists."""

    with get_client(sync_client=True) as client:
        try:
            client.create_work_pool(WorkPoolCreate(name=name, type=pool_type))
            logger.info("created work pool %s (%s)", name, pool_type)
        except ObjectAlreadyExists:
            pass


def parameter_form_faults(schema: dict[str, Any], parameters: dict[str, Any]) -> list[str]:
    """What the parameter form of a flow (its `parameter_openapi_schema`) would leave a person to
    guess or to fill in blind: a parameter or config field without a description, and one with
    neither a default nor a value in the deployment's `parameters`."""
    faults = []
    definitions = schema.get("definitions", {})
    for name, prop in schema.get("properties", {}).items():
        given = parameters.get(name)
        if not prop.get("description"):
            faults.append(f"{name}: no description")
        if "default" not in prop and given is None:
            faults.append(f"{name}: neither a default nor a value")
        model = definitions.get(str(prop.get("$ref", "")).rsplit("/", 1)[-1])
        for field, field_prop in (model or {}).get("properties", {}).items():
            if not field_prop.get("description"):
                faults.append(f"{name}.{field}: no description")
            if "default" not in field_prop and field not in (given or {}):
                faults.append(f"{name}.{field}: neither a default nor a value")
    return faults


@dataclass(frozen=True)
class Checked:
    """A deployment of prefect.yaml as `check` found it: ready to apply."""

    name: str
    pool: str
    pool_type: str
    schedules: list[CronSchedule]
    remote: Flow
    parameters: dict[str, Any]
    description: str | None


def check(deployment: dict[str, Any], source: Path) -> Checked:
    """A deployment checked without the server: its work pool (a name and type that are strings),
    cron schedules, entrypoint (the flow loads from `source`) and parameter form (a description,
    a default or a value for every parameter: `parameter_form_faults`); ConfigError
    `deployment NAME: WHAT: REASON` for the first fault."""
    where = f"deployment {deployment['name']}"
    pool = deployment.get("work_pool")
    pool = pool if isinstance(pool, dict) else {}
    if not isinstance(pool.get("name"), str) or not isinstance(pool.get("type", ""), str):
        raise ConfigError(f"{where}: work_pool.name (and type): strings, got {pool or None!r}")
    schedules = deployment.get("schedules") or []
    parameters = deployment.get("parameters") or {}
    if not isinstance(schedules, list) or not isinstance(parameters, dict):
        raise ConfigError(f"{where}: schedules must be a list and parameters a mapping")
    crons = []
    for index, schedule in enumerate(schedules):
        if isinstance(schedule, dict) and "cron" in schedule:
            try:
                crons.append(
                    CronSchedule(cron=schedule["cron"], timezone=schedule.get("timezone", "UTC"))
                )
            except ValidationError as error:
                reason = error.errors()[0]["msg"].removeprefix("Value error, ")
                raise ConfigError(f"{where}: schedules[{index}]: {reason}") from None
    entrypoint = deployment.get("entrypoint")
    try:
        remote = flow.from_source(source=str(source), entrypoint=str(entrypoint))
    except (PrefectException, OSError, ValueError, ImportError, SyntaxError) as error:
        raise ConfigError(f"{where}: entrypoint {entrypoint}: {error}") from None
    schema = parameter_schema(remote.fn).model_dump_for_openapi()
    faults = parameter_form_faults(schema, parameters)
    if faults:
        raise ConfigError(f"{where}: {'; '.join(faults)}")
    return Checked(
        deployment["name"],
        pool["name"],
        pool.get("type", "process"),
        crons,
        remote,
        parameters,
        deployment.get("description"),
    )


def check_server() -> str:
    """The server in PREFECT_API_URL, which answers; ConfigError when none is set (the deployments
    would go to a temporary server that ends with the command) or none answers there."""
    url = PREFECT_API_URL.value()
    if not url:
        raise ConfigError(
            "PREFECT_API_URL is not set: the deployments would go to a temporary Prefect server "
            "that ends with this command; start one (prefect server start) and set "
            "PREFECT_API_URL=http://HOST:4200/api"
        )
    with get_client(sync_client=True) as client:
        error = client.api_healthcheck()
    if error is not None:
        raise ConfigError(
            f"PREFECT_API_URL={url}: no Prefect server answers ({type(error).__name__}: {error})"
        )
    return url


def apply(deployment: dict[str, Any] | Checked, source: Path) -> str:
    """Register one deployment (schedule, parameters, work pool; `check`ed first unless it was);
    return its id."""
    checked = deployment if isinstance(deployment, Checked) else check(deployment, source)
    ensure_work_pool(checked.pool, checked.pool_type)
    runner_deployment = checked.remote.to_deployment(
        name=checked.name,
        work_pool_name=checked.pool,
        schedules=checked.schedules,
        parameters=checked.parameters,
        description=checked.description,
    )
    return str(runner_deployment.apply())


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.deploy") -> int:
    parser = ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--file", default=str(REPO_ROOT / "prefect.yaml"), help="the prefect.yaml to apply"
    )
    parser.add_argument(
        "--source", default=str(REPO_ROOT), help="directory the worker runs the flow code from"
    )
    parser.add_argument("--verbose", action="store_true", help="debug logs")
    with flow_defaults():
        return run_command(prog, parser, argv, _apply_all)


def _apply_all(args: argparse.Namespace, _: None) -> int:
    """Check the whole file, then the server, then apply each deployment: a fault anywhere
    leaves the server as it was."""
    source = Path(args.source)
    checked = [check(deployment, source) for deployment in load_deployments(Path(args.file))]
    url = check_server()
    for deployment in checked:
        deployment_id = apply(deployment, source)
        print(
            f"applied deployment {deployment.name} ({deployment_id}) to work pool "
            f"{deployment.pool} at {url}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
