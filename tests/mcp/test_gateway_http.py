"""The gateway over HTTP on loopback is safe from the browser (issue 23 §3).

A web page the user opens can send requests to 127.0.0.1: with DNS rebinding (its own name resolves to
127.0.0.1, so the browser sends `Host: attacker.example:PORT`) or cross-site (`Origin: http://attacker.example`).
Both are refused with 403 before any MCP handling; a normal client (Host 127.0.0.1:PORT, no Origin) works.
The real `ade mcp --transport http` is started as a subprocess; the proof that a refused tools/call runs nothing
uses the same HTTP app (same options) in a thread, with a probe tool that counts its calls.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from ade_platform.config import Settings, load_settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreWriter
from mcp_bridge.http_security import SharedTokenVerifier, http_auth, http_options
from mcp_bridge.server import build_server
from tests.helpers import initialize_request
from tests.processes import ADE, free_port, mcp_over_http

LONG_TOKEN = "t" * 31 + "k"  # exactly the minimum length
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = initialize_request("attacker-page")
MANIFEST = {
    "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
    "nodes": {"model.p.a": {"resource_type": "model", "name": "a", "depends_on": {"nodes": []}}},
}


def _config(tmp_path: Path, extra: str = "") -> Path:
    cfg = tmp_path / "ade.yaml"
    cfg.write_text(f"home: {tmp_path / 'home'}\nmcp:\n  toolsets: [dbt-artifacts]\n{extra}")
    return cfg


def _env(cfg: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADE_", "DAGSTER_HOME"))}
    return {**env, "ADE_CONFIG": str(cfg), **extra}


def _post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(url, content=json.dumps(body), headers={**ACCEPT, **headers}, timeout=10)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """`ade mcp --transport http` on a free loopback port, no token (the loopback default)."""
    cfg = _config(tmp_path)
    settings = load_settings(cfg, env={})
    StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(MANIFEST))
    with mcp_over_http(_env(cfg)) as (url, port):
        yield url, port


def test_rebinding_host_and_foreign_origin_are_refused(gateway: tuple[str, int]) -> None:
    url, port = gateway
    attacks = {
        "rebinding": {"host": f"attacker.example:{port}"},
        "rebinding, origin of the same page": {
            "host": f"attacker.example:{port}",
            "origin": f"http://attacker.example:{port}",
        },
        "right name, wrong port": {"host": f"127.0.0.1:{port + 1}"},
        "cross-site": {"origin": "http://attacker.example"},
        "another local web app": {"origin": "http://localhost:3000"},
        "sandboxed frame": {"origin": "null"},
    }
    for name, headers in attacks.items():
        refused = _post(url, INITIALIZE, **headers)
        assert refused.status_code == 403, (name, refused.status_code, refused.text)
        body = refused.json()
        assert body["error"] in ("host_not_allowed", "origin_not_allowed") and body["detail"], name
        assert "mcp-session-id" not in refused.headers, name  # no session was created
        assert "serverInfo" not in refused.text, name
    # The same request from a normal client, and from a browser on the gateway's own origin, is served.
    for headers in ({}, {"origin": f"http://localhost:{port}"}, {"host": f"localhost:{port}"}):
        served = _post(url, INITIALIZE, **headers)
        assert served.status_code == 200 and served.headers.get("mcp-session-id"), (headers, served.text)


def test_a_normal_client_still_gets_answers(gateway: tuple[str, int]) -> None:
    url, _ = gateway

    async def go() -> dict[str, Any]:
        async with Client(url) as client:
            result = await client.call_tool(
                "dbt_get_lineage", {"node_id": "model.p.a", "direction": "upstream"}
            )
            return result.structured_content

    body = asyncio.run(go())
    assert body["root_node"] == "model.p.a" and body["provenance"]["source"] == "cache"


def test_refused_tool_calls_run_nothing(tmp_path: Path) -> None:
    """A session opened legitimately; then tools/call with a foreign Host or Origin: 403 and the tool never
    runs. The app is the gateway's own, built with the options `ade mcp --transport http` uses."""
    import uvicorn

    settings = load_settings(_config(tmp_path), env={})
    port = free_port()
    server = build_server(settings)
    calls: list[str] = []

    @server.tool(name="probe_side_effect")
    def probe_side_effect(note: str) -> str:
        calls.append(note)
        return "ran"

    server.auth = http_auth(settings, "127.0.0.1")
    app = server.http_app(**http_options(settings, "127.0.0.1", port))
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while not uv.started:
            assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
            time.sleep(0.05)
        opened = _post(url, INITIALIZE)
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)

        def call(note: str, **headers: str) -> httpx.Response:
            body = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "probe_side_effect", "arguments": {"note": note}},
            }
            return _post(url, body, **session, **headers)

        assert call("rebinding", host=f"attacker.example:{port}").status_code == 403
        assert call("cross-site", origin="http://attacker.example").status_code == 403
        assert calls == []
        ok = call("legitimate")
        assert ok.status_code == 200 and "ran" in ok.text, ok.text
        assert calls == ["legitimate"]
    finally:
        uv.should_exit = True
        thread.join(timeout=15)


def _serve_once(cfg: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ADE, "mcp", "--transport", "http", "--port", str(free_port()), *args],
        env=_env(cfg, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_short_token_and_unnamed_public_host_stop_start_up(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "  http:\n    token: ${ADE_MCP_TOKEN:-}\n")
    short = "s3cret-but-short"
    refused = _serve_once(cfg, ADE_MCP_TOKEN=short)
    assert refused.returncode == 2 and "mcp.http.token" in refused.stderr, refused.stderr
    assert "at least 32 characters" in refused.stderr and short not in refused.stderr
    # Every interface, with a good token but no host names to answer to: refused, naming the key.
    everywhere = _serve_once(cfg, "--host", "0.0.0.0", ADE_MCP_TOKEN=LONG_TOKEN)
    assert everywhere.returncode == 2 and "mcp.http.allowed_hosts" in everywhere.stderr, everywhere.stderr


def test_off_loopback_the_configured_public_name_is_the_allow_list(tmp_path: Path) -> None:
    settings: Settings = load_settings(
        _config(tmp_path, "  http:\n    allowed_hosts: [mcp.example.com]\n"), env={}
    )
    middleware = http_options(settings, "0.0.0.0", 8765)["middleware"][0]
    policy = middleware.kwargs["policy"]
    assert policy.refusal(["mcp.example.com"], []) is None
    assert policy.refusal(["localhost:8765"], []) is None
    assert policy.refusal(["attacker.example"], []) == "host_not_allowed"
    assert policy.refusal(["0.0.0.0:8765"], []) == "host_not_allowed"
    assert policy.refusal(["mcp.example.com"], ["https://attacker.example"]) == "origin_not_allowed"


def test_token_is_compared_exactly() -> None:
    verifier = SharedTokenVerifier(LONG_TOKEN)

    async def verify(token: str) -> bool:
        return await verifier.verify_token(token) is not None

    async def go() -> list[bool]:
        return [
            await verify(t) for t in (LONG_TOKEN, LONG_TOKEN[:-1], LONG_TOKEN + "x", "", LONG_TOKEN.upper())
        ]

    assert asyncio.run(go()) == [True, False, False, False, False]
