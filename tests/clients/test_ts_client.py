"""A second MCP client, not FastMCP's: the TypeScript SDK's (tests/clients/ts/client.mjs), against `ade mcp` over
stdio and over HTTP, on the current revision (2026-07-28, SDK v2: @modelcontextprotocol/client) and on 2025-11-25
(SDK v2 in its legacy mode, and SDK v1: @modelcontextprotocol/sdk, which many hosts still ship).

Each run connects, lists the tools (the raw result: cache hints on 2026-07-28, none on 2025-11-25), calls a cached
tool (dbt_get_lineage) and the task-capable dbtcloud_poll_run as plain calls, and on 2026-07-28 runs
dbtcloud_poll_run as a task (the tasks extension: a task id at once, progress in tasks/get, then the result).
`make ts-client` installs the packages (npm ci, pinned by package-lock.json); without Node or them the tests skip
and say why."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from ade_platform.emulators.dbt_cloud import CI_JOB, DEMO_TOKEN
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.incidents.model import transition
from ade_platform.store import StoreWriter
from mcp_bridge.tasks import LIST_TTL_SECONDS
from tests.mcp.dbt_cloud_support import running_emulator
from tests.processes import ADE, mcp_over_http

pytestmark = pytest.mark.integration
HERE = Path(__file__).parent / "ts"
CURRENT, PREVIOUS = "2026-07-28", "2025-11-25"
NODE = "model.p.a"


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the second MCP client is the TypeScript SDK's")
    for package in ("client", "sdk"):
        if not (HERE / "node_modules" / "@modelcontextprotocol" / package).is_dir():
            pytest.skip(
                "the TypeScript SDK is not installed: run `make ts-client` (npm ci in tests/clients/ts)"
            )
    return node


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`ade mcp` configured with the dbt-cloud (against the emulator, a run held queued) and dbt-artifacts toolsets,
    a lineage index in its store; its HTTP URL, and how to start it over stdio."""
    node = node_or_skip()
    with running_emulator(tmp_path_factory.mktemp("dbtcloud"), history=False) as emulator:
        emulator.hold_runs(True)  # the run stays queued: a wait on it lasts until its timeout
        settings = emulator.settings()
        manifest = {
            "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
            "nodes": {NODE: {"resource_type": "model", "name": "a", "depends_on": {"nodes": []}}},
        }
        StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(manifest))
        run_id = emulator.queue_run(CI_JOB, "second client test")
        env = {
            "ADE_CONFIG": str(settings.home / "ade.yaml"),
            "ADE_HOME": str(settings.home),
            "DBT_CLOUD_API_TOKEN": DEMO_TOKEN,
        }
        with mcp_over_http({**os.environ, **env}) as (url, _port):
            yield {"node": node, "url": url, "env": env, "run_id": run_id}


def run_client(gateway: dict[str, Any], sdk: str, revision: str, transport: str) -> dict[str, Any]:
    run_id = gateway["run_id"]
    plan: dict[str, Any] = {
        "sdk": sdk,
        "revision": revision,
        "transport": transport,
        "cached": {"name": "dbt_get_lineage", "arguments": {"node_id": NODE, "direction": "upstream"}},
        "plain": {"name": "dbtcloud_poll_run", "arguments": {"run_id": run_id, "timeout_seconds": 0}},
        "task": {"name": "dbtcloud_poll_run", "arguments": {"run_id": run_id, "timeout_seconds": 2}},
    }
    if transport == "stdio":
        plan.update(command=ADE, args=["mcp"], env=gateway["env"])
    else:
        plan["url"] = gateway["url"]
    done = subprocess.run(
        [gateway["node"], "client.mjs", json.dumps(plan)],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, (done.stdout[-3000:], done.stderr[-3000:])
    return json.loads(lines[-1])


@pytest.mark.parametrize(
    ("sdk", "revision", "transport"),
    [
        ("v2", CURRENT, "http"),
        # over stdio the SDK probes the revision on a process of its own: four gateway starts, about a minute
        pytest.param("v2", CURRENT, "stdio", marks=pytest.mark.slow),
        ("v2", PREVIOUS, "stdio"),
        ("v1", PREVIOUS, "http"),
    ],
)
def test_the_typescript_client(gateway: dict[str, Any], sdk: str, revision: str, transport: str) -> None:
    out = run_client(gateway, sdk, revision, transport)
    assert out["protocolVersion"] == revision, out
    assert {"dbt_get_lineage", "dbtcloud_poll_run", "dbtcloud_trigger_job"} <= set(out["tools"])
    if revision == CURRENT:  # the list is fixed for the life of the gateway's process
        assert out["listHints"] == {"ttlMs": LIST_TTL_SECONDS * 1000, "cacheScope": "private"}
    else:
        assert out["listHints"] == {"ttlMs": None, "cacheScope": None}

    cached = out["cached"]
    assert cached["isError"] is False, cached
    lineage = cached["structuredContent"]
    assert [n["node_id"] for n in lineage["nodes"]] == [NODE] and lineage["provenance"]["source"] == "cache"

    plain = out["plain"]  # no task asked for: the tool answers in the call, as it always did
    assert plain["isError"] is False, plain
    polled = plain["structuredContent"]
    assert (
        polled["run_id"] == gateway["run_id"] and polled["status"] == "queued" and polled["timed_out"] is True
    )
    assert polled["provenance"]["source"] == "live"

    if revision == PREVIOUS:  # 2025-11-25 has no extensions: nothing runs as a task there
        assert "task" not in out
        return
    task = out["task"]
    assert task.get("error") is None and len(task["taskId"]) >= 40, task
    assert task["statuses"][0] == "working" and task["statuses"][-1] == "completed", task
    assert any(m.startswith(f"run {gateway['run_id']} queued after") for m in task["messages"]), task
    answer = task["result"]["structuredContent"]
    assert answer["timed_out"] is True and answer["status"] == "queued" and answer["status_checks"] >= 2


@pytest.mark.slow  # a gateway with the incidents toolset starts for it
@pytest.mark.parametrize(("sdk", "transport"), [("v1", "http"), ("v2", "stdio")])
def test_the_typescript_client_hears_incidents_it_subscribed_to(
    tmp_settings: Settings, sdk: str, transport: str
) -> None:
    """Push to a client that is not FastMCP's, on 2025-11-25 (what most hosts speak): it subscribes to
    ade://incidents/open, and hears a person acknowledge the incident elsewhere (written to the store's journal,
    as another replica's incident_update writes it) and detection open a second one."""
    from tests.mcp.test_incident_push_processes import _env
    from tests.mcp.test_incident_tools import detect, finding

    node = node_or_skip()
    journal = detect(tmp_settings, [finding("warehouse:demo:table:main.orders", "schema_change", "t1")])
    (ident,) = journal.state().incidents
    plan: dict[str, Any] = {
        "sdk": sdk,
        "revision": PREVIOUS,
        "transport": transport,
        "listen": {"uri": "ade://incidents/open", "count": 2, "timeout_ms": 30_000},
    }
    env = _env(tmp_settings)
    with contextlib.ExitStack() as stack:
        if transport == "http":
            plan["url"], _ = stack.enter_context(mcp_over_http(env))
        else:
            plan.update(command=ADE, args=["mcp"], env=env)
        client = subprocess.Popen(
            [node, "client.mjs", json.dumps(plan)], cwd=HERE, stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            ready = client.stdout.readline()  # type: ignore[union-attr]
            assert json.loads(ready) == {"ready": True}, ready
            time.sleep(2.0)  # the gateway's journal watcher takes its baseline
            journal.change(
                lambda state: [
                    transition(state, ident, "acknowledge", by="someone-else", note="on it", at=time.time())
                ]
            )
            time.sleep(1.5)
            detect(tmp_settings, [finding("dbt:model:orders", "failed_model", "t7")], 3000.0)
            out, _ = client.communicate(timeout=60)
        finally:
            client.kill()
    report = json.loads(out.strip().splitlines()[-1])
    # the acknowledgement, then detection (the new incident, and the first one's cause no longer seen)
    assert len(report["heard"]) >= 2 and set(report["heard"]) == {"ade://incidents/open"}, report
    listed = json.loads(report["read"][0])
    statuses = {i["id"]: i["status"] for i in listed["incidents"]}
    assert statuses[ident] == "acknowledged" and len(statuses) == 2, listed
