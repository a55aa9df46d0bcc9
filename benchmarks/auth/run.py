"""What signing callers in costs per call (issue 28): the same cached answer over HTTP with no token (loopback), the
shared token, and `auth: oidc` (a JWT checked against the issuer's JWKS, cached after the first call; then the
caller's roles and the tool's classification).

    python -m benchmarks.auth.run [--quick]

Each mode is the gateway's own HTTP app (`mcp_bridge.server.http_gateway`) served by uvicorn on loopback; one MCP
session per mode calls `dbt_get_lineage` on a small lineage index, rounds interleaved across the modes. Also the
token check alone (`OidcTokenVerifier.verify_token`, keys cached) and the access decision alone.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from fastmcp import Client

from ade_platform.config import load_settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreWriter
from benchmarks.synthetic import synthetic_manifest
from benchmarks.timing import fmt_ms, pct
from tests.auth.support import LocalIssuer, oidc_settings, threaded_gateway

SHARED_TOKEN = "b" * 48


def _settings(root: Path, mode: str, issuer: str) -> Any:
    root.mkdir(parents=True)
    if mode == "oidc":
        return oidc_settings(root, issuer)
    token = f"  http:\n    token: {SHARED_TOKEN}\n" if mode == "shared token" else ""
    (root / "ade.yaml").write_text(f"home: {root / 'home'}\nmcp:\n  toolsets: [dbt-artifacts]\n{token}")
    return load_settings(root / "ade.yaml", env={})


async def _calls(url: str, token: str | None, node: str, repeats: int) -> list[float]:
    samples = []
    async with Client(url, auth=token) as client:
        await client.call_tool(
            "dbt_get_lineage", {"node_id": node, "direction": "upstream"}
        )  # warm: JWKS, caches
        for _ in range(repeats):
            started = time.perf_counter()
            await client.call_tool("dbt_get_lineage", {"node_id": node, "direction": "upstream"})
            samples.append(time.perf_counter() - started)
    return samples


def _verify_alone(issuer: LocalIssuer, audience: str, repeats: int) -> list[float]:
    from mcp_bridge.http_security import OidcTokenVerifier

    verifier = OidcTokenVerifier(jwks_uri=f"{issuer.url}/jwks", issuer=issuer.url, audience=[audience])
    token = issuer.token("alice", audience=audience, scopes="ade:read", groups=["analysts"])

    async def go() -> list[float]:
        assert await verifier.verify_token(token) is not None  # fetches the keys once
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            await verifier.verify_token(token)
            samples.append(time.perf_counter() - started)
        return samples

    return asyncio.run(go())


def _decide_alone(repeats: int) -> list[float]:
    from mcp.types import ToolAnnotations

    from ade_platform.config import AccessSettings
    from ade_platform.lib.caller import Caller
    from mcp_bridge.access import AccessPolicy, classify

    policy = AccessPolicy(AccessSettings(groups={"analysts": ["reader"]}))
    caller = Caller(
        "alice", "agent", scopes=frozenset({"ade:read"}), groups=frozenset({"analysts"}), signed_in=True
    )
    annotations = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        policy.allows(policy.roles(caller), classify("dbt_get_lineage", annotations).effect, "dbt-artifacts")
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, per_round = (3, 30) if args.quick else (10, 60)
    manifest = synthetic_manifest(200)
    node = next(uid for uid, n in manifest["nodes"].items() if n.get("resource_type") == "model")
    modes = ["no token (loopback)", "shared token", "oidc"]
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp, LocalIssuer() as issuer, ExitStack() as stack:
        urls: dict[str, tuple[str, str | None]] = {}
        for i, mode in enumerate(modes):
            settings = _settings(Path(tmp) / f"m{i}", mode, issuer.url)
            StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(manifest))
            url = stack.enter_context(threaded_gateway(settings))
            token = {
                "shared token": SHARED_TOKEN,
                "oidc": issuer.token("alice", audience=url, scopes="ade:read"),
            }
            urls[mode] = (url, token.get(mode))
        for _ in range(rounds):
            for mode in modes:
                url, token = urls[mode]
                samples[mode] += asyncio.run(_calls(url, token, node, per_round))
        fetches = issuer.jwks_fetches
        verify = _verify_alone(issuer, urls["oidc"][0], rounds * per_round)
    decide = _decide_alone(rounds * per_round)
    print(f"dbt_get_lineage over HTTP, one MCP session per mode, {rounds} x {per_round} calls interleaved")
    for mode in modes:
        print(f"    {mode:22s} {fmt_ms(samples[mode])}")
    base = pct(samples[modes[0]], 50)
    for mode in modes[1:]:
        print(f"    {mode}: adds {(pct(samples[mode], 50) - base) * 1000:+.2f} ms per call at p50")
    print(f"    JWKS fetched {fetches} time(s) by the oidc gateway in all (cached between calls)")
    print(f"token check alone (OidcTokenVerifier, keys cached)   {fmt_ms(verify)}")
    print(f"access decision alone (roles + classification)      {fmt_ms(decide)}")


if __name__ == "__main__":
    main()
