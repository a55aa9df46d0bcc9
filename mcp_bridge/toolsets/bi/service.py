"""What the bi-api tools do: answer from the `bi_inventory_<tool>` snapshot where it knows the dashboard, otherwise
ask the BI tool in an audited read-only live call; run a dashboard's tiles with bounded concurrency, relaying
progress as tiles finish; run a Look with personal data and excluded tables masked inside the audited call."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio

from ade_platform.clients.bi import BiClient, BiError, bi_warehouse, look_rules, naming_for
from ade_platform.clients.warehouses import WarehouseError
from ade_platform.lib.bi import report
from ade_platform.lib.bi.look_rows import look_body
from ade_platform.lib.bi.names import health_asset, inventory_asset
from ade_platform.lib.bi.shapes import DashboardInfo, DashboardSummary, ElementInfo, TableRef, TileOutcome
from ade_platform.lib.bi.tables import count_rows_sql
from ade_platform.lib.bi.tiles import run_with
from ade_platform.lib.live_observations import tile_errors
from ade_platform.lib.timestamps import parse_timestamp
from ade_platform.store import Snapshot
from ade_platform.store.observations import dashboard_key
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.schemas import bi as shapes
from mcp_bridge.toolsets.schemas.provenance import Provenance

T = TypeVar("T")
LOOKER_MAX_ROWS = 5000  # the most rows Looker's API returns for one run (its query row limit)
Progress = Callable[[int, int], None]  # tiles done, tiles in all
# progress, total: an MCP progress notification (fastmcp's Context.report_progress)
ReportProgress = Callable[..., Awaitable[None]]
# The failures of the check for anything newer after which the snapshot still answers, flagged stale.
UNREACHABLE = frozenset({"connection_failed", "upstream_error", "auth_failed"})


class BiService:
    """The configured BI tools (clients opened by the bridge on first use) and the audited way to call them."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.settings = ctx.settings
        self.bi = ctx.settings.bi
        self.rules = look_rules(ctx.settings)

    def client(self, tool: str) -> BiClient:
        return self.ctx.client("bi", tool)

    def live(self, name: str, arguments: dict[str, Any], fn: Callable[[], T]) -> tuple[T, Provenance]:
        """Run fn as an audited read-only Dagster run (a BiError is the structured error: the middleware maps it)."""
        value, stamp = self.ctx.live_call(name, fn, arguments=arguments, effects="none")
        return value, stamp  # type: ignore[return-value]

    def check_configured(self, tool: str) -> None:
        if tool not in self.bi.tools:
            configured = ", ".join(self.bi.tools) or "none"
            raise BiError(
                "backend_not_configured", f"{tool} is not configured (bi.{tool}); configured: {configured}"
            )

    def run_dashboard(
        self, tool: str, dashboard_id: str, min_rows: int, progress: Progress
    ) -> tuple[DashboardInfo, list[TileOutcome]]:
        c = self.client(tool)
        dashboard = c.dashboard(dashboard_id)
        outcomes = run_with(
            c,
            dashboard["elements"],
            concurrency=self.bi.max_concurrency,
            timeout=self.bi.tile_timeout_seconds,
            min_rows=min_rows,
            progress=progress,
        )
        return dashboard, outcomes

    def table_counter(self) -> Callable[[TableRef], report.TableCount]:
        """COUNT(*) of one warehouse table through the warehouse the dashboards read (bi.warehouse)."""
        name = bi_warehouse(self.settings)
        if name is None:
            raise ToolFailure(
                "connection_failed", "compare_to_warehouse needs a configured warehouse (bi.warehouse)"
            )
        naming = naming_for(self.settings)
        warehouse = self.ctx.client("warehouse", name)

        def count(ref: TableRef) -> report.TableCount:
            try:
                result = warehouse.query(count_rows_sql(ref, naming), max_rows=1)
                value = next(iter(result.rows[0].values())) if result.rows else None
                return report.TableCount(
                    relation=ref["relation"], row_count=int(value) if value is not None else None, error=None
                )
            except WarehouseError as exc:
                return report.TableCount(
                    relation=ref["relation"], row_count=None, error=f"{exc.code}: {exc.detail}"
                )

        return count

    # ---- cached when the BI tool has nothing newer, live otherwise ------------------------------------------
    def dashboards_now(
        self, tool: str, snap: Snapshot | None, arguments: dict[str, Any]
    ) -> tuple[list[DashboardSummary] | None, Provenance | None, str | None]:
        """The check for anything newer: the tool's dashboards with their `updated_at` (one audited listing).
        With a snapshot to fall back on, an unreachable tool gives (None, None, why the snapshot may be stale)."""
        try:
            summaries, stamp = self.live(
                "bi_list_dashboards" if "dashboard_id" not in arguments else "bi_get_dashboard_elements",
                arguments,
                lambda: self.client(tool).list_dashboards(),
            )
        except BiError as exc:
            if snap is None or exc.code not in UNREACHABLE:
                raise
            return None, None, f"{tool} could not be asked for anything newer ({exc.code})"
        return summaries, stamp, None

    def list_dashboards(self, tool: str) -> shapes.DashboardList:
        self.check_configured(tool)
        snap = self.ctx.latest_or_none(inventory_asset(tool))
        summaries, stamp, unreachable = self.dashboards_now(tool, snap, {"tool": tool})
        if snap is not None and (unreachable or changed_dashboards(snap, summaries or []) is None):
            items = [_list_item(d) for d in snap.data["dashboards"]]
            body = {"tool": tool, "dashboards": items, "total": len(items)}
            return self.ctx.cached_answer(snap, body, stale_reason=unreachable)  # type: ignore[return-value]
        items = [_list_item(d) for d in summaries or []]
        return shapes.DashboardList(tool=tool, dashboards=items, total=len(items), provenance=stamp)  # type: ignore[arg-type]

    def dashboard_elements(self, dashboard_id: str, tool: str) -> shapes.DashboardElements:
        self.check_configured(tool)
        snap = self.ctx.latest_or_none(inventory_asset(tool))
        found = next((d for d in snap.data["dashboards"] if d["id"] == dashboard_id), None) if snap else None
        errors, checked_at = _health_errors(self.ctx.latest_or_none(health_asset(tool)), dashboard_id)
        seen = self.ctx.newer_observation(
            "bi_dashboard_health", dashboard_key(tool, dashboard_id), checked_at
        )
        if seen is not None:  # a live health check (any agent's) newer than the health snapshot wins
            errors, checked_at = tile_errors(seen), seen.observed_iso
        arguments = {"tool": tool, "dashboard_id": dashboard_id}
        if found is not None and snap is not None:
            summaries, _, unreachable = self.dashboards_now(tool, snap, arguments)
            now = next((d for d in summaries or [] if d["id"] == dashboard_id), None)
            if unreachable or (
                now is not None and now.get("last_updated_at") == found.get("last_updated_at")
            ):
                body = _elements_body(tool, found, errors, checked_at)
                return self.ctx.cached_answer(
                    snap, body, stale_reason=unreachable, observations=[seen] if seen else None
                )  # type: ignore[return-value]
        dashboard, stamp = self.live(
            "bi_get_dashboard_elements", arguments, lambda: self.client(tool).dashboard(dashboard_id)
        )
        return {**_elements_body(tool, dashboard, errors, checked_at), "provenance": stamp}  # type: ignore[return-value]

    # ---- live: run the tiles -----------------------------------------------------------------------------
    async def check_health(
        self, dashboard_id: str, tool: str, report_progress: ReportProgress
    ) -> shapes.HealthAnswer:
        self.check_configured(tool)

        def work(progress: Progress) -> tuple[tuple[DashboardInfo, list[TileOutcome]], Provenance]:
            return self.live(
                "bi_check_dashboard_health",
                {"tool": tool, "dashboard_id": dashboard_id},
                lambda: self.run_dashboard(tool, dashboard_id, 1, progress),
            )

        (dashboard, outcomes), stamp = await relay_progress(report_progress, work)
        body = report.health(dashboard, outcomes)
        return self.ctx.observed(
            "bi_check_dashboard_health",
            shapes.HealthAnswer(**body, tool=tool, checked_at=_now(), provenance=stamp),
            tool=tool,
        )

    async def verify_row_counts(
        self,
        dashboard_id: str,
        tool: str,
        min_rows: int,
        compare_to_warehouse: bool,
        report_progress: ReportProgress,
    ) -> shapes.RowCountAnswer:
        self.check_configured(tool)
        counter = self.table_counter() if compare_to_warehouse else None
        arguments = {
            "tool": tool,
            "dashboard_id": dashboard_id,
            "min_rows": min_rows,
            "compare_to_warehouse": compare_to_warehouse,
        }

        def work(progress: Progress) -> tuple[Any, Provenance]:
            def run() -> tuple[DashboardInfo, list[report.ElementRowCount], float]:
                started = time.perf_counter()
                dashboard, outcomes = self.run_dashboard(tool, dashboard_id, min_rows, progress)
                rows = report.row_counts(dashboard, outcomes, counter)
                return dashboard, rows, (time.perf_counter() - started) * 1000

            return self.live("bi_verify_row_counts", arguments, run)

        (dashboard, rows, elapsed), stamp = await relay_progress(report_progress, work)
        healthy = sum(r["meets_threshold"] for r in rows)
        return shapes.RowCountAnswer(
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

    def run_look(self, look_id: int, limit: int) -> shapes.LookAnswer:
        self.check_configured("looker")
        bi = self.bi
        shape = bi.run_look == "shape"
        # The shape holds no value, so it is computed over `limit` rows; rows are bounded by bi.max_rows too.
        cap = limit if shape else min(limit, bi.max_rows)
        asked = min(cap + 1, LOOKER_MAX_ROWS)  # one more row than shown tells a full result from a cut one

        def run() -> dict[str, Any]:
            # Masked here, inside the audited call: unmasked rows never leave this function.
            found = self.client("looker").run_look(look_id, asked)
            # the columns dbt tags as personal data, as stored now (a tag added since the last call counts)
            rules = replace(self.rules, tagged=self.ctx.pii_tagged_columns())
            body = look_body(
                found["rows"],
                found["fields"],
                found["pivots"],
                rules=rules,
                mode=bi.run_look,
                cap=cap,
                asked=asked,
                sql=found.get("sql"),
            )
            return {"look_id": found["look_id"], "title": found["title"], "elapsed_ms": found["elapsed_ms"],
                    "tables": found["tables"], **body}  # fmt: skip

        answer, stamp = self.live("bi_run_look", {"look_id": look_id, "limit": limit}, run)
        return shapes.LookAnswer(**answer, limit=cap, provenance=stamp)  # type: ignore[typeddict-item]


async def relay_progress(report_progress: ReportProgress, work: Callable[[Progress], T]) -> T:
    """Run blocking work off the event loop, relaying the progress it reports as MCP notifications."""

    def progress(done: int, total: int) -> None:
        # Best effort: a host that does not listen for progress must not fail the call.
        with contextlib.suppress(Exception):
            anyio.from_thread.run(report_progress, done, total)

    return await anyio.to_thread.run_sync(lambda: work(progress))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _list_item(d: dict[str, Any]) -> shapes.DashboardListItem:
    return shapes.DashboardListItem(
        dashboard_id=d["id"],
        title=d["title"],
        folder=d.get("folder"),
        created_at=d.get("created_at"),
        last_updated_at=d.get("last_updated_at"),
        view_count=d.get("view_count"),
        url=d.get("url"),
    )


def changed_dashboards(snap: Snapshot, summaries: list[DashboardSummary]) -> str | None:
    """What changed since the inventory snapshot (a dashboard added, removed or updated), or None."""
    stored = {d["id"]: d.get("last_updated_at") for d in snap.data["dashboards"]}
    now = {d["id"]: d.get("last_updated_at") for d in summaries}
    added, removed = sorted(set(now) - set(stored)), sorted(set(stored) - set(now))
    updated = sorted(i for i in set(now) & set(stored) if now[i] != stored[i])
    if not (added or removed or updated):
        return None
    parts = [
        f"{what} {', '.join(ids)}"
        for what, ids in (("added", added), ("removed", removed), ("updated", updated))
        if ids
    ]
    return "dashboards " + "; ".join(parts)


def _health_errors(snap: Snapshot | None, dashboard_id: str) -> tuple[dict[str, str], str | None]:
    """Element id -> error from the latest health snapshot of this dashboard, and when it was checked."""
    if snap is None:
        return {}, None
    for d in snap.data.get("dashboards", []):
        if d["id"] == dashboard_id:
            errors = {e["id"]: e["error"] for e in d.get("elements", []) if e.get("status") == "error"}
            return errors, snap.data.get("checked_at")
    return {}, None


def _element_out(e: ElementInfo | dict[str, Any], errors: dict[str, str]) -> shapes.ElementOut:
    error = e.get("static_error") or errors.get(e["id"])
    return shapes.ElementOut(
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
        dashboard_filters={f["name"]: f["value"] for f in e.get("dashboard_filters") or []},
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
        "errors_stale": _later(dashboard.get("last_updated_at"), checked_at),
    }


def _later(changed: str | None, checked: str | None) -> bool:
    """Whether a dashboard changed after its tiles were last checked."""
    changed_at, checked_at = parse_timestamp(changed), parse_timestamp(checked)
    return bool(changed_at and checked_at and changed_at > checked_at)
