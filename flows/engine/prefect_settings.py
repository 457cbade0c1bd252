"""The Prefect settings the flows' entry points run under, where the user kept Prefect's default,
and the environment Prefect needs, checked before it starts.

A patient start-up (90 s, not 20) for Prefect's temporary local server, which the flows use when no
server is configured (PREFECT_API_URL), and no analytics. They are applied by each entry point
(`python -m flows.*`, `albert run` / `ablate` / `deploy`: their `main`) through Prefect's public
`temporary_settings`, never by importing a package. A deployment's runs need nothing here: they
run under a worker that talks to a real server. The tests set the same values (tests/conftest.py).

Before a flow starts (`check_environment`), PREFECT_HOME (its database, the temporary server's
files) and the results' local storage are made where they can be and must be writable: else one
line naming the setting and the reason (ConfigError, exit 2), within seconds instead of the
temporary server's retries. A temporary server that still fails to start is one line too
(`server_failure`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_HOME,
    PREFECT_LOCAL_STORAGE_PATH,
    PREFECT_SERVER_ANALYTICS_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

from albert.errors import ConfigError, StageError
from albert.outputs import unwritable

FLOW_DEFAULTS: dict[Any, Any] = {  # Prefect setting -> our default
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 90,
    PREFECT_SERVER_ANALYTICS_ENABLED: False,
}

WRITTEN = (PREFECT_HOME, PREFECT_LOCAL_STORAGE_PATH)
"""The Prefect settings naming directories a flow run writes."""


@contextlib.contextmanager
def flow_defaults() -> Iterator[None]:
    """Run the block with `FLOW_DEFAULTS` for the settings that still have Prefect's default
    value (one the user set, in the environment or a Prefect profile, is kept)."""
    updates = {
        setting: value
        for setting, value in FLOW_DEFAULTS.items()
        if setting.value() == setting.default()
    }
    with temporary_settings(updates=updates):
        yield


def check_environment() -> None:
    """ConfigError naming the first of `WRITTEN` that cannot be made or written, and why."""
    for setting in WRITTEN:
        path = str(setting.value())
        reason = unwritable(path)
        if reason:
            raise ConfigError(
                f"{setting.name}={path}: {reason}; set {setting.name} to a directory this user "
                "can write (Prefect keeps its database and results there)"
            )


def server_failure(error: BaseException) -> StageError | None:
    """The temporary server's failure to start (`error`, Prefect's RuntimeError) in one line:
    what failed, which setting, what to do; None for any other error."""
    if "ephemeral Prefect API server" not in str(error):
        return None
    timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS
    return StageError(
        f"Prefect's temporary server did not start within {timeout.value()} s "
        f"({timeout.name}; its files are in PREFECT_HOME={PREFECT_HOME.value()}): raise "
        f"{timeout.name} on a slow machine, or set {PREFECT_API_URL.name} to a running "
        "Prefect server (prefect server start)"
    )
