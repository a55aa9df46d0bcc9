"""Everything materialized into a temp ADE_HOME/DAGSTER_HOME, then answered over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from ade_platform.config import Settings
from tests.conftest import REPO_ROOT
from tests.processes import ADE, mcp_over_http

pytestmark = pytest.mark.integration
ORDERS = "model.dbt_demo.orders"
TOKEN = "test-token-123-" + "0123456789abcdefgh"  # mcp.http.token needs 32+ characters


def _env(settings: Settings) -> dict[str, str]:
    return {**os.environ, "ADE_HOME": str(settings.home), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml")}


async def _ask(client: Client) -> tuple[list[str], dict]:
    tools = [t.name for t in await client.list_tools()]
    result = await client.call_tool("dbt_get_lineage", {"node_id": ORDERS, "direction": "upstream"})
    return tools, result.structured_content


def _check_answer(tools: list[str], body: dict, settings: Settings) -> None:
    assert "dbt_get_lineage" in tools
    names = {n["name"] for n in body["nodes"]}
    assert {"orders", "stg_orders", "stg_payments"} <= names
    assert any(n["resource_type"] == "source" for n in body["nodes"])
    prov = body["provenance"]
    assert prov["asset"] == "dbt_lineage_index" and prov["source"] == "cache" and prov["run_id"]
    assert prov["age_seconds"] < 3600


def test_demo_materialized_state(demo_settings: Settings) -> None:
    from ade_platform.store import StoreReader

    reader = StoreReader(demo_settings.store_root)
    sources = reader.latest("dbt_sources").data
    assert sorted(r["status"] for r in sources["results"]) == ["error", "pass", "warn"]
    run_results = reader.latest("dbt_run_results").data
    statuses = [r["status"] for r in run_results["results"]]
    assert statuses.count("warn") == 1 and "error" not in statuses and "fail" not in statuses
    index = reader.latest("dbt_lineage_index").data
    assert any(rec["resource_type"] == "exposure" for rec in index["nodes"].values())
    schema = reader.latest("warehouse_schema_demo").data
    assert {"raw.customers", "main.orders"} <= {f"{t['schema']}.{t['name']}" for t in schema["tables"]}
    # dbt's own output goes to a log file, not between the progress lines.
    assert "Done. PASS=" in (demo_settings.home / "logs" / "materialize.log").read_text()
    # dagster-dbt must not write into the repository's dbt project.
    assert not (REPO_ROOT / "dbt_demo" / "target" / "dbt_project_models").exists()


def test_status_reports_every_asset_fresh(demo_settings: Settings) -> None:
    proc = subprocess.run(
        [ADE, "status", "--json"], env=_env(demo_settings), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["asset"]: r for r in json.loads(proc.stdout)}
    assert rows["dbt_lineage_index"]["run_id"] and rows["dbt_lineage_index"]["stale"] is False
    assert all(r["last_materialized"] for r in rows.values()), [
        a for a, r in rows.items() if not r["last_materialized"]
    ]


def test_lineage_over_stdio(demo_settings: Settings) -> None:
    transport = StdioTransport(command=ADE, args=["mcp"], env=_env(demo_settings), cwd=str(REPO_ROOT))

    async def go() -> tuple[list[str], dict]:
        async with Client(transport) as client:
            return await _ask(client)

    tools, body = asyncio.run(go())
    _check_answer(tools, body, demo_settings)


def test_lineage_over_http_and_token_off_loopback(demo_settings: Settings) -> None:
    with mcp_over_http(_env(demo_settings)) as (url, port):

        async def go() -> tuple[list[str], dict]:
            async with Client(url) as client:
                return await _ask(client)

        tools, body = asyncio.run(go())
        _check_answer(tools, body, demo_settings)
    # Off loopback without a token, the gateway refuses to start and says why.
    refused = subprocess.run(
        [ADE, "mcp", "--transport", "http", "--host", "0.0.0.0", "--port", str(port)],
        env={**_env(demo_settings), "ADE_MCP_TOKEN": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "bearer token is required" in refused.stderr


def test_http_with_token_rejects_missing_bearer(demo_settings: Settings) -> None:
    with mcp_over_http({**_env(demo_settings), "ADE_MCP_TOKEN": TOKEN}) as (url, _):
        unauthenticated = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=5)
        assert unauthenticated.status_code == 401

        async def go() -> tuple[list[str], dict]:
            async with Client(url, auth=TOKEN) as client:
                return await _ask(client)

        tools, body = asyncio.run(go())
        _check_answer(tools, body, demo_settings)
