"""snowfakery: author, validate and run Snowfakery recipes safely (the snowfakery spec, server `snowfakery`).

Resource-forward: the language guide, examples and recipe JSON schema are resources, and every run's
artifacts become `snowfakery://runs/<run_id>/...` resources (see resources.py); prompts are in
prompts.py. Tools take `recipe_path` (relative to the workspace root, or an example URI
`snowfakery://examples/<name>`) or `recipe_text`. Recipes never run in this process: a sandboxed child
runs them with a timeout, output caps, no network and no environment. `run_recipe` is a live, audited
Dagster run (recorded just after the answer, through the audit journal, unless it writes to a database
URL: then the run happens inside it). Tool names are the spec's, prefixed `snowfakery.`.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import add_tools, new_toolset
from mcp_bridge.toolsets.snowfakery import prompts, resources
from mcp_bridge.toolsets.snowfakery.tools import SnowfakeryTools

INSTRUCTIONS = (
    "Author, validate and run Snowfakery recipes. Read snowfakery://schema/recipe-jsonschema, "
    "snowfakery://docs/index and an example first; validate with snowfakery.validate_recipe; run a "
    "small sample (reps: 1) with snowfakery.run_recipe; large outputs are snowfakery://runs/<id>/... "
    "resources. Errors carry kind, filename and line."
)


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset("snowfakery", INSTRUCTIONS)
    tools = SnowfakeryTools(ctx)
    add_tools(server, tools, published_name=lambda method: ctx.tool_name(f"snowfakery.{method}"))
    resources.register(server, tools.services)
    prompts.register(server)
    return server
