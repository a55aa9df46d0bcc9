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
from mcp_bridge.toolsets.snowfakery.tools import PARAMETERS, SnowfakeryTools

INSTRUCTIONS = """Author, validate and run Snowfakery recipes (snowfakery_version 3). Recipes run only in a sandbox: \
no network, no environment, files inside the workspace, rows/bytes/time capped. Errors are JSON {error, detail, hint} \
with kind, filename and line.
Loop: read the schema and an example, draft, snowfakery.validate_recipe, snowfakery.run_recipe with reps: 1, then \
snowfakery.explain_errors on failure.
Tools:
- snowfakery.list_capabilities: version, formats, limits, allowed plugins, the discovery resources.
- snowfakery.list_examples / snowfakery.get_example: example recipes by feature.
- snowfakery.get_schema: the recipe JSON Schema. snowfakery.search_docs: ranked doc snippets.
- snowfakery.validate_recipe: CLI --validate-only --strict-mode, plus schema and policy checks.
- snowfakery.analyze_recipe: tables, relationships, options, plugins, risks (nothing runs).
- snowfakery.run_recipe: generate (txt/json/csv/sql/diagrams); audited; outputs become run resources.
- snowfakery.render_diagram: Graphviz diagram of a small run. snowfakery.generate_mapping: CumulusCI mapping.
- snowfakery.format_recipe: stable re-indentation. snowfakery.explain_errors: each error's rule and smallest fix.
- snowfakery.draft_recipe: your model drafts through MCP sampling, the server validates and feeds errors back.
Resources:
- snowfakery://schema/recipe-jsonschema; snowfakery://docs/index, snowfakery://docs/extending, \
snowfakery://docs/salesforce, snowfakery://docs/architecture, any page as snowfakery://docs/<page>.
- snowfakery://examples/list and snowfakery://examples/<name>.
- snowfakery://providers/list (Faker methods, fake: spelling, examples), snowfakery://plugins/list (allowed \
plugins and functions), snowfakery://formats/info (what each output format needs).
- snowfakery://runs/<run_id>/recipe, stdout, output.json, output.sql, csv/ (and csv/<file>), diagram.<format>, \
continuation.yml, mapping.yml.
Prompts: author_recipe (draft and validate a new recipe; use it where draft_recipe cannot sample), debug_recipe \
(smallest fix for an error), explain_recipe, refactor_recipe_for_reuse (macros, include_file), build_plugin_stub.
"""


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset("snowfakery", INSTRUCTIONS, parameters=PARAMETERS, cites_snapshots=False)
    tools = SnowfakeryTools(ctx)
    add_tools(server, tools, published_name=lambda method: ctx.tool_name(f"snowfakery.{method}"))
    resources.register(server, tools.services)
    prompts.register(server)
    # started once the gateway's first tools/list is answered (mcp_bridge/startup.py), not while it starts
    server.warm_ups.append(lambda: tools.services.warm(server))
    return server
