"""Cached answers from an S3-backed store (moto's server on loopback) against the local store.

    python -m benchmarks.store_s3.run [--quick]

- cold: a new gateway's first dbt_get_lineage answer (pointer + provenance + data + checksum + parse);
- warm: the steady state, through MCP (in-memory client): local = one stat of the pointer per answer, S3 = one HEAD
  of the pointer per answer (its ETag is the cache key), S3 with `pointer_ttl_seconds: 1` = no HEAD within a second;
- poll: the pointer check alone (stat vs HEAD), per request.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import S3Options, StoreLocation, StoreReader, StoreWriter
from ade_platform.store.location import open_root
from benchmarks.synthetic import synthetic_manifest
from benchmarks.timing import fmt_ms, pct, quick_mode

CREDS = {"access_key_id": "bench", "secret_access_key": "bench-secret", "region": "us-east-1"}


def _moto() -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url, timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto did not start")


async def _warm(server: Any, repeats: int) -> list[float]:
    from fastmcp import Client

    args = {"node_id": "model.synthetic.mart_0", "direction": "upstream", "depth": 2}
    async with Client(server) as client:
        await client.call_tool("dbt_get_lineage", args)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            await client.call_tool("dbt_get_lineage", args)
            times.append(time.perf_counter() - started)
    return times


def _settings(home: Path, root: str | None, ttl: float = 0, endpoint: str | None = None) -> Any:
    """The demo configuration with the store moved (the dbt-artifacts tools need its dbt section)."""
    import yaml

    from ade_platform.config import load_settings

    repo = Path(__file__).resolve().parents[2]
    raw = yaml.safe_load((repo / "ade.yaml").read_text())
    raw["store"] = {
        **(raw.get("store") or {}),
        "pointer_ttl_seconds": ttl,
        **({"root": root} if root else {}),
    }
    if endpoint:
        raw["store"]["s3"] = {"endpoint_url": endpoint, **CREDS}
    raw["mcp"]["toolsets"] = ["dbt-artifacts"]
    for key in ("dbt", "datasets"):
        for field in ("project_dir", "profiles_dir", "recipes_dir"):
            if field in (raw.get(key) or {}):
                raw[key][field] = str(repo / raw[key][field])
    path = home / f"ade-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_settings(path, env={**os.environ, "ADE_HOME": str(home)})


def _cold(root: str | StoreLocation, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        StoreReader(root).latest("dbt_lineage_index").data  # noqa: B018
        times.append(time.perf_counter() - started)
    return times


def _poll(root: str | StoreLocation, repeats: int) -> list[float]:
    r = open_root(root)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        r.signature("dbt_lineage_index/LATEST")
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    quick = quick_mode()
    repeats = 20 if quick else 200
    from mcp_bridge.server import build_server

    proc, endpoint = _moto()
    try:
        import boto3

        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=CREDS["access_key_id"],
            aws_secret_access_key=CREDS["secret_access_key"],
            region_name=CREDS["region"],
        ).create_bucket(Bucket=bucket)
        for nodes in (1_000,) if quick else (1_000, 10_000):
            with tempfile.TemporaryDirectory() as tmp:
                home = Path(tmp)
                url = f"s3://{bucket}/n{nodes}"
                s3 = StoreLocation(url, S3Options(endpoint_url=endpoint, **CREDS))
                index = build_lineage_index(synthetic_manifest(nodes))
                local = str(home / "store")
                StoreWriter(local).publish("dbt_lineage_index", index)
                StoreWriter(s3).publish("dbt_lineage_index", index)
                print(f"lineage index of {nodes} nodes")
                cold_n = max(3, repeats // 40)
                lc, sc = _cold(local, cold_n), _cold(s3, cold_n)
                print(f"    cold read  local {fmt_ms(lc)}")
                print(f"    cold read  s3    {fmt_ms(sc)}   ratio {pct(sc, 50) / pct(lc, 50):.2f}x")
                lw = asyncio.run(_warm(build_server(_settings(home, None)), repeats))
                sw = asyncio.run(_warm(build_server(_settings(home, url, endpoint=endpoint)), repeats))
                tw = asyncio.run(_warm(build_server(_settings(home, url, ttl=1, endpoint=endpoint)), repeats))
                print(f"    warm answer local          {fmt_ms(lw)}")
                print(f"    warm answer s3 (HEAD/call) {fmt_ms(sw)}   ratio {pct(sw, 50) / pct(lw, 50):.2f}x")
                print(f"    warm answer s3 (ttl 1 s)   {fmt_ms(tw)}   ratio {pct(tw, 50) / pct(lw, 50):.2f}x")
                lp, sp = _poll(local, repeats), _poll(s3, repeats)
                print(f"    pointer poll  stat {fmt_ms(lp)}   HEAD {fmt_ms(sp)}")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
