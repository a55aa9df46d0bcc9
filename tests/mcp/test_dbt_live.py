"""dbt runs outside ADE reach the answers with no Dagster daemon running, failed ones included.

Served as an agent host runs it: `ade mcp` over stdio (a project this test generates), or the in-memory client on
the materialized demo's settings, and nothing else: no `ade dev`, no sensor. After materialization, real dbt runs
outside ADE, in the project's own folder, as a terminal or a team's scheduler would:
(a) a failing `dbt build` (a model reads a column its upstream no longer has) -> dbt_get_failed_models names it;
(b) a project that no longer parses (`dbt build` exits 2 and writes no artifact) -> the answers say stale, and
    carry the failed invocation and its error from dbt's own log;
(c) fixed and built green -> current again, stale: false.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from ade_platform.config import DbtSettings, Settings
from ade_platform.lib.dbt.refresh import BY_GATEWAY
from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.shop_project import materialized_shop, run_dbt

# Real dbt runs and a real `ade materialize` (minutes on a loaded machine).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A generated project materialized once with `ade materialize`: (its ade.yaml, the project folder)."""
    with materialized_shop(tmp_path_factory.mktemp("live"), "live_shop") as (config, settings):
        yield config, settings.dbt.project_dir  # type: ignore[union-attr]


def test_a_stdio_gateway_with_no_daemon_reports_outside_runs_failed_and_unparsable(
    shop: tuple[Path, Path], tmp_path: Path
) -> None:
    config, project = shop
    warehouse = config.parent / "ade" / "warehouse" / "shop.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "ADE_HOME")}
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "ade_platform.cli", "mcp", "--server", "dbt-artifacts"],
        env={**env, "ADE_CONFIG": str(config)},
        cwd=str(tmp_path),
        keep_alive=False,
        log_file=tmp_path / "server.log",
    )
    stg, orders = project / "models" / "stg_orders.sql", project / "models" / "orders.sql"
    good_stg, good_orders = stg.read_text(), orders.read_text()

    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(transport, timeout=120) as client:

            async def call(tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
                result = await client.call_tool(tool, args or {})
                return result.structured_content  # type: ignore[return-value]

            async def dbt(*args: str) -> int:
                return (await asyncio.to_thread(run_dbt, project, warehouse, *args)).returncode

            seen["before"] = await call("dbt_get_failed_models")
            # (a) the upstream loses a column its downstream reads; the build fails at run time.
            stg.write_text("select 1::integer as order_id, 'placed'::varchar as status\n")
            seen["a_exit"] = await dbt("build")
            seen["a"] = await call("dbt_get_failed_models")
            # (b) a Jinja syntax error: dbt stops at parse (exit 2), writes no artifact; its log in JSON lines.
            orders.write_text("select order_id, status from {{ ref('stg_orders') \n")
            seen["b_exit"] = await dbt("build", "--log-format-file", "json")
            seen["b"] = await call("dbt_get_failed_models")
            seen["b_lineage"] = await call("dbt_get_lineage", {"node_id": "orders", "direction": "upstream"})
            # (c) fixed and built green.
            stg.write_text(good_stg)
            orders.write_text(good_orders)
            seen["c_exit"] = await dbt("build")
            seen["c"] = await call("dbt_get_failed_models")
        return seen

    try:
        seen = asyncio.run(session())
    finally:
        stg.write_text(good_stg)
        orders.write_text(good_orders)
    assert seen["before"]["failed"] == [] and seen["before"]["provenance"]["stale"] is False, seen["before"]

    assert seen["a_exit"] == 1
    a = seen["a"]
    assert [f["name"] for f in a["failed"]] == ["orders"], a
    assert "order_totals" in {s["name"] for s in a["skipped"]}
    prov = a["provenance"]
    assert prov["stale"] is False and prov["published_by"] == BY_GATEWAY, prov
    assert a["invocation"]["this_run"] is True and a["invocation"]["status"] == "error", a["invocation"]

    assert seen["b_exit"] == 2
    b = seen["b"]
    invocation = b["invocation"]
    assert invocation["status"] == "parse_error" and invocation["command"] == "build", invocation
    assert invocation["this_run"] is False
    assert invocation["wrote_artifacts"] is False and "Compilation Error" in invocation["error"], invocation
    assert any("orders" in n for n in invocation["failed_nodes"]), invocation
    assert b["provenance"]["stale"] is True, b["provenance"]
    assert invocation["invocation_id"][:8] in b["provenance"]["stale_reason"]
    assert "parse" in b["provenance"]["stale_reason"]
    assert [f["name"] for f in b["failed"]] == ["orders"]  # still the last run that wrote results, flagged
    assert seen["b_lineage"]["provenance"]["stale"] is True, seen["b_lineage"]["provenance"]
    assert str(project) not in invocation["error"]

    assert seen["c_exit"] == 0
    c = seen["c"]
    assert c["failed"] == [] and c["provenance"]["stale"] is False, c
    assert c["invocation"]["status"] == "success" and c["invocation"]["this_run"] is True
    assert "Traceback" not in (tmp_path / "server.log").read_text()


@pytest.fixture
def demo_copy(demo_settings: Settings, tmp_path: Path) -> Iterator[tuple[Settings, Path, Path]]:
    """The materialized demo's store, warehouse and dbt project, copied: the test breaks them freely."""
    assert demo_settings.dbt is not None
    project = tmp_path / "dbt_demo"
    shutil.copytree(
        demo_settings.dbt.project_dir, project, ignore=shutil.ignore_patterns("target", "logs", "*.duckdb")
    )
    store = tmp_path / "store"
    shutil.copytree(demo_settings.store_root, store)
    warehouse = tmp_path / "demo.duckdb"
    shutil.copy2(demo_settings.warehouses["demo"].path, warehouse)  # type: ignore[union-attr]
    dbt = DbtSettings(project_dir=project, profiles_dir=project, warehouse="demo")
    settings = demo_settings.model_copy(
        update={
            "home": tmp_path / "home",
            "dbt": dbt,
            "store": demo_settings.store.model_copy(update={"root": str(store)}),
        }
    )
    yield settings, project, warehouse


def test_the_demo_with_no_daemon_reports_outside_runs_failed_and_unparsable(
    demo_copy: tuple[Settings, Path, Path],
) -> None:
    settings, project, warehouse = demo_copy

    def failed_models() -> dict[str, Any]:
        # A new MCP session each time, no daemon and no sensor: only the store and the project folder.
        ok, answer = call_tool(build_server(settings, only="dbt-artifacts"), "dbt_get_failed_models")
        assert ok, answer
        return answer

    before = failed_models()
    assert before["provenance"]["stale"] is False and "invocation" not in before, before
    stg = project / "models" / "staging" / "stg_orders.sql"
    good = stg.read_text()
    # (a) stg_orders stops passing `amount` on; orders reads it.
    stg.write_text(good.replace("        amount,\n", ""))
    run = run_dbt(project, warehouse, "build", "--select", "stg_orders+")
    assert run.returncode == 1, run.stdout[-3000:]
    a = failed_models()
    assert "orders" in {f["name"] for f in a["failed"]}, a
    assert a["provenance"]["stale"] is False and a["provenance"]["published_by"] == BY_GATEWAY
    # (b) a model that refers to a model that does not exist: dbt stops before running anything.
    stg.write_text(good)
    (project / "models" / "marts" / "broken.sql").write_text("select * from {{ ref('no_such_model') }}\n")
    run = run_dbt(project, warehouse, "build", "--select", "stg_orders+")
    assert run.returncode == 2, run.stdout[-3000:]
    b = failed_models()
    assert b["provenance"]["stale"] is True and "parse" in b["provenance"]["stale_reason"], b["provenance"]
    assert b["invocation"]["status"] == "parse_error" and "no_such_model" in b["invocation"]["error"]
    assert "model.dbt_demo.broken" in b["invocation"]["failed_nodes"]
    # (c) fixed: green, current.
    (project / "models" / "marts" / "broken.sql").unlink()
    run = run_dbt(project, warehouse, "build", "--select", "stg_orders+")
    assert run.returncode == 0, run.stdout[-3000:]
    c = failed_models()
    assert c["failed"] == [] and c["provenance"]["stale"] is False, c
    assert c["invocation"]["status"] == "success" and c["invocation"]["this_run"] is True
