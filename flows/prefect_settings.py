"""The Prefect settings the flows' entry points run under, where the user kept Prefect's default.

A patient start-up (90 s, not 20) for Prefect's temporary local server, which the flows use when no
server is configured (PREFECT_API_URL), and no analytics. They are applied by each entry point
(`python -m flows.*`, `albert run` / `ablate` / `deploy`: their `main`) through Prefect's public
`temporary_settings`, never by importing a package. A deployment's runs need nothing here: they
run under a worker that talks to a real server. The tests set the same values (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from prefect.settings import (
    PREFECT_SERVER_ANALYTICS_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

FLOW_DEFAULTS: dict[Any, Any] = {  # Prefect setting -> our default
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 90,
    PREFECT_SERVER_ANALYTICS_ENABLED: False,
}


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
