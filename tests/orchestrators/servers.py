"""How the real orchestrator servers are run on loopback: shared by the slow tests' fixtures (conftest.py) and
`benchmarks/orchestrator`, so both measure and test the same server."""

from __future__ import annotations

import os
from pathlib import Path


def prefect_env(home: Path, port: int) -> dict[str, str]:
    """The environment of `prefect server start` and of the flows run against it: its own PREFECT_HOME
    (SQLite), no UI, no scheduler, no analytics; nothing inherited from a Prefect or Dagster setup."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PREFECT", "DAGSTER"))},
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
