"""A team's agents share one gateway (issue 35, item 3): many MCP sessions at once over HTTP get the cached answers
of the snapshot version that is current when they ask, and a version published while the gateway runs replaces
the one it holds in memory for every session, without a restart.

The gateway's HTTP app as `ade mcp --transport http` builds it, served by uvicorn on loopback (in a thread);
the store is written beside it as Dagster's materializations write it, through `StoreWriter`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.config import load_settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreWriter
from tests.auth.support import threaded_gateway
from tests.helpers import tool_payload

SESSIONS = 12
ROOT = "model.p.root"


def _manifest(children: list[str]) -> dict[str, Any]:
    """`root` and one model per name in `children`, each depending on root."""
    nodes = {ROOT: {"resource_type": "model", "name": "root", "depends_on": {"nodes": []}}}
    for child in children:
        nodes[f"model.p.{child}"] = {"resource_type": "model", "name": child, "depends_on": {"nodes": [ROOT]}}
    return {
        "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
        "nodes": nodes,
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, StoreWriter]]:
    cfg = tmp_path / "ade.yaml"
    cfg.write_text(f"home: {tmp_path / 'home'}\nmcp:\n  toolsets: [dbt-artifacts]\n")
    writer = StoreWriter(load_settings(cfg, env={}).store_root)
    writer.publish(
        "dbt_lineage_index", build_lineage_index(_manifest(["first_a", "first_b"])), run_id="run-1"
    )
    with threaded_gateway(load_settings(cfg, env={})) as url:
        yield url, writer


async def _downstream_of_root(clients: list[Client], rounds: int) -> list[tuple[bool, Any]]:
    """Every session asks `rounds` times, all sessions at once."""

    async def ask(client: Client) -> list[tuple[bool, Any]]:
        answers = []
        for _ in range(rounds):
            result = await client.call_tool(
                "dbt_get_lineage", {"node_id": ROOT, "direction": "downstream"}, raise_on_error=False
            )
            answers.append(tool_payload(result))
        return answers

    per_client = await asyncio.gather(*(ask(c) for c in clients))
    return [answer for answers in per_client for answer in answers]


def _children(body: dict[str, Any]) -> set[str]:
    return {node["node_id"] for node in body["nodes"]} - {ROOT}


def test_sessions_at_once_get_the_version_current_when_they_ask(served: tuple[str, StoreWriter]) -> None:
    url, writer = served

    async def go() -> tuple[list[tuple[bool, Any]], list[tuple[bool, Any]]]:
        clients = [Client(url) for _ in range(SESSIONS)]
        for client in clients:
            await client.__aenter__()
        try:
            before = await _downstream_of_root(clients, 3)
            # a new version published while the gateway serves: no restart, no signal
            writer.publish(
                "dbt_lineage_index",
                build_lineage_index(_manifest(["second_a", "second_b", "second_c"])),
                run_id="run-2",
            )
            after = await _downstream_of_root(clients, 3)
        finally:
            for client in clients:
                await client.__aexit__(None, None, None)
        return before, after

    before, after = asyncio.run(go())
    assert len(before) == len(after) == SESSIONS * 3
    assert all(ok for ok, _ in before + after), [body for ok, body in before + after if not ok][:1]
    assert {frozenset(_children(body)) for _, body in before} == {
        frozenset({"model.p.first_a", "model.p.first_b"})
    }
    assert {body["provenance"]["run_id"] for _, body in before} == {"run-1"}
    assert {frozenset(_children(body)) for _, body in after} == {
        frozenset({"model.p.second_a", "model.p.second_b", "model.p.second_c"})
    }
    assert {body["provenance"]["run_id"] for _, body in after} == {"run-2"}
