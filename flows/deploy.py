"""`albert deploy`: apply the deployments of prefect.yaml to the Prefect server (PREFECT_API_URL):
the end-to-end run, the domain-adaptive run, the ablation grid, a fine-tune (a team's own files
and columns) and the model line's nights, each
with the parameter form Prefect builds from its flow's signature (`parameter_form_faults`).

Each deployment's work pool is created if missing (type `process` by default, served by
`prefect worker start --pool NAME`); the flow code is pulled from this repository's directory.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.schedules import CronSchedule
from prefect.exceptions import ObjectAlreadyExists
from prefect.utilities.callables import parameter_schema

from albert.config import ConfigError, read_yaml
from albert.stage import ArgumentParser, run_command
from flows.engine.prefect_settings import flow_defaults

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]


def load_deployments(path: Path) -> list[dict[str, Any]]:
    """The `deployments:` entries of a prefect.yaml file (ConfigError `PATH: REASON` if none)."""
    spec = read_yaml(path)
    deployments = spec.get("deployments") if isinstance(spec, dict) else None
    if not deployments:
        raise ConfigError(f"{path}: no deployments")
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


def apply(deployment: dict[str, Any], source: Path) -> str:
    """Register one deployment (schedule, parameters, work pool); return its id. A deployment whose
    parameter form would lack a description, a default or a value is refused (ConfigError)."""

    pool = deployment["work_pool"]
    ensure_work_pool(pool["name"], pool.get("type", "process"))
    schedules = [
        CronSchedule(cron=s["cron"], timezone=s.get("timezone", "UTC"))
        for s in deployment.get("schedules", [])
        if "cron" in s
    ]
    remote = flow.from_source(source=str(source), entrypoint=deployment["entrypoint"])
    schema = parameter_schema(remote.fn).model_dump_for_openapi()
    faults = parameter_form_faults(schema, deployment.get("parameters", {}))
    if faults:
        raise ConfigError(f"deployment {deployment['name']}: {'; '.join(faults)}")
    runner_deployment = remote.to_deployment(
        name=deployment["name"],
        work_pool_name=pool["name"],
        schedules=schedules,
        parameters=deployment.get("parameters", {}),
        description=deployment.get("description"),
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
    for deployment in load_deployments(Path(args.file)):
        deployment_id = apply(deployment, Path(args.source))
        print(
            f"applied deployment {deployment['name']} ({deployment_id}) to work pool "
            f"{deployment['work_pool']['name']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
