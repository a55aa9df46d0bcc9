"""dbt-artifacts: answers from the dbt artifact snapshots in the store (spec category 1).

Spec tools that return a list return an object here: the list under a named key (`affected`, `tests`,
`patterns`, `findings`, `models`) next to totals and `provenance`, so every cached answer says where it
came from. Tools whose spec takes an artifact path accept it (confined to the dbt project, the target path
and ADE_HOME) and default to the latest snapshot in the store.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import Field

from ade_platform.lib.dbt import column_lineage as col_lineage
from ade_platform.lib.dbt import lineage, pii, results, schema, select_star, sql_source, tests
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY, new_toolset, tool
from mcp_bridge.toolsets.dbt.inputs import DbtInputs, as_result, capped, derive
from mcp_bridge.toolsets.schemas.dbt import (
    BlastRadiusAnswer,
    ColumnLineageAnswer,
    FailedModelsAnswer,
    LineageAnswer,
    ModelTestsAnswer,
    PiiAnswer,
    SchemaAnswer,
    SelectStarAnswer,
    SilentSkipAnswer,
    SourceFreshnessAnswer,
)

INSTRUCTIONS = (
    "Questions about a dbt project answered from its artifacts (manifest, catalog, run results, "
    "source freshness), materialized by Dagster into the asset store. Answers carry provenance."
)


NodeId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        description="dbt unique_id, e.g. model.jaffle_shop.orders or source.jaffle_shop.raw.customers "
        "(an unambiguous model name is accepted too)",
    ),
]
ModelName = Annotated[
    str,
    Field(min_length=1, max_length=512, description="The dbt model name, e.g. orders (or its unique_id)."),
]


def _path(kind: str) -> Any:
    return Annotated[
        str | None,
        Field(
            max_length=4096,
            description=f"Path to {kind} (inside the dbt project, the target path or ADE_HOME); "
            "default: the latest snapshot in the store.",
        ),
    ]


RunResultsPath = _path("run_results.json")
ManifestPath = _path("manifest.json")
CatalogPath = _path("catalog.json")
SourcesPath = _path("sources.json")


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("dbt-artifacts", INSTRUCTIONS, DbtArtifactTools(ctx))


class DbtArtifactTools:
    """The dbt-artifacts tools: each public method is one tool, its signature and docstring the published ones."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.inputs = DbtInputs(ctx)
        self.max_nodes = ctx.settings.limits.max_lineage_nodes
        self.max_rows = ctx.settings.limits.max_rows
        pii_settings = ctx.settings.pii
        self.configured_patterns = pii.configured_patterns(pii_settings.patterns, pii_settings.ignore)
        self.pii_patterns = self.configured_patterns + pii.BUILTIN_PATTERNS
        self.pii_tags = tuple(t.lower() for t in pii_settings.tags)

    @tool(READ_ONLY, answer=LineageAnswer)
    def dbt_get_lineage(
        self,
        node_id: NodeId,
        direction: Annotated[
            Literal["upstream", "downstream"],
            Field(description="upstream: what this node depends on; downstream: what depends on it."),
        ],
        depth: Annotated[
            int | None, Field(ge=0, le=10_000, description="Hops to traverse; null = the whole tree.")
        ] = None,
    ) -> ToolResult:
        """Dependency graph of a dbt node, upstream or downstream, to a depth.

        Nodes carry resource_type, name, schema, materialization and their hop distance; edges point from
        the dependency to its dependent. Exposures are included. The answer is capped at the server's node
        limit (default 500) with truncated: true when cut.
        """
        snapshot, index = self.inputs.index()
        root = self.inputs.resolve(snapshot, index, node_id)
        views = derive(snapshot, "graph_views", lambda _s: lineage.graph_views(index))
        body = lineage.traverse(index, root, direction, depth, max_nodes=self.max_nodes, views=views)
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=BlastRadiusAnswer)
    def dbt_get_blast_radius(self, node_id: NodeId) -> ToolResult:
        """Everything downstream that a failure, schema change or drop of this node would affect.

        The spec's list is under `affected`: models, snapshots, exposures, metrics and tests (seeds
        excluded) with hops_from_source and has_downstream_dependents (some non-test node depends on it),
        nearest first. Capped at the server's node limit with truncated: true.
        """
        snapshot, index = self.inputs.index()
        root = self.inputs.resolve(snapshot, index, node_id)
        views = derive(snapshot, "graph_views", lambda _s: lineage.graph_views(index))
        body = lineage.blast_radius(index, root, max_nodes=self.max_nodes, views=views)
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=ModelTestsAnswer)
    def dbt_get_model_tests(self, model_name: ModelName) -> ToolResult:
        """All dbt tests on a model: generic (not_null, unique, accepted_values, relationships, package
        tests) and singular, with column, severity and config (the test's arguments).

        The spec's list is under `tests`. Includes relationships tests defined on other models that point
        at this one. An empty `tests` list is an answer (the model is untested), not an error.
        """
        snapshot, index = self.inputs.index()
        uid = self.inputs.resolve(snapshot, index, model_name, code="model_not_found")
        found = tests.model_tests(index, uid)
        body = {
            "model_name": index["nodes"][uid].get("name"),
            "node_id": uid,
            "tests": found,
            "total": len(found),
        }
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=FailedModelsAnswer)
    def dbt_get_failed_models(self, run_results_path: RunResultsPath = None) -> ToolResult:
        """What failed in the last dbt run (models, tests, seeds, snapshots), what was skipped because of
        it (with `upstream_failure`, the nearest failed ancestor), what warned, and totals.

        `invocation` is what dbt's own log says: this run's outcome and error (`this_run: true`), or a newer
        invocation outside ADE whose results are not here (`this_run: false`): one that failed before writing
        any (`status: parse_error`, e.g. a Jinja error or a missing ref), or is still running; the answer is
        then `stale` with the reason."""
        snapshot = self.inputs.artifact("run-results", run_results_path)
        index_snap, index = self.inputs.optional_index()
        key = f"failed:{index_snap.version if index_snap else '-'}"
        summary = derive(snapshot, key, lambda s: results.summarize_run_results(s.data, index))
        body = dict(summary)
        for name in ("failed", "skipped", "warnings"):
            body[name], cut = capped(summary[name], self.max_rows)
            body["truncated"] = body.get("truncated", False) or cut
        return as_result(self.inputs.run_answer(snapshot, body, index_snap))

    @tool(READ_ONLY, answer=SilentSkipAnswer)
    def dbt_detect_silent_skip(
        self,
        expected_patterns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=512)]],
            Field(
                min_length=1,
                max_length=200,
                description="Model names or globs (stg_*, fct_orders) matched against the short model name, or "
                "unique_ids (model.jaffle_shop.revenue_by_month), expected to be in the run results.",
            ),
        ],
        run_results_path: RunResultsPath = None,
        manifest_path: ManifestPath = None,
    ) -> ToolResult:
        """Models expected to run (by name, glob or unique_id) that are absent from run_results.json: a
        --select that was too narrow, a tag exclusion, a selector that silently dropped nodes.

        Returns {"patterns": [...]}: the spec's list under the key `patterns`, one entry per pattern with
        expected_match_count (models in the manifest), actual_match_count (of those, in the run results),
        missing_models, severity ok | warning, and reason: not_in_run_results | no_match (the pattern or
        name matches no model in the manifest: severity warning, missing_models names the pattern) | null.
        """
        for pattern in expected_patterns:
            try:
                results.check_glob(pattern)
            except results.PatternError as exc:
                raise ToolFailure("invalid_pattern", str(exc)) from None
        snapshot = self.inputs.artifact("run-results", run_results_path)
        index_snap, index = self.inputs.index(manifest_path)
        lookup = self.inputs.lookup(index_snap, index)
        ran = derive(
            snapshot, "ran_ids", lambda s: frozenset(r.get("unique_id") for r in s.data.get("results") or ())
        )
        found = results.detect_silent_skip(ran, index, lookup.models, lookup.by_key, expected_patterns)
        body = {
            "patterns": found,
            "all_satisfied": all(p["severity"] == "ok" for p in found),
            "missing_total": sum(len(p["missing_node_ids"]) for p in found),
        }
        return as_result(self.inputs.run_answer(snapshot, body, index_snap))

    @tool(READ_ONLY, answer=SchemaAnswer)
    def dbt_get_schema(
        self,
        model_name: ModelName,
        source: Annotated[
            Literal["manifest", "catalog"],
            Field(
                description="manifest: columns declared in YAML; catalog: columns observed in the warehouse."
            ),
        ],
    ) -> ToolResult:
        """Columns of a model (or seed, snapshot, source): declared in the manifest or observed in the
        catalog (last `dbt docs generate`), with types, comments and positions. Diff the two for drift.
        With source=catalog, a live read of the relation made since the catalog (warehouse_get_schema,
        warehouse_detect_schema_drift, any agent's) takes its place: columns_observed_at and
        provenance.observations say so."""
        snapshot, index = self.inputs.index()
        uid = self.inputs.resolve(snapshot, index, model_name, code="model_not_found")
        if source == "manifest":
            return as_result(self.ctx.cached_answer(snapshot, schema.manifest_schema(index, uid)))
        catalog_snap = self.inputs.artifact("catalog", None)
        catalog = self.inputs.catalog(catalog_snap)
        body = schema.catalog_schema(index, catalog, uid)
        seen = self.inputs.observed_relation(index, catalog, uid, catalog_snap)
        if seen is not None:  # a live read of the relation since the catalog: the warehouse as it is now
            body = schema.with_observed_columns(body, seen.state, seen.observed_iso)
        observations = [seen] if seen else None
        return as_result(self.inputs.answer(catalog_snap, body, snapshot, observations=observations))

    @tool(READ_ONLY, answer=PiiAnswer)
    def dbt_scan_pii_risk(
        self,
        manifest_path: ManifestPath = None,
        catalog_path: CatalogPath = None,
        extra_patterns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=300)]] | None,
            Field(max_length=50, description="Extra column-name regexes to treat as PII (risk medium)."),
        ] = None,
    ) -> ToolResult:
        """Columns whose names look personal (email, phone, ssn, date_of_birth, names, address, zip,
        ip_address, payment cards, passport, driver_license, plus configured patterns), from the manifest
        and the catalog, with has_pii_tag, has_masking_policy and risk_level (high: direct identifiers;
        medium: quasi-identifiers; low: context, or masked). Riskiest and untagged first. Never reads data.
        The spec's list is under `findings`."""
        patterns = self.pii_patterns
        if extra_patterns:
            try:
                extra = tuple(pii.pattern("custom", p, "medium") for p in extra_patterns)
            except Exception as exc:  # re.error
                raise ToolFailure("invalid_regex", f"extra_patterns: {exc}") from None
            patterns = self.configured_patterns + extra + pii.BUILTIN_PATTERNS
        index_snap, index = self.inputs.index(manifest_path)
        catalog_snap = self.inputs.optional("catalog", catalog_path)
        catalog = self.inputs.catalog(catalog_snap) if catalog_snap else None
        key = f"pii:{catalog_snap.version if catalog_snap else '-'}"
        if extra_patterns:
            report = pii.scan(index, catalog, patterns, self.pii_tags)
        else:
            report = derive(index_snap, key, lambda _s: pii.scan(index, catalog, patterns, self.pii_tags))
        body = dict(report)
        body["findings"], body["truncated"] = capped(report["findings"], self.max_rows)
        return as_result(self.inputs.answer(index_snap, body, catalog_snap))

    @tool(READ_ONLY, answer=SourceFreshnessAnswer)
    def dbt_get_source_freshness(self, sources_path: SourcesPath = None) -> ToolResult:
        """Per-source freshness from sources.json (`dbt source freshness`): status (pass, warn, error,
        runtime error), max_loaded_at, snapshotted_at, age_seconds and the warn/error thresholds in seconds.
        Worst first."""
        snapshot = self.inputs.artifact("sources", sources_path)
        index_snap, index = self.inputs.optional_index()
        key = f"freshness:{index_snap.version if index_snap else '-'}"
        report = derive(snapshot, key, lambda s: results.freshness_report(s.data, index))
        body = dict(report)
        body["sources"], body["truncated"] = capped(report["sources"], self.max_rows)
        return as_result(self.inputs.answer(snapshot, body, index_snap))

    @tool(READ_ONLY, answer=SelectStarAnswer)
    def dbt_find_select_star(
        self,
        manifest_path: ManifestPath = None,
        final_only: Annotated[
            bool, Field(description="Only models whose outermost SELECT has a star (skip CTE-internal ones).")
        ] = False,
    ) -> ToolResult:
        """Models that select `*`, found on the SQL syntax tree. Each star has a scope: final (the
        outermost query), cte (an import CTE such as `select * from {{ source(...) }}`) or subquery.
        propagates_upstream_columns says whether the model's output columns are whatever an upstream
        relation has (the schema-drift risk); those come first. Uses compiled SQL when an artifact has it,
        else the raw SQL with Jinja approximated (sql_source says which). The spec's list is under `models`."""
        manifest = self.inputs.artifact("manifest", manifest_path)
        stored = None if manifest_path else self.inputs.select_star_report(manifest)
        if stored is not None:  # scanned by the Dagster asset from these very inputs: no parse here
            report, index_snap = stored
            findings = derive(report, "models", lambda s: s.data["models"])
        else:
            report = None
            sql_index, extra = self.inputs.sql(manifest)
            index_snap, index = self.inputs.index(manifest_path)
            key = f"select_star:{index_snap.version}:{len(extra)}"
            findings = derive(manifest, key, lambda _s: select_star.scan_project(sql_index, extra, index))
        if final_only:
            findings = [f for f in findings if f["final_select_star"]]
        shown, cut = capped(findings, self.max_rows)
        body = {
            "models": shown,
            "total": len(findings),
            "propagating_total": sum(1 for f in findings if f["propagates_upstream_columns"]),
            "truncated": cut,
        }
        return as_result(self.inputs.answer(manifest, body, index_snap, report))

    @tool(READ_ONLY, answer=ColumnLineageAnswer)
    def dbt_get_column_lineage(
        self,
        node_id: NodeId,
        column_name: Annotated[
            str, Field(min_length=1, max_length=256, description="A column of that model.")
        ],
    ) -> ToolResult:
        """The upstream columns (node and column) one column of a model is computed from, traced with
        sqlglot over the model's SQL qualified with its parents' catalog columns (so SELECT * expands).
        transformation is direct (renamed or passed through) or derived (an expression). When it cannot be
        traced the answer says resolved: false and why."""
        snapshot, index = self.inputs.index()
        uid = self.inputs.resolve(snapshot, index, node_id)
        catalog_snap = self.inputs.optional("catalog", None)
        catalog = self.inputs.catalog(catalog_snap) if catalog_snap else None
        known = col_lineage.known_columns(uid, index, catalog)
        if known and column_name.lower() not in {c.lower() for c in known}:
            raise ToolFailure(
                "column_not_found",
                f"{index['nodes'][uid].get('name')} has no column {column_name!r}",
                f"Columns: {', '.join(sorted(known)[:30])}",
            )
        manifest = self.inputs.artifact("manifest", None)
        sql_index, extra = self.inputs.sql(manifest)
        cache = manifest.derived("column_lineage_cache", lambda _s: {})
        key = (uid, column_name.lower(), catalog_snap.version if catalog_snap else None, len(extra))
        if key not in cache:
            sql, origin = sql_source.node_sql(sql_index.get(uid), extra, uid, qualified=True)
            dialect = sql_source.dialect_for(index.get("adapter_type"))
            if len(cache) > 2048:
                cache.clear()
            cache[key] = col_lineage.column_lineage(index, catalog, uid, column_name, sql, origin, dialect)
        return as_result(self.inputs.answer(snapshot, cache[key], manifest, catalog_snap))
