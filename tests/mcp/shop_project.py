"""A small dbt project on DuckDB that tests generate (not the demo): three models, materialized with
`ade materialize` as a user would, then broken in the order an incident unfolds."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ade_platform.config import Settings, load_settings
from tests.helpers import environment

MODELS = {
    "models/stg_orders.sql": """
select 1::integer as order_id, 'placed'::varchar as status, 10.5::decimal(4,1) as amount
union all select 2, 'shipped', 20.0
""",
    "models/orders.sql": "select order_id, status, amount from {{ ref('stg_orders') }}\n",
    "models/order_totals.sql": "select status, sum(amount) as total from {{ ref('orders') }} group by status\n",
}
_PROJECT = """
name: {name}
version: "1.0.0"
config-version: 2
profile: {name}
model-paths: ["models"]
models:
  {name}:
    +materialized: table
"""
_PROFILES = """
{name}:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{{{{ env_var('ADE_DUCKDB_PATH') }}}}"
      schema: main
      threads: 1
"""
_ADE_YAML = """
home: {home}
warehouses:
  shop:
    type: duckdb
    path: ${{ADE_HOME}}/warehouse/shop.duckdb
dbt:
  project_dir: {project}
  profiles_dir: {project}
  warehouse: shop
mcp:
  toolsets: [{toolsets}]
"""


def materialize(settings: Settings, select: str = "group:dbt_models") -> tuple[int, str]:
    """`ade materialize` in-process: (exit code, its output)."""
    from ade_platform.ops import materialize as run

    out = io.StringIO()
    code = run(settings, select, out=out)
    return code, out.getvalue()


@contextlib.contextmanager
def materialized_shop(
    root: Path,
    name: str,
    extra: dict[str, str] | None = None,
    toolsets: tuple[str, ...] = ("dbt-artifacts",),
    sections: str = "",
) -> Iterator[tuple[Path, Settings]]:
    """The project `name` under root (MODELS plus `extra` files), its ade.yaml (plus `sections`, more of it),
    everything materialized once: yields (the ade.yaml, its settings). DAGSTER_HOME and ADE_DUCKDB_PATH are
    restored afterwards."""
    project = root / name
    files = {"dbt_project.yml": _PROJECT.format(name=name), "profiles.yml": _PROFILES.format(name=name)}
    for rel, text in {**files, **MODELS, **(extra or {})}.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text.lstrip())
    config = root / "ade.yaml"
    text = _ADE_YAML.format(home=root / "ade", project=project, toolsets=", ".join(toolsets))
    config.write_text(text + sections)
    with environment({}, unset=["DAGSTER_HOME"]):
        env = {k: v for k, v in os.environ.items() if k not in ("ADE_HOME", "ADE_CONFIG")}
        settings = load_settings(config, env=env)
        code, log = materialize(settings, "*")
        assert code == 0, log[-3000:]
        yield config, settings


def run_dbt(project: Path, warehouse: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """dbt run the way a terminal runs it: in the project folder, with its own target/ and logs/."""
    executable = Path(sys.executable).parent / "dbt"
    return subprocess.run(
        [str(executable if executable.exists() else "dbt"), *args, "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, "ADE_DUCKDB_PATH": str(warehouse)},
        capture_output=True,
        text=True,
        timeout=600,
    )
