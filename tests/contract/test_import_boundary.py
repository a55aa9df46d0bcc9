"""The gateway's cached path must not import Dagster: that keeps MCP start-up fast."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO_ROOT

PROGRAM = textwrap.dedent(
    """
    import asyncio, json, sys, tempfile
    from fastmcp import Client
    from ade_platform.config import load_settings
    from ade_platform.lib.dbt.lineage import build_lineage_index
    from ade_platform.store import StoreWriter
    from mcp_bridge.server import build_server

    home = tempfile.mkdtemp()
    settings = load_settings(sys.argv[1], env={"ADE_HOME": home})
    manifest = {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                "nodes": {"model.p.a": {"resource_type": "model", "name": "a", "depends_on": {"nodes": []}}}}
    StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(manifest))

    async def main():
        async with Client(build_server(settings)) as client:
            await client.list_tools()
            result = await client.call_tool("dbt_get_lineage", {"node_id": "model.p.a", "direction": "upstream"})
            assert result.structured_content["total_nodes"] == 1
    asyncio.run(main())
    print(json.dumps(sorted(m for m in sys.modules if m == "dagster" or m.startswith(("dagster.", "dagster_")))))
    """
)


def test_cached_path_does_not_import_dagster() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(REPO_ROOT / "ade.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = proc.stdout.strip().splitlines()[-1]
    assert loaded == "[]", f"the cached MCP path imported Dagster modules: {loaded}"
