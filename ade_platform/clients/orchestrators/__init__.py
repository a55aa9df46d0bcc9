"""Orchestrator clients: Airflow and Prefect (REST over httpx) and the platform's own Dagster instance, behind one
contract (`OrchestratorClient`, base.py), and what the `orchestrators:` settings say of them.

`open_client(settings, name)` opens the client of one backend. It imports the backend's module on first use
(start-up speed: the gateway's cached path never loads httpx, nor Dagster), like clients/warehouses/.
"""

from __future__ import annotations

from typing import Any

from ade_platform.clients.orchestrators.base import (
    ERROR_CODES,
    DagInfo,
    OrchestratorClient,
    OrchestratorError,
    TaskInfo,
    TaskRecord,
)
from ade_platform.clients.orchestrators.snapshot import snapshot_runs
from ade_platform.config import REPO_ROOT, Settings
from ade_platform.lib.secrets import settings_scrubber

__all__ = [
    "BACKENDS",
    "ERROR_CODES",
    "DagInfo",
    "OrchestratorClient",
    "OrchestratorError",
    "TaskInfo",
    "TaskRecord",
    "conf_schema",
    "configured_backends",
    "open_client",
    "snapshot_runs",
    "tracked_dags",
    "triggerable_dags",
]
BACKENDS = ("airflow", "prefect", "dagster")


def configured_backends(settings: Settings) -> list[str]:
    """The backends this configuration can reach: dagster always, airflow and prefect when configured."""
    conf = settings.orchestrators
    return [b for b in BACKENDS if b == "dagster" or getattr(conf, b) is not None]


def open_client(settings: Settings, name: str) -> OrchestratorClient:
    """The client of one backend (`name`: airflow, prefect, dagster); `backend_not_configured` when its section
    is missing."""
    conf = settings.orchestrators
    if name == "dagster":
        from ade_platform.clients.orchestrators.dagster import DagsterRunsClient

        launch_env = {"ADE_HOME": str(settings.home)}
        if settings.config_path is not None:
            launch_env["ADE_CONFIG"] = str(settings.config_path)
        return DagsterRunsClient(
            settings.dagster_home, launch_env, code_dir=REPO_ROOT, scrub=settings_scrubber(settings)
        )
    if name == "airflow":
        if conf.airflow is None:
            raise OrchestratorError(
                "backend_not_configured", "no orchestrators.airflow section in the configuration"
            )
        from ade_platform.clients.orchestrators.airflow import AirflowClient

        return AirflowClient.from_settings(conf.airflow)
    if name == "prefect":
        if conf.prefect is None:
            raise OrchestratorError(
                "backend_not_configured", "no orchestrators.prefect section in the configuration"
            )
        from ade_platform.clients.orchestrators.prefect import PrefectClient

        return PrefectClient.from_settings(conf.prefect)
    raise OrchestratorError("backend_not_configured", f"unknown orchestrator backend {name!r}")


def tracked_dags(settings: Settings, backend: str) -> list[str] | None:
    """The DAGs configured as tracked for a backend; None: every DAG (Dagster's default)."""
    conf = settings.orchestrators
    if backend == "airflow":
        return list(conf.airflow.dags) if conf.airflow else []
    if backend == "prefect":
        return list(conf.prefect.flows) if conf.prefect else []
    return list(conf.dagster.jobs) if conf.dagster.jobs is not None else None


def triggerable_dags(settings: Settings, backend: str) -> list[str] | None:
    """What orchestrator_trigger_dag may start on a backend: its `triggerable` list, by default the tracked DAGs
    (None: every job of the platform's definitions, Dagster's default)."""
    section = _section(settings, backend)
    if section is not None and section.triggerable is not None:
        return list(section.triggerable)
    return tracked_dags(settings, backend)


def conf_schema(settings: Settings, backend: str, dag_id: str) -> dict[str, Any] | None:
    section = _section(settings, backend)
    return section.conf_schemas.get(dag_id) if section is not None else None


def _section(settings: Settings, backend: str) -> Any:
    return getattr(settings.orchestrators, backend, None)
