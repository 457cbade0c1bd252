"""Prefect 3 flows that chain the stages: end-to-end runs and scheduled domain-adaptive pretraining.

Importing this package sets two Prefect defaults (unless the user set them) before Prefect is
imported: a patient start-up for Prefect's temporary local server, which the flows use when no
server is configured, and no analytics.
"""

import os

os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
