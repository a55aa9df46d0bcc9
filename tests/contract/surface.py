"""The published MCP surface (tools, resources, templates, prompts), as a stable JSON document."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastmcp import Client

from ade_platform.config import load_settings
from mcp_bridge.server import build_server
from tests.conftest import REPO_ROOT

SNAPSHOT = REPO_ROOT / "tests" / "contract" / "tool_surface.json"


async def _surface() -> dict[str, Any]:
    # A home that does not exist: the surface must not depend on what has been materialized.
    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": "/nonexistent/ade-home"})
    async with Client(build_server(settings)) as client:
        tools = await client.list_tools()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
    return {
        "tools": {
            t.name: {
                "description": t.description,
                "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                if t.annotations
                else None,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
            }
            for t in sorted(tools, key=lambda t: t.name)
        },
        "resources": sorted(str(r.uri) for r in resources),
        "resource_templates": sorted(str(t.uri_template) for t in templates),
        "prompts": {
            p.name: sorted(a.name for a in (p.arguments or [])) for p in sorted(prompts, key=lambda p: p.name)
        },
    }


def current_surface() -> dict[str, Any]:
    return json.loads(json.dumps(asyncio.run(_surface()), sort_keys=True, default=str))
