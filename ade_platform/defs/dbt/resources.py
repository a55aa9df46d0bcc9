"""The dbt resource: dagster-dbt's CLI resource over the configured project, run with this environment's dbt and
with the variables dbt itself reads (never written into the platform's own environment)."""

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster_dbt import DbtCliResource

from ade_platform.config import Settings


class DbtCli(DbtCliResource):
    """dagster-dbt's resource, with variables of dbt's own: its `cli` builds dbt's environment from os.environ
    and takes none (dagster-dbt 0.29), so they are set for the length of the call only (the subprocess starts,
    and the in-process adapter reads profiles.yml, inside it) and the previous values put back."""

    env: dict[str, str] = {}

    def cli(self, args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        with _environment(self.env):
            return super().cli(args, **kwargs)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


def dbt_environment(settings: Settings) -> dict[str, str]:
    """What dbt reads from its environment: the DuckDB file it builds into (ADE_DUCKDB_PATH, see profiles.yml)."""
    wh = settings.warehouses.get(settings.dbt.warehouse or "") if settings.dbt else None
    return {"ADE_DUCKDB_PATH": str(wh.path)} if wh is not None and wh.type == "duckdb" else {}


def dbt_executable() -> str:
    # The dbt of the same environment, so `ade` works without the venv on PATH.
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def dbt_resource(settings: Settings) -> DbtCli:
    assert settings.dbt is not None
    return DbtCli(
        project_dir=str(settings.dbt.project_dir),
        profiles_dir=str(settings.dbt.profiles_dir) if settings.dbt.profiles_dir else None,
        target=settings.dbt.target,
        dbt_executable=dbt_executable(),
        env=dbt_environment(settings),
    )
