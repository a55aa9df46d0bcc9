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
    "options": "Recipe options, like --option name value.",
    "plugin_options": "Plugin options, like --plugin-option name value.",
}
Reps = Annotated[
    int | None, Field(ge=1, description="Repeat the recipe this many times (exclusive with target_number).")
]
TargetArg = Annotated[TargetNumber | None, Field(description="Stopping criterion (exclusive with reps).")]


class SnowfakeryTools:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.services = ServiceHolder(ctx.settings)

    @tool(READ_ONLY)
    def list_capabilities(self) -> Capabilities:
        """Snowfakery version, supported output formats, language features and this server's limits.

        Limits: max_reps, max_target_count, max_rows, timeout_seconds, output caps; whether database
        URLs and network access are allowed; the plugin allow-list; where docs/examples/schema come from.
        """
        with self.services.scrubbed() as service:
            return service.capabilities()

    @tool(READ_ONLY)
    def list_examples(
        self,
        prefix: Annotated[
            str | None, Field(max_length=200, description="Only names starting with this.")
        ] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ExampleList:
        """Example recipes (one per language feature, or the configured docs folder's examples).

        Each has a name, a short description from its first comment block, and its resource URI. Paged
        (limit, cursor -> next_cursor; docs/PAGING.md); prefix and name_pattern filter on the name.
        """
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
        name: Annotated[
            str, Field(min_length=1, max_length=300, description="Example name from list_examples.")
        ],
    ) -> ExampleAnswer:
        """The text of one example recipe, with where it comes from.

        Run it as is with run_recipe(recipe_path="snowfakery://examples/<name>") so that its include
        files and datasets resolve.
        """
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
        """The recipe JSON Schema (also the resource snowfakery://schema/recipe-jsonschema)."""
        with self.services.scrubbed() as service:
            return {
                "schema": service.content.schema,
                "uri": "snowfakery://schema/recipe-jsonschema",
                "source": service.content.source("schema"),
            }

    @tool(READ_ONLY)
    def search_docs(
        self,
        query: Annotated[str, Field(min_length=1, max_length=500, description="Words to look for.")],
        limit: Annotated[int, Field(ge=1, le=20, description="Most results to return (per page).")] = 5,
        cursor: Cursor = None,
    ) -> DocSearch:
        """Ranked snippets of the Snowfakery docs, each with its doc path, heading trail, line and URI.
        Paged: the best 100 hits, limit per page (cursor -> next_cursor; docs/PAGING.md)."""
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
            Field(description="Run Snowfakery's semantic validator (CLI --strict-mode); false: parse only."),
        ] = True,
        schema_validate: Annotated[
            bool, Field(description="Also check the JSON schema (findings are warnings).")
        ] = True,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> Validation:
        """Validate a recipe without generating data (parity with `snowfakery --validate-only --strict-mode`).

        Returns valid, errors [{kind, message, filename, line}] and warnings. Also reports recipes the
        server refuses to run (plugins outside the allow-list, features that need a Salesforce org).
        """
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
        """What a recipe will generate, from its YAML alone (nothing runs).

        tables (fields, nicknames, counts, parents), relationships (reference, random_reference, friend,
        inline_object), uses_random_reference, options_declared, plugins_declared (allowed or not),
        macros, includes and estimated_risk flags (very_high_count, multiplying_counts, dynamic_count,
        dataset_sized, include problems), each with filename and line.
        """
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
        output_format: Annotated[
            OutputFormat, Field(description="Output format; csv writes a folder.")
        ] = "txt",
        capture_output: Annotated[
            bool, Field(description="Return the output inline (capped; the full output is a resource).")
        ] = True,
        output_file_path: Annotated[
            str | None, Field(max_length=1000, description="Also copy the output to this workspace file.")
        ] = None,
        output_folder_path: Annotated[
            str | None,
            Field(max_length=1000, description="csv only: copy the CSV files to this workspace folder."),
        ] = None,
        continuation_file_path: Annotated[
            str | None,
            Field(
                max_length=1000,
                description="Continue from this continuation file (workspace path or snowfakery://runs/<id>/continuation.yml).",
            ),
        ] = None,
        generate_continuation_file_path: Annotated[
            str | None,
            Field(max_length=1000, description="Write a continuation file to this workspace path."),
        ] = None,
        generate_continuation: Annotated[
            bool, Field(description="Keep a continuation file as the run resource continuation.yml.")
        ] = False,
        validate_only: Annotated[bool, Field(description="Only validate (same as validate_recipe).")] = False,
        strict_mode: Annotated[
            bool, Field(description="Validate before generating (CLI --strict-mode).")
        ] = True,
        seed: Annotated[int | None, Field(description="Seed for reproducible random values.")] = None,
        dburl: Annotated[
            str | None,
            Field(
                max_length=2000, description="Write to a database URL (disabled unless the server allows it)."
            ),
        ] = None,
        overwrite: Annotated[bool, Field(description="Replace existing workspace files.")] = False,
        update_input_file: Annotated[
            str | None,
            Field(
                max_length=1000,
                description="Update mode (CLI --update-input-file): a workspace CSV; the recipe (one object "
                "template, no count) runs once per input row, its fields reading ${{input.<column>}}.",
            ),
        ] = None,
        update_passthrough_fields: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=256)]] | None,
            Field(
                max_length=200,
                description="Update mode: input columns copied to the output unchanged "
                "(CLI --update-passthrough-fields).",
            ),
        ] = None,
        timeout_seconds: Annotated[
            float | None, Field(gt=0, description="Stop the run earlier than the server's timeout.")
        ] = None,
        cause: Annotated[
            str | None, Field(max_length=500, description="Why this run is needed (kept in the audit trail).")
        ] = None,
    ) -> RunAnswer:
        """Run a recipe in the sandbox and capture its output (a live, audited Dagster run).

        Returns run_id, summary (row_counts per table, reps, tables, dependencies), stdout_text (capped,
        with truncated), messages, warnings and resources (snowfakery://runs/<run_id>/...). Files asked
        for in the workspace are written only after the run succeeded. Update mode (update_input_file, a
        workspace CSV) runs the recipe once per input row. Limits: reps <= max_reps,
        target_number.count <= max_target_count, rows, file size and time are capped.
        """
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
        format: Annotated[
            DiagramFormat, Field(description="dot (always), or svg/png/... (need Graphviz).")
        ] = "dot",
        options: Options = None,
        plugin_options: PluginOptions = None,
        reps: Reps = None,
    ) -> DiagramAnswer:
        """Render the rows of a small run (kept as an audited run) as a Graphviz diagram; its resource URI.

        dot and svg come back inline too (capped). svg/png/... need Graphviz's `dot` on the server
        (error graphviz_missing otherwise).
        """
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
            list[str] | None, Field(description="Workspace paths of CumulusCI load declaration files.")
        ] = None,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> MappingAnswer:
        """A CumulusCI mapping file for a recipe (like --generate-cci-mapping-file): one run, one repetition.

        Returns mapping_yaml (capped, with truncated) and mapping_uri, the full file (an audited run's).
        """
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
        """Re-indent a recipe in one stable style, keeping comments; the data it describes never changes.

        Returns formatted_text and changed (nothing is written; notes say why a recipe was left as is).
        """
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
                description="The error validate_recipe or run_recipe returned (the error object, or its "
                "message); default: the recipe's own validation errors."
            ),
        ] = None,
        options: Options = None,
        plugin_options: PluginOptions = None,
    ) -> ErrorExplanations:
        """Why a recipe fails and the smallest change that fixes it (the spec's debugging step).

        Validates the recipe (as validate_recipe does; nothing is generated). For each error, plus the
        `error` passed in when validation does not reproduce it (a run-time error), returns
        failing_construct, location (filename, line), the rule it breaks and `fix` {description, line,
        before, after}: the edit to make. Derived from Snowfakery's own error metadata and the recipe
        schema; no model is consulted.
        """
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
        """Draft a recipe with the client's model (MCP sampling); the server validates each draft and sends the
        explain_errors findings back until one is valid or max_rounds is reached.

        Returns valid, recipe_text (the last draft) and rounds [{round, valid, recipe_text, errors}]. Nothing
        runs: drafts are only validated. Needs a client that supports sampling; otherwise
        error sampling_unavailable: use the author_recipe prompt.
        """
        from mcp_bridge.toolsets.snowfakery.drafting import draft_recipe

        return await draft_recipe(self.services, ctx, description, target_schema, max_rounds)
