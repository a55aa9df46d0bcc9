"""dbt-artifacts: answers from the dbt artifact snapshots in the store (spec category 1).

Spec tools that return a list return an object here: the list under a named key (`affected`, `tests`,
`patterns`, `findings`, `models`) next to totals and `provenance`, so every cached answer says where it
came from. Tools whose spec takes an artifact path accept it (confined to the dbt project, the target path
and ADE_HOME) and default to the latest snapshot in the store.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import Field

from ade_platform.lib import paging
from ade_platform.lib.dbt import column_lineage as col_lineage
from ade_platform.lib.dbt import lineage, pii, results, schema, select_star, sql_source, tests
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY, new_toolset, tool
from mcp_bridge.toolsets.dbt.inputs import DbtInputs, as_result, derive
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
from mcp_bridge.toolsets.schemas.paging import Cursor, Detail, GraphLimit, Limit, NamePattern

INSTRUCTIONS = (
    "Questions about a dbt project answered from its artifacts (manifest, catalog, run results, "
    "source freshness), materialized by Dagster into the asset store. Answers carry provenance."
)


# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "node_id": "A dbt unique_id (model.shop.orders, source.shop.raw.customers) or an unambiguous model name.",
    "model_name": "A dbt model name (orders) or its unique_id.",
    "run_results_path, manifest_path, catalog_path, sources_path": (
        "That artifact file (in the dbt project, its target path or ADE_HOME); default: the latest snapshot."
    ),
}
NodeId = Annotated[str, Field(min_length=1, max_length=512)]
ModelName = Annotated[str, Field(min_length=1, max_length=512)]
ArtifactPath = Annotated[str | None, Field(max_length=4096)]
RunResultsPath = ManifestPath = CatalogPath = SourcesPath = ArtifactPath


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("dbt-artifacts", INSTRUCTIONS, DbtArtifactTools(ctx), parameters=PARAMETERS)


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
            Field(description="upstream: what it depends on; downstream: what depends on it."),
        ],
        depth: Annotated[int | None, Field(ge=0, le=10_000, description="Hops; default: all.")] = None,
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> ToolResult:
        """Upstream or downstream dependency graph of a dbt model, source or other node, to a depth. Nodes carry
        hop distance and kind; edges run from dependency to dependent. Paged, nearest first; detail=summary
        gives counts only."""
        snapshot, index = self.inputs.index()
        root = self.inputs.resolve(snapshot, index, node_id)
        views = derive(snapshot, "graph_views", lambda _s: lineage.graph_views(index))
        whole = len(index["nodes"]) + 1
        body = lineage.traverse(index, root, direction, depth, max_nodes=whole, views=views)
        if detail == "summary":
            summary = paging.graph_summary(body["nodes"], body["edges"])
            body.update(nodes=[], edges=[], summary=summary, truncated=False, next_cursor=None)
            return as_result(self.ctx.cached_answer(snapshot, body))
        query = ("dbt_get_lineage", root, direction, depth)
        shown, edges = paging.graph_page(
            body["nodes"], body["edges"], limit, cursor, version=snapshot.version, query=query,
            cap=self.max_nodes, default=self.max_nodes,
        )  # fmt: skip
        body.update(nodes=shown.items, edges=edges, next_cursor=shown.next_cursor, truncated=shown.truncated)
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=BlastRadiusAnswer)
    def dbt_get_blast_radius(
        self, node_id: NodeId, limit: GraphLimit = None, cursor: Cursor = None
    ) -> ToolResult:
        """What breaks downstream if a dbt node fails, changes schema or is dropped: models, snapshots,
        exposures, metrics and tests, nearest first. Paged list `affected`."""
        snapshot, index = self.inputs.index()
        root = self.inputs.resolve(snapshot, index, node_id)
        views = derive(snapshot, "graph_views", lambda _s: lineage.graph_views(index))
        body = lineage.blast_radius(index, root, max_nodes=len(index["nodes"]) + 1, views=views)
        shown = paging.page(
            body["affected"], limit, cursor, version=snapshot.version, query=("dbt_get_blast_radius", root),
            cap=self.max_nodes, default=self.max_nodes,
        )  # fmt: skip
        body.update(affected=shown.items, next_cursor=shown.next_cursor, truncated=shown.truncated)
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=ModelTestsAnswer)
    def dbt_get_model_tests(
        self,
        model_name: ModelName,
        limit: Limit = None,
        cursor: Cursor = None,
        name_pattern: NamePattern = None,
    ) -> ToolResult:
        """The dbt tests on a model (generic and singular, with relationships tests pointing at it): column,
        severity, arguments. Paged list `tests`; an empty list means untested."""
        snapshot, index = self.inputs.index()
        uid = self.inputs.resolve(snapshot, index, model_name, code="model_not_found")
        named = paging.name_matcher(name_pattern)
        found = [t for t in tests.model_tests(index, uid) if named(t.get("test_name"))]
        query = ("dbt_get_model_tests", uid, name_pattern)
        shown = paging.page(found, limit, cursor, version=snapshot.version, query=query, cap=self.max_rows)
        body = {
            "model_name": index["nodes"][uid].get("name"),
            "node_id": uid,
            "tests": shown.items,
            **shown.fields(),
        }
        return as_result(self.ctx.cached_answer(snapshot, body))

    @tool(READ_ONLY, answer=FailedModelsAnswer)
    def dbt_get_failed_models(
        self, run_results_path: RunResultsPath = None, limit: Limit = None, cursor: Cursor = None
    ) -> ToolResult:
        """What failed, was skipped or warned in the last dbt run, with totals and each skip's failed ancestor.
        `invocation` flags a newer dbt run outside ADE (a parse error, one still running). Paged."""
        snapshot = self.inputs.artifact("run-results", run_results_path)
        index_snap, index = self.inputs.optional_index()
        key = f"failed:{index_snap.version if index_snap else '-'}"
        summary = derive(snapshot, key, lambda s: results.summarize_run_results(s.data, index))
        body = dict(summary)
        lists = {name: summary[name] for name in ("failed", "skipped", "warnings")}
        shown, next_cursor = paging.pages_in_step(
            lists,
            limit,
            cursor,
            version=snapshot.version,
            query=("dbt_get_failed_models",),
            cap=self.max_rows,
        )
        body.update(shown, next_cursor=next_cursor, truncated=next_cursor is not None)
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
        """dbt models expected to run (names, globs, unique_ids) but missing from run_results.json: a too-narrow
        --select, an exclusion, a selector that dropped them. One entry per pattern in `patterns`."""
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
            Field(description="manifest: declared; catalog: observed in the warehouse."),
        ],
    ) -> ToolResult:
        """Columns of a dbt model, seed, snapshot or source with types and comments, as declared (manifest) or
        observed (catalog). With source=catalog, newer live reads take its place; compare both for drift."""
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
            Field(max_length=50, description="More column-name regexes (risk medium)."),
        ] = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ToolResult:
        """dbt columns whose names look like personal data (email, phone, name, address, ...) with PII tag,
        masking policy and risk level, riskiest first. Never reads data. Paged list `findings`."""
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
        version = f"{index_snap.version}:{catalog_snap.version if catalog_snap else '-'}"
        query = ("dbt_scan_pii_risk", extra_patterns)
        shown = paging.page(
            report["findings"], limit, cursor, version=version, query=query, cap=self.max_rows
        )
        body = {**report, "findings": shown.items, **shown.fields()}
        return as_result(self.inputs.answer(index_snap, body, catalog_snap))

    @tool(READ_ONLY, answer=SourceFreshnessAnswer)
    def dbt_get_source_freshness(
        self,
        sources_path: SourcesPath = None,
        limit: Limit = None,
        cursor: Cursor = None,
        state: Annotated[
            Literal["pass", "warn", "error", "runtime error"] | None,
            Field(description="Only sources with this freshness status."),
        ] = None,
        name_pattern: NamePattern = None,
    ) -> ToolResult:
        """Freshness of each dbt source from sources.json (`dbt source freshness`): status, max_loaded_at, age
        and thresholds, worst first. Paged; state filters on status."""
        snapshot = self.inputs.artifact("sources", sources_path)
        index_snap, index = self.inputs.optional_index()
        key = f"freshness:{index_snap.version if index_snap else '-'}"
        report = derive(snapshot, key, lambda s: results.freshness_report(s.data, index))
        in_state, named = paging.state_matcher(state), paging.name_matcher(name_pattern)
        kept = [s for s in report["sources"] if in_state(s.get("status")) and named(s.get("table_name"))]
        query = ("dbt_get_source_freshness", state, name_pattern)
        version = f"{snapshot.version}:{index_snap.version if index_snap else '-'}"
        shown = paging.page(kept, limit, cursor, version=version, query=query, cap=self.max_rows)
        body = {**report, "sources": shown.items, **shown.fields()}
        return as_result(self.inputs.answer(snapshot, body, index_snap))

    @tool(READ_ONLY, answer=SelectStarAnswer)
    def dbt_find_select_star(
        self,
        manifest_path: ManifestPath = None,
        final_only: Annotated[bool, Field(description="Only stars in the outermost SELECT.")] = False,
        limit: Limit = None,
        cursor: Cursor = None,
        name_pattern: NamePattern = None,
    ) -> ToolResult:
        """dbt models that SELECT *, where the star is (final query, CTE, subquery) and whether it passes
        upstream columns through (the schema-drift risk, listed first). Paged list `models`."""
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
        named = paging.name_matcher(name_pattern)
        findings = [
            f for f in findings if (f["final_select_star"] or not final_only) and named(f.get("model_name"))
        ]
        query = ("dbt_find_select_star", final_only, name_pattern)
        shown = paging.page(findings, limit, cursor, version=manifest.version, query=query, cap=self.max_rows)
        body = {
            "models": shown.items,
            **shown.fields(),
            "propagating_total": sum(1 for f in findings if f["propagates_upstream_columns"]),
        }
        return as_result(self.inputs.answer(manifest, body, index_snap, report))

    @tool(READ_ONLY, answer=ColumnLineageAnswer)
    def dbt_get_column_lineage(
        self,
        node_id: NodeId,
        column_name: Annotated[str, Field(min_length=1, max_length=256)],
    ) -> ToolResult:
        """The upstream columns one column of a dbt model is computed from, direct or derived, traced with
        sqlglot. resolved: false says why when it cannot be traced."""
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
