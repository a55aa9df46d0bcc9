"""The snowfakery tools: each method of SnowfakeryTools marked `@tool` is one tool (published as
`snowfakery.<method>`), its signature and docstring the published ones."""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from ade_platform.lib import paging
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import READ_ONLY, tool
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, NamePattern
from mcp_bridge.toolsets.schemas.snowfakery import (
    Analysis,
    Capabilities,
    DiagramAnswer,
    DocSearch,
    DraftAnswer,
    ErrorExplanations,
    ExampleAnswer,
    ExampleList,
    FormatAnswer,
    MappingAnswer,
    ReportedError,
    RunAnswer,
    SchemaAnswer,
    TargetNumber,
    Validation,
)
from mcp_bridge.toolsets.snowfakery.service import ServiceHolder, audited_run, example_item, example_uri

SEARCH_HITS = 100  # the best hits of a docs search, paged
SANDBOXED = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
WRITES_WORKSPACE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
)
# adds a run folder of the server's own (pruned beyond max_runs_kept, as run_recipe's are); no workspace file
WRITES_RUN_FOLDER = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
OutputFormat = Literal["txt", "json", "csv", "sql", "dot", "svg", "svgz", "png", "jpeg", "jpg", "ps"]
DiagramFormat = Literal["dot", "svg", "svgz", "png", "jpeg", "jpg", "ps"]
OptionValue = str | int | float | bool

RecipePath = Annotated[
    str | None,
    Field(
        max_length=1000,
    ),
]
RecipeText = str | None
Options = dict[str, OptionValue] | None
PluginOptions = dict[str, OptionValue] | None

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "recipe_path": (
        "Recipe file relative to the workspace root, or an example URI snowfakery://examples/<name>. Give "
        "this or recipe_text."
    ),
    "recipe_text": "Recipe YAML text; relative include_file and dataset paths resolve from the workspace root.",
    "options, plugin_options": "As --option name value and --plugin-option name value.",
}
Reps = Annotated[int | None, Field(ge=1, description="Repetitions (not with target_number).")]
TargetArg = Annotated[
    TargetNumber | None, Field(description="Run until table has count rows (not with reps).")
]


class SnowfakeryTools:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.services = ServiceHolder(ctx.settings)

    @tool(READ_ONLY)
    def list_capabilities(self) -> Capabilities:
        """Snowfakery version, output formats, language features and this server's limits (reps, rows, time,
        plugins, database URLs)."""
        with self.services.scrubbed() as service:
            return service.capabilities()

    @tool(READ_ONLY)
    def list_examples(
        self,
        prefix: Annotated[str | None, Field(max_length=200)] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ExampleList:
        """Snowfakery example recipes, one per language feature, with a short description and resource URI.
        Paged; prefix and name_pattern filter on the name."""
        with self.services.scrubbed() as service:
            examples = service.content.examples(prefix)
            answer = {
                "examples": [example_item(e) for e in examples],
                "count": len(examples),
                "source": service.content.source("examples"),
            }
        named = paging.name_matcher(name_pattern)
        return paging.page_answer(  # type: ignore[return-value]
            answer, "examples", limit, cursor, query=("list_examples", prefix, name_pattern),
            item_key=lambda e: e["name"], keep=lambda e: named(e["name"]),
        )  # fmt: skip

    @tool(READ_ONLY)
    def get_example(
        self,
        name: Annotated[str, Field(min_length=1, max_length=300, description="From list_examples.")],
    ) -> ExampleAnswer:
        """The text of one Snowfakery example recipe. Run it as
        run_recipe(recipe_path="snowfakery://examples/<name>") so its includes resolve."""
        with self.services.scrubbed() as service:
            example = service.content.example(name)
            if example is None:
                raise SnowfakeryError("example_not_found", f"no example named {name!r}")
            return {
                "name": example.name,
                "description": example.description,
                "recipe_text": example.path.read_text(encoding="utf-8"),
                "uri": example_uri(example.name),
                "provenance": {
                    "source": service.content.source("examples"),
                    "path": f"examples/{example.relative}",
                },
            }

    @tool(READ_ONLY)
    def get_schema(self) -> SchemaAnswer:
        """The Snowfakery recipe JSON Schema (also the resource snowfakery://schema/recipe-jsonschema)."""
        with self.services.scrubbed() as service:
            return {
                "schema": service.content.schema,
                "uri": "snowfakery://schema/recipe-jsonschema",
                "source": service.content.source("schema"),
            }

    @tool(READ_ONLY)
    def search_docs(
        self,
        query: Annotated[str, Field(min_length=1, max_length=500)],
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
        cursor: Cursor = None,
    ) -> DocSearch:
        """Search the Snowfakery docs: ranked snippets with doc path, heading and URI. Paged."""
        with self.services.scrubbed() as service:
            hits = service.content.search(query, SEARCH_HITS)
        version = paging.live_version(hits, key=lambda h: (h["doc"], h["line"]))
        shown = paging.page(
            hits, limit, cursor, version=version, query=("search_docs", query), cap=20, default=5,
            total=len(hits) if len(hits) < SEARCH_HITS else None,
        )  # fmt: skip
        return {"query": query, "results": shown.items, "count": len(shown.items), **shown.fields()}  # type: ignore[typeddict-item]

    @tool(SANDBOXED)
    def validate_recipe(
        self,
        recipe_path: RecipePath = None,
        recipe_text: RecipeText = None,
        strict_mode: Annotated[
            bool,
            Field(description="false: parse only."),
        ] = True,
        schema_validate: Annotated[bool, Field(description="Also check the JSON schema (warnings).")] = True,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> Validation:
        """Validate a Snowfakery recipe without generating data (like --validate-only --strict-mode). Returns
        errors with file and line, warnings, and features the server refuses to run."""
        with self.services.scrubbed() as service:
            source = service.source(recipe_path, recipe_text)
            return service.validate(
                source,
                strict_mode=strict_mode,
                schema_validate=schema_validate,
                options=options,
                plugin_options=plugin_options,
            )

    @tool(READ_ONLY)
    def analyze_recipe(self, recipe_path: RecipePath = None, recipe_text: RecipeText = None) -> Analysis:
        """What a Snowfakery recipe will generate, from its YAML alone: tables, fields, counts, relationships,
        plugins, includes and risk flags. Nothing runs."""
        with self.services.scrubbed() as service:
            return service.analyze(service.source(recipe_path, recipe_text))

    @tool(WRITES_WORKSPACE, task=True)
    def run_recipe(
        self,
        recipe_path: RecipePath = None,
        recipe_text: RecipeText = None,
        options: Options = None,
        plugin_options: PluginOptions = None,
        reps: Reps = None,
        target_number: TargetArg = None,
        output_format: Annotated[OutputFormat, Field(description="csv writes a folder.")] = "txt",
        capture_output: Annotated[
            bool, Field(description="Inline, capped; the whole output is a resource.")
        ] = True,
        output_file_path: Annotated[
            str | None, Field(max_length=1000, description="A workspace file.")
        ] = None,
        output_folder_path: Annotated[
            str | None,
            Field(max_length=1000, description="csv: a workspace folder."),
        ] = None,
        continuation_file_path: Annotated[
            str | None,
            Field(
                max_length=1000,
                description="Workspace path or snowfakery://runs/<id>/continuation.yml.",
            ),
        ] = None,
        generate_continuation_file_path: Annotated[
            str | None,
            Field(max_length=1000, description="A workspace path."),
        ] = None,
        generate_continuation: Annotated[
            bool, Field(description="As the run resource continuation.yml.")
        ] = False,
        validate_only: bool = False,
        strict_mode: Annotated[bool, Field(description="CLI --strict-mode.")] = True,
        seed: int | None = None,
        dburl: Annotated[
            str | None,
            Field(max_length=2000, description="Write to a database (if the server allows)."),
        ] = None,
        overwrite: bool = False,
        update_input_file: Annotated[
            str | None,
            Field(
                max_length=1000,
                description="A workspace CSV: the recipe (one object, no count) runs once per row, reading "
                "${{input.<column>}}.",
            ),
        ] = None,
        update_passthrough_fields: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=256)]] | None,
            Field(
                max_length=200,
                description="Input columns copied unchanged.",
            ),
        ] = None,
        timeout_seconds: Annotated[
            float | None, Field(gt=0, description="Below the server's timeout.")
        ] = None,
        cause: Annotated[
            str | None, Field(max_length=500, description="Why (kept in the audit trail).")
        ] = None,
    ) -> RunAnswer:
        """Generate data from a Snowfakery recipe in the sandbox (live, audited) and return a summary, the
        output (capped) and resource URIs. Give reps or target_number, not both; workspace files are written
        only after success."""
        from ade_platform.lib.snowfakery.runs import RunParams, prepare_run
        from ade_platform.lib.snowfakery.runs import run_recipe as execute

        with self.services.scrubbed() as service:
            source = service.source(recipe_path, recipe_text)
            if validate_only:
                verdict = service.validate(source, options=options, plugin_options=plugin_options)
                return {"run_id": None, "validate_only": True, **verdict}
            params = RunParams(
                reps=reps,
                target_table=target_number.table if target_number else None,
                target_count=target_number.count if target_number else None,
                options=dict(options or {}),
                plugin_options=dict(plugin_options or {}),
                output_format=output_format,
                capture_output=capture_output,
                output_file_path=output_file_path,
                output_folder_path=output_folder_path,
                continuation_file_path=continuation_file_path,
                generate_continuation_file_path=generate_continuation_file_path,
                generate_continuation=generate_continuation,
                strict_mode=strict_mode,
                seed=seed,
                dburl=dburl,
                overwrite=overwrite,
                timeout_seconds=timeout_seconds,
                update_input_file=update_input_file,
                update_passthrough_fields=tuple(update_passthrough_fields or ()),
            )
            audit = {
                "recipe": source.display,
                "recipe_text": recipe_text[:500] if recipe_text else None,
                "options": options,
                "reps": reps,
                "target_number": target_number.model_dump() if target_number else None,
                "output_format": output_format,
                "output_file_path": output_file_path,
                "output_folder_path": output_folder_path,
                "dburl": "***" if dburl else None,
                "update_input_file": update_input_file,
            }
            plan = prepare_run(service, source, params)  # refused requests never start a run
            value, provenance = self.ctx.live_call(
                "snowfakery.run_recipe",
                lambda: execute(service, source, params, plan),
                arguments=audit,
                cause=cause,
                # without a database URL a run writes only its run folder and workspace files: the durable
                # fast path (journaled intent, audit run recorded after the answer); a database is outside
                effects="external" if dburl else "workspace",
            )
            answer = {**value, "provenance": provenance}
            if update_input_file:
                answer["update_input_file"] = service.workspace.display(plan["update_input"])
            return answer

    @tool(WRITES_RUN_FOLDER)
    def render_diagram(
        self,
        recipe_path: RecipePath = None,
        recipe_text: RecipeText = None,
        format: Annotated[DiagramFormat, Field(description="Not dot: needs Graphviz.")] = "dot",
        options: Options = None,
        plugin_options: PluginOptions = None,
        reps: Reps = None,
    ) -> DiagramAnswer:
        """Render a Snowfakery recipe's rows as a Graphviz diagram (a small audited run) and return its resource
        URI; dot and svg also inline. svg, png and the like need Graphviz on the server."""
        from ade_platform.lib.snowfakery.runs import RunParams

        with self.services.scrubbed() as service:
            source = service.source(recipe_path, recipe_text)
            params = RunParams(
                reps=reps,
                options=dict(options or {}),
                plugin_options=dict(plugin_options or {}),
                output_format=format,
            )
            answer = audited_run(self.ctx, "snowfakery.render_diagram", service, source, params)
            uri = f"snowfakery://runs/{answer['run_id']}/diagram.{format}"
            return {
                "run_id": answer["run_id"],
                "format": format,
                "diagram_uri": uri,
                "diagram_text": answer.get("stdout_text"),
                "truncated": answer.get("truncated", False),
                "summary": answer["summary"],
                "resources": answer["resources"],
            }

    @tool(WRITES_RUN_FOLDER)
    def generate_mapping(
        self,
        recipe_path: RecipePath = None,
        recipe_text: RecipeText = None,
        load_declarations_paths: Annotated[
            list[str] | None, Field(description="Workspace paths of CumulusCI load declarations.")
        ] = None,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> MappingAnswer:
        """A CumulusCI mapping file for a Snowfakery recipe (like --generate-cci-mapping-file), from one audited
        run of one repetition."""
        from ade_platform.lib.snowfakery.runs import RunParams

        with self.services.scrubbed() as service:
            source = service.source(recipe_path, recipe_text)
            params = RunParams(
                reps=1,
                options=dict(options or {}),
                plugin_options=dict(plugin_options or {}),
                capture_output=False,
                generate_mapping=True,
                load_declarations_paths=tuple(load_declarations_paths or ()),
            )
            answer = audited_run(self.ctx, "snowfakery.generate_mapping", service, source, params)
            return {
                "run_id": answer["run_id"],
                "mapping_yaml": answer.get("mapping_yaml", ""),
                "truncated": answer.get("mapping_truncated", False),
                "mapping_uri": f"snowfakery://runs/{answer['run_id']}/mapping.yml",
                "tables": sorted(answer["summary"]["tables"]),
                "resources": answer["resources"],
            }

    @tool(READ_ONLY)
    def format_recipe(self, recipe_path: RecipePath = None, recipe_text: RecipeText = None) -> FormatAnswer:
        """Re-indent a Snowfakery recipe in one stable style, keeping comments; the data it describes never
        changes. Nothing is written."""
        with self.services.scrubbed() as service:
            return service.format(service.source(recipe_path, recipe_text))

    @tool(SANDBOXED)
    def explain_errors(
        self,
        recipe_path: RecipePath = None,
        recipe_text: RecipeText = None,
        error: Annotated[
            ReportedError | str | None,
            Field(
                description="What validate_recipe or run_recipe returned (object or message); default: "
                "the validation errors."
            ),
        ] = None,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> ErrorExplanations:
        """Why a Snowfakery recipe fails and the smallest edit that fixes it: per error, the construct,
        location, rule broken and a before/after fix. Nothing is generated; no model is used."""
        with self.services.scrubbed() as service:
            source = service.source(recipe_path, recipe_text)
            if isinstance(error, str):
                reported = [{"message": error}]
            else:
                reported = error.problems() if error is not None else []
            return service.explain_errors(
                source,
                [r for r in reported if r.get("message")],
                options=options,
                plugin_options=plugin_options,
            )

    @tool(SANDBOXED)
    async def draft_recipe(
        self,
        description: Annotated[
            str,
            Field(
                min_length=1, max_length=4000, description="The data wanted: objects, relationships, volume."
            ),
        ],
        ctx: Context,
        target_schema: Annotated[
            str | None,
            Field(
                max_length=20_000, description="Tables and columns the rows must fit (DDL, JSON or prose)."
            ),
        ] = None,
        max_rounds: Annotated[int, Field(ge=1, le=5, description="Drafts to ask for at most.")] = 3,
    ) -> DraftAnswer:
        """Draft a Snowfakery recipe from a description with the client's model, validating each draft until one is
        valid. Nothing runs. Round trips on 2026-07-28, MCP sampling before; without either, use the author_recipe
        prompt."""
        from mcp_bridge.toolsets.snowfakery.drafting import draft_recipe

        return await draft_recipe(self.services, ctx, description, target_schema, max_rounds)
