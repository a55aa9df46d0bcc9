"""How the real orchestrator servers are run on loopback: shared by the slow tests' fixtures (conftest.py),
`benchmarks/orchestrator` and `make demo-full` (the package holds it: ade_platform/emulators/orchestrators)."""

from ade_platform.emulators.orchestrators import airflow_env, prefect_env

__all__ = ["airflow_env", "prefect_env"]
