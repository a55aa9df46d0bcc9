"""bi-api: Looker and Metabase dashboards, tiles and looks (spec category 5).

Cached (from the `bi_inventory_<tool>` snapshot, with provenance; live when it was never materialized or does
not know the dashboard): bi_list_dashboards, bi_get_dashboard_elements. Live and read-only (each call is an
audited Dagster run): bi_check_dashboard_health and bi_verify_row_counts run every tile of the dashboard with
bounded concurrency and a per-tile timeout, sending MCP progress as tiles finish; bi_run_look runs one Look.
Beyond the spec, every element names the warehouse tables it reads, and bi_verify_row_counts can count the rows
of those tables to tell an empty table from a tile whose own filter drops every row. Spec tools that return a
list return an object here, the list under a named key next to totals and provenance.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired

import anyio
from fastmcp import Context, FastMCP
from pydantic import Field
from typing_extensions import TypedDict

from ade_platform.clients.bi import BiClient, BiError, bi_warehouse, look_rules, naming_for, open_bi_client
from ade_platform.lib.bi import report
from ade_platform.lib.bi.look_rows import ColumnShape, MaskedColumn, look_body
from ade_platform.lib.bi.names import health_asset, inventory_asset
from ade_platform.lib.bi.shapes import DashboardInfo, ElementInfo, TableRef, TileOutcome
from ade_platform.lib.bi.tables import count_rows_sql
from ade_platform.lib.bi.tiles import run_tiles
from ade_platform.lib.live_observations import tile_errors
from ade_platform.lib.shapes import OPEN
from ade_platform.store import Snapshot, SnapshotNotFound
from ade_platform.store.observations import dashboard_key
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, new_toolset

LOOKER_MAX_ROWS = 5000  # the most rows Looker's API returns for one run (its query row limit)
Tool = Annotated[Literal["looker", "metabase"], Field(description="Which BI tool.")]
DashboardId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_:-]+$",
        description='Dashboard ID. Looker: numeric string (e.g. "42"). Metabase: numeric string (e.g. "7").',
    ),
]


class DashboardListItem(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dashboard_id: str
    title: str
    folder: str | None
    created_at: str | None
    last_updated_at: str | None
    view_count: int | None
    url: str | None


class DashboardList(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    tool: str
    dashboards: list[DashboardListItem]
    total: int
    provenance: dict[str, Any]


class ElementOut(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    element_id: str
    title: str | None
    element_type: str
    model_name: str | None
    explore_name: str | None
    look_id: str | None
    question_id: str | None
    database_id: str | None
    dimensions: list[str]
    measures: list[str]
    sql: str | None
    tables: list[TableRef]
    has_error: bool
    error_detail: str | None


class DashboardElements(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dashboard_id: str
    tool: str
    title: str
    elements: list[ElementOut]
    element_count: int
    errors_checked_at: str | None
    provenance: dict[str, Any]


class HealthAnswer(report.DashboardHealth):
    tool: str
    checked_at: str
    provenance: dict[str, Any]


class RowCountAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dashboard_id: str
    tool: str
    title: str
    checked_at: str
    min_rows: int
    elements: list[report.ElementRowCount]
    total_elements: int
    healthy_count: int
    failing_count: int
    skipped_elements: int
    elapsed_ms: float
    provenance: dict[str, Any]


class LookAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    look_id: int
    title: str | None
    row_count: int
    rows: list[dict[str, Any]]
    elapsed_ms: float
    limit: int
    truncated: bool
    mode: Literal["rows", "shape"]
    masked_columns: list[MaskedColumn]
    tables: list[TableRef]
    columns: NotRequired[list[ColumnShape]]  # shape mode
    redacted: NotRequired[bool]  # shape mode: no value of any row is in the answer
    note: NotRequired[str]
    provenance: dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "bi-api",
        "Looker and Metabase dashboards: list them, see which models and warehouse tables each tile reads, "
        "check they render, verify tiles return rows, run Looks. Read-only.",
    )
    settings = ctx.settings
    bi = settings.bi
    clients: dict[str, BiClient] = {}
    rules = look_rules(settings)
    lock = threading.Lock()

    def client(tool: str) -> BiClient:
        with lock:
            if tool not in clients:
                try:
                    clients[tool] = open_bi_client(tool, settings)
                except BiError as exc:
                    raise _failure(exc) from None
            return clients[tool]

    def live(name: str, arguments: dict[str, Any], fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
        """Run fn as an audited read-only Dagster run; a BiError becomes the structured error."""
        try:
            result = ctx.live().run(name, fn, arguments=arguments, effects="none")
        except BiError as exc:
            raise _failure(exc) from None
        return result.value, result.stamp()

    def snapshot(asset: str) -> Snapshot | None:
        try:
            return ctx.reader.latest(asset)
        except SnapshotNotFound:
            return None

    def check_configured(tool: str) -> None:
        if tool not in bi.tools:
            configured = ", ".join(bi.tools) or "none"
            raise _failure(
                BiError(
                    "backend_not_configured",
                    f"{tool} is not configured (bi.{tool}); configured: {configured}",
                )
            )

    def run_dashboard(
        tool: str, dashboard_id: str, min_rows: int, progress: Callable[[int, int], None]
    ) -> tuple[DashboardInfo, list[TileOutcome]]:
        c = client(tool)
        dashboard = c.dashboard(dashboard_id)
        outcomes = run_tiles(
            dashboard["elements"],
            lambda e: c.run_element(e, bi.tile_timeout_seconds),
            concurrency=bi.max_concurrency,
            timeout=bi.tile_timeout_seconds,
            min_rows=min_rows,
            progress=progress,
        )
        return dashboard, outcomes

    async def in_thread(mcp: Context, fn: Callable[[Callable[[int, int], None]], Any]) -> Any:
        """Run blocking work off the event loop, relaying its progress as MCP notifications."""

        def progress(done: int, total: int) -> None:
            # Best effort: a host that does not listen for progress must not fail the call.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(mcp.report_progress, done, total)

        return await anyio.to_thread.run_sync(lambda: fn(progress))

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def bi_list_dashboards(tool: Tool) -> DashboardList:
        """All accessible dashboards with folder, creation and update times, view count and URL. Answers from
        the latest BI inventory snapshot (provenance says when it was taken), live when there is none."""
        check_configured(tool)
        snap = snapshot(inventory_asset(tool))
        if snap is not None:
            items = [_list_item(d) for d in snap.data["dashboards"]]
            return ctx.cached_answer(snap, {"tool": tool, "dashboards": items, "total": len(items)})  # type: ignore[return-value]
        summaries, stamp = live("bi_list_dashboards", {"tool": tool}, lambda: client(tool).list_dashboards())
        items = [_list_item(d) for d in summaries]
        return DashboardList(tool=tool, dashboards=items, total=len(items), provenance=stamp)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def bi_get_dashboard_elements(dashboard_id: DashboardId, tool: Tool) -> DashboardElements:
        """Every tile of a dashboard with the query behind it: Looker model, explore, dimensions and measures;
        Metabase question, database and native SQL or source table; and the warehouse tables each reads.
        has_error is set from LookML (a field missing from its explore) or from the latest health check
        (errors_checked_at says when). Cached from the BI inventory; live when the snapshot lacks the dashboard."""
        check_configured(tool)
        snap = snapshot(inventory_asset(tool))
        found = next((d for d in snap.data["dashboards"] if d["id"] == dashboard_id), None) if snap else None
        health_snap = snapshot(health_asset(tool))
        errors, checked_at = _health_errors(health_snap, dashboard_id)
        seen = ctx.newer_observation("bi_dashboard_health", dashboard_key(tool, dashboard_id), checked_at)
        if seen is not None:  # a live health check (any agent's) newer than the health snapshot wins
            errors, checked_at = tile_errors(seen), seen.observed_iso
        if found is not None and snap is not None:
            body = _elements_body(tool, found, errors, checked_at)
            return ctx.cached_answer(snap, body, observations=[seen] if seen else None)  # type: ignore[return-value]
        dashboard, stamp = live(
            "bi_get_dashboard_elements",
            {"tool": tool, "dashboard_id": dashboard_id},
            lambda: client(tool).dashboard(dashboard_id),
        )
        return {**_elements_body(tool, dashboard, errors, checked_at), "provenance": stamp}  # type: ignore[return-value]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def bi_check_dashboard_health(dashboard_id: DashboardId, tool: Tool, mcp: Context) -> HealthAnswer:
        """Load a dashboard and run its tiles as rendering would: status ok / error (a tile failed) / unknown,
        element count, elements_with_errors, the first error, and every tile's status (ok, error, or empty
        when it rendered no row). Live and read-only."""
        check_configured(tool)

        def work(progress: Callable[[int, int], None]) -> tuple[Any, dict[str, Any]]:
            return live(
                "bi_check_dashboard_health",
                {"tool": tool, "dashboard_id": dashboard_id},
                lambda: run_dashboard(tool, dashboard_id, 1, progress),
            )

        (dashboard, outcomes), stamp = await in_thread(mcp, work)
        body = report.health(dashboard, outcomes)
        return ctx.observed(
            "bi_check_dashboard_health",
            HealthAnswer(**body, tool=tool, checked_at=_now(), provenance=stamp),
            tool=tool,
        )  # type: ignore[typeddict-item]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def bi_verify_row_counts(
        dashboard_id: DashboardId,
        tool: Tool,
        mcp: Context,
        min_rows: Annotated[
            int, Field(ge=0, le=1_000_000, description="Minimum rows for a tile to count as healthy.")
        ] = 1,
        compare_to_warehouse: Annotated[
            bool,
            Field(
                description="Also count the rows of the warehouse tables behind each tile (through the "
                "configured warehouse), and say whether an empty tile's table is empty or its filter drops all."
            ),
        ] = False,
    ) -> RowCountAnswer:
        """Run every tile of a dashboard (bounded concurrency, per-tile timeout) and report its row count
        against min_rows: row_count is null when the tile errors. Finds dashboards that render but show
        nothing. Live and read-only; sends progress as tiles finish."""
        check_configured(tool)
        counter = _table_counter(settings) if compare_to_warehouse else None

        def work(progress: Callable[[int, int], None]) -> tuple[Any, dict[str, Any]]:
            def run() -> tuple[DashboardInfo, list[TileOutcome], list[report.ElementRowCount], float]:
                started = time.perf_counter()
                dashboard, outcomes = run_dashboard(tool, dashboard_id, min_rows, progress)
                rows = report.row_counts(dashboard, outcomes, counter)
                return dashboard, outcomes, rows, (time.perf_counter() - started) * 1000

            arguments = {
                "tool": tool,
                "dashboard_id": dashboard_id,
                "min_rows": min_rows,
                "compare_to_warehouse": compare_to_warehouse,
            }
            return live("bi_verify_row_counts", arguments, run)

        (dashboard, _, rows, elapsed), stamp = await in_thread(mcp, work)
        healthy = sum(r["meets_threshold"] for r in rows)
        return RowCountAnswer(
            dashboard_id=dashboard["id"],
            tool=tool,
            title=dashboard["title"],
            checked_at=_now(),
            min_rows=min_rows,
            elements=rows,
            total_elements=len(rows),
            healthy_count=healthy,
            failing_count=len(rows) - healthy,
            skipped_elements=len(dashboard["elements"]) - len(rows),
            elapsed_ms=round(elapsed, 1),
            provenance=stamp,
        )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def bi_run_look(
        look_id: Annotated[int, Field(ge=1, description="The Looker Look ID.")],
        limit: Annotated[
            int,
            Field(ge=1, le=5000, description="Maximum rows to return (at most bi.max_rows, default 100)."),
        ] = 1000,
    ) -> LookAnswer:
        """Run a Looker Look (a saved query) and return its rows, values as Looker returns them (keys are
        view.field names). Columns that look like personal data, and every column of a table the Snowflake
        exclusions name, come back masked (masked_columns says which and why); truncated says when there were
        more rows. Where configured (bi.run_look: shape), only columns, types, row count and null percentages
        come back. Looker-only. look_error when its LookML or SQL is broken. Live and read-only."""
        check_configured("looker")
        shape = bi.run_look == "shape"
        # The shape holds no value, so it is computed over `limit` rows; rows are bounded by bi.max_rows too.
        cap = limit if shape else min(limit, bi.max_rows)
        asked = min(cap + 1, LOOKER_MAX_ROWS)  # one more row than shown tells a full result from a cut one

        def run() -> dict[str, Any]:
            # Masked here, inside the audited call: unmasked rows never leave this function.
            found = client("looker").run_look(look_id, asked)
            body = look_body(
                found["rows"],
                found["fields"],
                found["pivots"],
                rules=rules,
                mode=bi.run_look,
                cap=cap,
                asked=asked,
            )
            return {"look_id": found["look_id"], "title": found["title"], "elapsed_ms": found["elapsed_ms"],
                    "tables": found["tables"], **body}  # fmt: skip

        answer, stamp = live("bi_run_look", {"look_id": look_id, "limit": limit}, run)
        return LookAnswer(**answer, limit=cap, provenance=stamp)  # type: ignore[typeddict-item]

    return server


def _failure(exc: BiError) -> ToolFailure:
    if exc.code == "backend_not_configured":  # the shared hint speaks of orchestrators
        return ToolFailure(
            exc.code, exc.detail, hint="Add bi.looker / bi.metabase (base_url, ${ENV} credentials)."
        )
    return ToolFailure(exc.code, exc.detail)


def _list_item(d: dict[str, Any]) -> DashboardListItem:
    return DashboardListItem(
        dashboard_id=d["id"],
        title=d["title"],
        folder=d.get("folder"),
        created_at=d.get("created_at"),
        last_updated_at=d.get("last_updated_at"),
        view_count=d.get("view_count"),
        url=d.get("url"),
    )


def _health_errors(snap: Snapshot | None, dashboard_id: str) -> tuple[dict[str, str], str | None]:
    """Element id -> error from the latest health snapshot of this dashboard, and when it was checked."""
    if snap is None:
        return {}, None
    for d in snap.data.get("dashboards", []):
        if d["id"] == dashboard_id:
            errors = {e["id"]: e["error"] for e in d.get("elements", []) if e.get("status") == "error"}
            return errors, snap.data.get("checked_at")
    return {}, None


def _element_out(e: ElementInfo | dict[str, Any], errors: dict[str, str]) -> ElementOut:
    error = e.get("static_error") or errors.get(e["id"])
    return ElementOut(
        element_id=e["id"],
        title=e.get("title"),
        element_type=e.get("type") or "vis",
        model_name=e.get("model"),
        explore_name=e.get("explore"),
        look_id=e.get("look_id"),
        question_id=e.get("question_id"),
        database_id=e.get("database_id"),
        dimensions=list(e.get("dimensions") or []),
        measures=list(e.get("measures") or []),
        sql=e.get("sql"),
        tables=list(e.get("tables") or []),
        has_error=error is not None,
        error_detail=error,
    )


def _elements_body(
    tool: str, dashboard: DashboardInfo | dict[str, Any], errors: dict[str, str], checked_at: str | None
) -> dict[str, Any]:
    elements = [_element_out(e, errors) for e in dashboard["elements"]]
    return {
        "dashboard_id": dashboard["id"],
        "tool": tool,
        "title": dashboard["title"],
        "elements": elements,
        "element_count": len(elements),
        "errors_checked_at": checked_at,
    }


def _table_counter(settings: Any) -> Callable[[TableRef], report.TableCount] | None:
    """COUNT(*) of one warehouse table through the configured warehouse client (the one the dashboards read)."""
    from ade_platform.clients.warehouses import WarehouseError, open_client

    name = bi_warehouse(settings)
    if name is None:
        raise ToolFailure(
            "connection_failed", "compare_to_warehouse needs a configured warehouse (bi.warehouse)"
        )
    naming = naming_for(settings)
    wc = open_client(name, settings.warehouses[name], settings.limits.query_timeout_seconds)

    def count(ref: TableRef) -> report.TableCount:
        try:
            result = wc.query(count_rows_sql(ref, naming), max_rows=1)
            value = next(iter(result.rows[0].values())) if result.rows else None
            return report.TableCount(
                relation=ref["relation"], row_count=int(value) if value is not None else None, error=None
            )
        except WarehouseError as exc:
            return report.TableCount(
                relation=ref["relation"], row_count=None, error=f"{exc.code}: {exc.detail}"
            )

    return count
