"""`ade mcp --server dbt-artifacts --target-path DIR` over stdio: any dbt target folder, no Dagster."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import CORPUS, REPO_ROOT

SET = CORPUS / "dbt-artifacts" / "yu-iskw__dbt-artifacts-parser__1.12.0"


def test_stdio_serves_a_corpus_target_folder(tmp_path: Path) -> None:
    if not (SET / "manifest.json").exists():
        pytest.skip("../shared/corpus/dbt-artifacts is not present (CI has it)")
    facts = json.loads((SET / "facts.json").read_text())
    uid = facts["chosen_model"]["unique_id"]
    env = {**os.environ, "ADE_HOME": str(tmp_path / "home"), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml")}
    env.pop("DAGSTER_HOME", None)
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "ade_platform.cli", "mcp", "--server", "dbt-artifacts", "--target-path", str(SET)],
        env=env,
        cwd=str(tmp_path),
        keep_alive=False,
        log_file=tmp_path / "server.log",
    )

    async def session() -> tuple[list[str], dict, dict]:
        async with Client(transport, timeout=60) as client:
            names = [t.name for t in await client.list_tools()]
            lineage = await client.call_tool(
                "dbt_get_lineage", {"node_id": uid, "direction": "upstream", "depth": 1}
            )
            tests = await client.call_tool("dbt_get_model_tests", {"model_name": uid.rsplit(".", 1)[-1]})
            return names, lineage.structured_content, tests.structured_content

    names, lineage, tests = asyncio.run(session())
    assert "dbt_get_column_lineage" in names and not any(n.startswith("fs_") for n in names)
    assert {n["node_id"] for n in lineage["nodes"] if n["depth"] == 1} == set(
        facts["chosen_model"]["direct_parents"]
    )
    assert sorted(t["test_id"] for t in tests["tests"]) == sorted(
        facts["chosen_model"]["tests_depending_on_model"]
    )
    assert lineage["provenance"]["source"] == "cache"
