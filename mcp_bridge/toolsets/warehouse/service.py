"""What the warehouse tools do beyond their parameters: pick a configured warehouse, read it live as an audited
run, fall back to the schema snapshot when it cannot be read now, and date a drift from the snapshots."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ade_platform.clients.warehouses import WarehouseClient, WarehouseError
from ade_platform.lib.live_observations import newer_table, observed_table
from ade_platform.lib.warehouse import drift, freshness, manifest
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.names import freshness_asset, schema_asset
from ade_platform.store import Snapshot
from ade_platform.store.observations import Observation
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.dbt.inputs import DbtInputs, derive

# Live-read failures that mean "cannot observe now" (fall back to the snapshot), not "bad question".
UNREACHABLE = frozenset(
    {"connection_failed", "query_timeout", "auth_failed", "permission_denied", "query_failed"}
)
LIVE_VERSION = "live"


class WarehouseService:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.inputs = DbtInputs(ctx)

    # ---- which warehouse, and reading it live ------------------------------------------------------------
    def pick(self, name: str | None) -> tuple[str, Any]:
        """(name, settings) of a configured warehouse: the one named (or the only one of a type), else the first."""
        configured = self.ctx.settings.warehouses
        if not configured:
            raise ToolFailure("connection_failed", "no warehouse is configured (warehouses: in ade.yaml)")
        if name is None:
            first = next(iter(configured))
            return first, configured[first]
        if name in configured:
            return name, configured[name]
        by_type = [n for n, wh in configured.items() if wh.type == name]
        if len(by_type) == 1:
            return by_type[0], configured[by_type[0]]
        raise ToolFailure("invalid_argument", f"no warehouse {name!r}; configured: {', '.join(configured)}")

    def client(self, name: str) -> WarehouseClient:
        return self.ctx.client("warehouse", name)

    def live(
        self, tool: str, name: str, arguments: dict[str, Any], fn: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """fn's answer as an audited live read, with its provenance (a WarehouseError is the structured error:
        the middleware maps it). Every warehouse live tool is read-only: the SQL guard refused anything else
        before this point. The warehouse's dialect lets the audit redact the SQL's literals."""
        dialect = self.ctx.settings.warehouses[name].type
        value, provenance = self.ctx.live_call(tool, fn, arguments=arguments, dialect=dialect)
        return {**value, "provenance": provenance}

    def read_table(
        self, tool: str, name: str, parts: list[str], arguments: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
        """One table read live (one catalog query, audited like every live read), recorded as an observation.

        Returns (table or None when it does not exist, the live provenance, None), or (None, None, error code)
        when the warehouse cannot be read now: the caller then falls back to the snapshot and says so.
        """
        wc = self.client(name)

        def run() -> dict[str, Any] | None:
            try:
                return wc.describe_table(parts)
            except WarehouseError as exc:
                if exc.code == "table_not_found":
                    return None  # an observation: the table is not there now
                raise

        try:
            table, provenance = self.ctx.live_call(tool, run, arguments=arguments)
        except WarehouseError as exc:
            if exc.code in UNREACHABLE:
                return None, None, exc.code
            raise
        observed = self.ctx.observed(tool, table, warehouse=name, parts=parts)
        if isinstance(provenance, dict):  # the table (or its absence) is an observation: say if not kept
            self.ctx.note_unkept_observations(provenance)
        return observed, provenance, None

    # ---- what a query may read and show (issue 34) -------------------------------------------------------
    def protection(self, name: str) -> tuple[Any, dict[str, Any] | None, str | None]:
        """(rules, schema, default schema) for checking a query on warehouse `name`: the Snowflake proxy's
        exclusions and the PII rules (patterns, dbt `pii` tags when a manifest is stored), and the columns of
        the latest schema snapshot (a `SELECT *` expands to them)."""
        from ade_platform.clients.warehouses import protect_rules, warehouse_defaults
        from ade_platform.lib.sql_protect import schema_from_tables

        tagged = self.ctx.pii_tagged_columns()
        snapshot = self.optional_schema_snapshot(name)
        schema = None
        if snapshot is not None:
            schema = derive(
                snapshot, "sqlglot_schema", lambda s: schema_from_tables(s.data.get("tables", []))
            )
        _, default_schema = warehouse_defaults(self.ctx.settings.warehouse(name))
        return protect_rules(self.ctx.settings, name, tagged), schema, default_schema

    @staticmethod
    def refuse_excluded(statement: Any, rules: Any) -> None:
        """table_excluded when the query reads a table the exclusions name, at any depth: the tables of the parsed
        statement that runs, and the guard's own reference extraction on it (the Snowflake proxy's check); and
        when it reads what no exclusion can name (a file, a URL, a table function, SQL text)."""
        from ade_platform.lib.guard import classify_sql
        from ade_platform.lib.sql_protect import excluded_tables, outside_reads

        outside = outside_reads(statement)
        if outside:
            raise ToolFailure(
                "table_excluded",
                f"the query reads outside the warehouse's tables ({', '.join(outside[:3])}): files, URLs, other "
                "databases and SQL text are not checked against the exclusions",
            )
        hits = set(excluded_tables(statement, rules.exclusions))
        # the guard reads Snowflake SQL: the statement is written in that dialect for it (unchanged on Snowflake)
        snowflake_sql = statement.sql(dialect="snowflake")
        hits |= {name.lower() for name in classify_sql(snowflake_sql, rules.exclusions).excluded}
        if hits:
            shown = ", ".join(sorted(hits)[:5])
            raise ToolFailure(
                "table_excluded",
                f"the query reads {shown}, which the exclusions keep from agents",
                tables=sorted(hits),
            )

    # ---- answers ----------------------------------------------------------------------------------------
    def schema_snapshot(self, name: str) -> Snapshot:
        return self.ctx.reader.latest(schema_asset(name))

    def optional_schema_snapshot(self, name: str) -> Snapshot | None:
        return self.ctx.latest_or_none(schema_asset(name))

    def fallback(
        self, snapshot: Snapshot, code: str, body: dict[str, Any], seen: list[Observation] | None = None
    ) -> dict[str, Any]:
        """The snapshot's answer when the warehouse could not be read live: stale, saying why."""
        answer = self.ctx.cached_answer(
            snapshot,
            body,
            stale_reason=f"the warehouse could not be read live ({code}); answered from the "
            "latest schema snapshot, which may miss changes made since",
            observations=seen,
        )
        answer["provenance"]["live_error"] = code
        return answer

    @staticmethod
    def live_provenance(provenance: dict[str, Any], snapshot: Snapshot | None) -> dict[str, Any]:
        """A live read's provenance, never stale; with the snapshot a drift's history (`since`) was read from."""
        stamp = {**provenance, "stale": False, "stale_reason": None}
        if snapshot is not None:
            stamp["history"] = {
                "asset": snapshot.asset,
                "version": snapshot.version,
                "materialized_at": snapshot.provenance.materialized_at,
            }
        return stamp

    # ---- drift ------------------------------------------------------------------------------------------
    def declared_relation(self, model_name: str, manifest_path: str | None) -> tuple[Snapshot, Any]:
        """(manifest snapshot, the model's relation with the columns it declares), typed by the catalog."""
        manifest_snap = self.inputs.artifact("manifest", manifest_path)
        catalog_snap = self.inputs.optional("catalog", _sibling_catalog(manifest_path))
        key = f"warehouse_relations:{catalog_snap.version if catalog_snap else '-'}"
        rels = derive(
            manifest_snap,
            key,
            lambda s: manifest.relations(s.data, catalog_snap.data if catalog_snap else None),
        )
        project = (manifest_snap.data.get("metadata") or {}).get("project_name")
        relation, suggestions = manifest.find_model(rels, model_name, project)
        if relation is None:
            hint = f"Did you mean: {', '.join(suggestions)}?" if suggestions else None
            raise ToolFailure("model_not_found", f"no model {model_name!r} in the manifest", hint)
        return manifest_snap, relation

    def drift(
        self, name: str, warehouse_type: str, model_name: str, manifest_path: str | None
    ) -> dict[str, Any]:
        """The drift report of warehouse_detect_schema_drift, with its provenance."""
        snapshot = self.optional_schema_snapshot(name)
        manifest_snap, relation = self.declared_relation(model_name, manifest_path)
        # DuckDB's catalog is a file name that dbt and the platform may spell differently: schema.table.
        parts = [relation.schema, relation.identifier]
        if relation.database and warehouse_type != "duckdb":
            parts.insert(0, relation.database)
        args = {"model_name": model_name, "warehouse": name}
        live_table, provenance, error = self.read_table("warehouse_detect_schema_drift", name, parts, args)
        checked_at = freshness.iso(datetime.now(UTC))
        seen = None
        if error is not None:
            if snapshot is None:
                raise unreadable(name, error)
            # An earlier live read of the table (any agent's) is newer than the snapshot: it wins.
            seen = newer_table(self.ctx.reader, name, relation.schema, relation.identifier, snapshot)
            live_table = observed_table(seen) if seen else None
            table = live_table if seen else _relation_table(snapshot, relation)
        else:
            table = live_table
        report = drift.compare(relation, table, warehouse_type)
        if report["drift_detected"] and snapshot is not None:
            live_at = (seen.observed_iso if seen else checked_at) if error is None or seen else None
            self._date_changes(report, snapshot, relation, live_table, live_at, warehouse_type)
        report["checked_at"] = checked_at
        report["observed_at"] = (
            checked_at
            if error is None
            else seen.observed_iso
            if seen
            else snapshot.provenance.materialized_at
        )
        report["declared_in"] = {"asset": manifest_snap.asset, "version": manifest_snap.version}
        report["warehouse"] = name
        if error is not None:
            return self.fallback(snapshot, error, report, [seen] if seen else None)
        return {**report, "provenance": self.live_provenance(provenance, snapshot)}

    def _date_changes(
        self,
        report: dict[str, Any],
        snapshot: Snapshot,
        relation: Any,
        live_table: dict[str, Any] | None,
        live_at: str | None,
        warehouse_type: str,
    ) -> None:
        """Each change's `since`: the first schema snapshot that shows it (`live_at`: the live observation,
        the newest state, when there is one)."""
        reader = self.ctx.reader
        history = [
            drift.SnapshotRef(p.version, p.materialized_at) for p in reversed(reader.history(snapshot.asset))
        ]
        history = [h for h in history if h.version <= snapshot.version] or [
            drift.SnapshotRef(snapshot.version, snapshot.provenance.materialized_at)
        ]
        if live_at is not None:
            history.insert(0, drift.SnapshotRef(LIVE_VERSION, live_at))

        def table_at(version: str) -> dict[str, Any] | None:
            if version == LIVE_VERSION:
                return live_table
            snap = snapshot if version == snapshot.version else reader.get(snapshot.asset, version)
            return _relation_table(snap, relation)

        drift.since_when(report, history, table_at, warehouse_type)

    # ---- freshness --------------------------------------------------------------------------------------
    def tracked_freshness(
        self, name: str, table: dict[str, Any], column: str
    ) -> tuple[Snapshot, dict[str, Any]] | None:
        """(freshness snapshot, its entry) when Dagster tracks this table's column, else None."""
        snap = self.ctx.latest_or_none(freshness_asset(name))
        if snap is None:
            return None
        for entry in snap.data.get("tables", []):
            if (
                entry.get("schema", "").lower() == table["schema"].lower()
                and entry.get("name", "").lower() == table["name"].lower()
                and entry.get("column", "").lower() == column.lower()
                and not entry.get("error")
            ):
                return snap, entry
        return None


def unreadable(name: str, error: str) -> ToolFailure:
    """The live read's error, when there is no snapshot to fall back on either."""
    return ToolFailure(error, f"warehouse '{name}' cannot be read now and has no schema snapshot")


def split(table_name: str) -> list[str]:
    try:
        return wschema.split_name(table_name)
    except ValueError as exc:
        raise ToolFailure("invalid_argument", str(exc)) from None


def table_index(snapshot: Snapshot) -> dict[str, list[dict[str, Any]]]:
    return snapshot.derived("table_index", lambda s: wschema.index_tables(s.data))


def _relation_table(snapshot: Snapshot, relation: manifest.Relation) -> dict[str, Any] | None:
    return wschema.relation_table(
        table_index(snapshot), relation.schema, relation.identifier, relation.database
    )


def _sibling_catalog(manifest_path: str | None) -> str | None:
    """With an explicit manifest, the catalog.json next to it (if any) types its columns."""
    if manifest_path is None:
        return None
    candidate = Path(manifest_path).with_name("catalog.json")
    return str(candidate) if candidate.exists() else None
