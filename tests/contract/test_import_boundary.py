"""The gateway's cached path must not import Dagster nor any toolset's heavy client: that keeps MCP start-up fast.

Run with the demo's ade.yaml and with every toolset on and every section configured (Snowflake on the connector
transport, Airflow, Prefect, Looker, Metabase, dbt Cloud, cross-stack lineage): mounting a toolset and answering a
cached tool must load neither a client library nor the SQL parser; they load on a live tool's first call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# Loaded only by a live tool (or a Dagster run): the drivers and SDKs of every toolset, the recipe engine, dbt and
# the SQL parser the guardrail and lineage parse with. (`requests` is not listed: inlining the tools' schemas
# loads it through jsonref at a start that derives them; a start that finds them cached does not, see below.)
HEAVY = (
    "dagster",
    "dagster_dbt",
    "dbt",
    "duckdb",
    "httpx",
    "looker_sdk",
    "boto3",
    "botocore",
    "snowflake.connector",
    "google.cloud",
    "snowfakery",
    "faker",
    "sqlalchemy",
    "sqlglot",
    "regex",
    "psycopg",
    "pandas",
    "pyarrow",
)
ALL_TOOLSETS_CONFIG = REPO_ROOT / "tests" / "contract" / "ade.all_toolsets.yaml"

PROGRAM = textwrap.dedent(
    """
    import asyncio, json, sys, tempfile
    from fastmcp import Client
    before = set(sys.modules)  # the in-memory client's own imports are not the gateway's
    from ade_platform.config import load_settings
    from ade_platform.lib.dbt.lineage import build_lineage_index
    from ade_platform.store import StoreWriter
    from mcp_bridge.server import build_server

    home = sys.argv[3]
    settings = load_settings(sys.argv[1], env={"ADE_HOME": home})
    if settings.dbt is not None:  # not the project's own target/ (a demo-full or a team's build may fill it)
        from pathlib import Path
        watched = settings.dbt.model_copy(update={"target_path": Path(home) / "team-target"})
        settings = settings.model_copy(update={"dbt": watched})
    manifest = {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                "nodes": {"model.p.a": {"resource_type": "model", "name": "a", "depends_on": {"nodes": []}}}}
    StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(manifest))

    async def main():
        async with Client(build_server(settings)) as client:
            await client.list_tools()
            result = await client.call_tool("dbt_get_lineage", {"node_id": "model.p.a", "direction": "upstream"})
            assert result.structured_content["total_nodes"] == 1
    asyncio.run(main())
    heavy = tuple(sys.argv[2].split(","))
    loaded = set(sys.modules) - before
    print(json.dumps(sorted(m for m in loaded if m in heavy or m.startswith(tuple(h + "." for h in heavy)))))
    """
)


def cached_path_imports(config: str, home: Path, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules a gateway process imports to mount every toolset and answer one cached tool."""
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM, config, ",".join(heavy), str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("config", ["ade.yaml", "tests/contract/ade.all_toolsets.yaml"])
def test_cached_path_imports_no_client_library(config: str, tmp_path: Path) -> None:
    loaded = cached_path_imports(str(REPO_ROOT / config), tmp_path)
    assert loaded == [], f"the cached MCP path imported: {loaded}"


def test_a_start_with_cached_tool_schemas_derives_nothing(tmp_path: Path) -> None:
    """The second start in a home reads the tools' schemas (mcp_bridge/tool_schemas.py): neither the
    `$ref` inliner nor what it pulls in is imported."""
    inliner = ("jsonref", "requests")
    assert cached_path_imports(str(ALL_TOOLSETS_CONFIG), tmp_path, inliner) != [], "the first start derives"
    loaded = cached_path_imports(str(ALL_TOOLSETS_CONFIG), tmp_path, HEAVY + inliner)
    assert loaded == [], f"a start with every schema cached imported: {loaded}"


def test_all_toolsets_config_turns_every_toolset_and_section_on() -> None:
    """The config above is only a proof if it really mounts everything with its client configured."""
    from ade_platform.config import TOOLSETS, load_settings

    settings = load_settings(ALL_TOOLSETS_CONFIG, env={"ADE_HOME": "/nonexistent-ade-home"})
    assert settings.mcp.toolsets == list(TOOLSETS)
    assert settings.snowflake is not None and settings.snowflake.transport == "connector"
    assert settings.bi.tools == ["looker", "metabase"]
    assert settings.dbt_cloud is not None
    assert settings.orchestrators.airflow is not None and settings.orchestrators.prefect is not None
    assert settings.lineage.builders
