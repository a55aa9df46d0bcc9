"""The scale-out profile end to end, as docs/DEPLOYING.md describes it, with real servers on loopback:
docs/deploy/ade.yaml, Dagster on PostgreSQL, the store on an S3-compatible server, two gateway replicas.

The demo is materialized into that deployment by `ade materialize`; two `ade mcp --transport http` processes
(bearer token) answer the same calls identically, with the same provenance; a live tool called on one replica is
recorded in the one Postgres-backed Dagster instance.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.deploy.conftest import S3_ENV, _creds
from tests.processes import free_port, wait_for_http

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]
REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "docs" / "deploy" / "ade.yaml"
TOKEN = "replica-test-token-" + "0123456789abcdef"  # mcp.http.token needs 32+ characters
CALLS = [
    ("dbt_get_lineage", {"node_id": "model.dbt_demo.customers", "direction": "upstream"}),
    ("dbt_get_failed_models", {}),
    ("warehouse_get_schema", {"schema_name": "main"}),
    ("lineage_trace", {"start_kind": "dbt_node", "start": "orders", "direction": "upstream"}),
]


def _ade() -> str:
    return str(Path(sys.executable).parent / "ade")


def _strip_age(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_age(v) for k, v in value.items() if k not in ("age_seconds", "elapsed_ms")}
    if isinstance(value, list):
        return [_strip_age(v) for v in value]
    return value


async def _answers(url: str) -> list[Any]:
    from fastmcp import Client
    from fastmcp.client.auth import BearerAuth

    out = []
    async with Client(url, auth=BearerAuth(TOKEN)) as client:
        for name, args in CALLS:
            result = await client.call_tool(name, args, raise_on_error=False)
            assert not result.is_error, (name, result.content[0].text[:500])
            out.append(result.structured_content)
    return out


def test_dagster_on_postgres_store_on_s3_two_replicas_answer_identically(
    tmp_path: Path, s3_endpoint: str, postgres_url: str
) -> None:
    bucket = f"ade-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, **_creds()).create_bucket(Bucket=bucket)
    env = {
        **os.environ,
        **S3_ENV,
        "ADE_CONFIG": str(PROFILE),
        "ADE_HOME": str(tmp_path / "writer"),
        "ADE_STORE_URL": f"s3://{bucket}/store",
        "ADE_S3_ENDPOINT": s3_endpoint,
        "ADE_S3_ACCESS_KEY_ID": S3_ENV["AWS_ACCESS_KEY_ID"],
        "ADE_S3_SECRET_ACCESS_KEY": S3_ENV["AWS_SECRET_ACCESS_KEY"],
        "ADE_DAGSTER_PG_URL": postgres_url,
        "ADE_MCP_TOKEN": TOKEN,
    }
    env.pop("DAGSTER_HOME", None)
    done = subprocess.run([_ade(), "materialize"], env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The store lives in the bucket, not on the writer's disk.
    assert not (tmp_path / "writer" / "store").exists()
    keys = boto3.client("s3", endpoint_url=s3_endpoint, **_creds()).list_objects_v2(
        Bucket=bucket, Prefix="store/"
    )
    assert keys.get("KeyCount", 0) > 10

    replicas = []
    urls = []
    try:
        for i in (1, 2):
            port = free_port()
            # Each replica has a home of its own (another machine); only the warehouse file is shared here,
            # as a remote warehouse would be.
            home = tmp_path / f"replica{i}"
            (home / "warehouse").mkdir(parents=True)
            (home / "warehouse" / "demo.duckdb").symlink_to(tmp_path / "writer" / "warehouse" / "demo.duckdb")
            proc = subprocess.Popen(
                [_ade(), "mcp", "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
                env={**env, "ADE_HOME": str(home)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            replicas.append(proc)
            urls.append(f"http://127.0.0.1:{port}/mcp")
            wait_for_http(f"http://127.0.0.1:{port}/mcp", proc, timeout=120)
        first, second = (asyncio.run(_answers(u)) for u in urls)
        assert _strip_age(first) == _strip_age(second)
        for answer in first:
            assert answer["provenance"]["source"] == "cache" and answer["provenance"]["run_id"]
        # A live tool on replica 2 is audited in the one Postgres-backed instance.
        from fastmcp import Client
        from fastmcp.client.auth import BearerAuth

        async def live() -> Any:
            async with Client(urls[1], auth=BearerAuth(TOKEN)) as client:
                return await client.call_tool("warehouse_execute", {"sql": "select 42 as answer"})

        result = asyncio.run(live())
        run_id = result.structured_content["provenance"]["run_id"]
        assert run_id
        # (the replicas stay up while the audit run is written in the background)
        probe_env = {
            **env,
            "ADE_DAGSTER_PG_URL": postgres_url.replace("postgresql://", "postgresql+psycopg2://"),
        }
        lines = _probe_run(tmp_path / "replica2" / "dagster", run_id, probe_env)
    finally:
        for proc in replicas:
            proc.terminate()
            proc.wait(30)
    assert lines[:1] == ["PostgresRunStorage"], lines
    assert lines[-1:] == ["True"], "the live run is not in the Postgres instance"


def _probe_run(dagster_home: Path, run_id: str, env: dict[str, str]) -> list[str]:
    """What another process sees in the instance: its run storage class, and whether the run is there."""

    probe = (
        "import sys\n"
        "from dagster import DagsterInstance\n"
        "inst = DagsterInstance.from_config(sys.argv[1])\n"
        "print(type(inst.run_storage).__name__)\n"
        "print(inst.get_run_by_id(sys.argv[2]) is not None)\n"
    )
    deadline = time.monotonic() + 120
    while True:
        out = subprocess.run(
            [sys.executable, "-c", probe, str(dagster_home), run_id],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = out.stdout.split()
        if lines[-1:] == ["True"] or time.monotonic() > deadline:
            return lines or [out.stderr[-500:]]
        time.sleep(2)
