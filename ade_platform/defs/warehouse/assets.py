"""Warehouse assets, published to the store with the asset checks operators see in the Dagster UI: schema
snapshots (with history) and the drift report (its drift check); the data-quality assets: freshness of configured
tables and duplicates on the keys that dbt `unique` tests declare (the PII check: checks.py)."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from datetime import UTC, datetime
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ade_platform.clients.warehouses import WarehouseError, open_client
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.step_failure import failing_step
from ade_platform.defs.store_results import stored_result
from ade_platform.defs.warehouse.resources import client_for, resource_key
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
from ade_platform.lib.warehouse import drift, freshness, manifest
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.duplicates import severity
from ade_platform.lib.warehouse.names import (
    check_name,
    drift_asset,
    duplicates_asset,
    freshness_asset,
    schema_asset,
)
from ade_platform.lib.warehouse.sql import duplicate_summary_sql, max_timestamp_sql
from ade_platform.store import SnapshotNotFound, StoreReader

GROUP = "warehouse"
DRIFT_CHECK = "no_schema_drift"
DUPLICATES_CHECK = "no_duplicate_keys"


def warehouse_client(context: Any, name: str, settings: Settings) -> Any:
    return client_for(getattr(context.resources, resource_key(name)), name, settings)


def warehouse_address(wh: Any) -> str:
    """Where a configured warehouse is: its DuckDB file, Snowflake host or account, BigQuery endpoint or project."""
    if wh.type == "duckdb":
        return str(wh.path)
    if wh.type == "snowflake":
        return f"{wh.protocol}://{wh.host}:{wh.port or 443}" if wh.host else f"account {wh.account}"
    return wh.api_endpoint or f"project {wh.project}"


def warehouse_system(settings: Settings, name: str) -> Polled[Any]:
    """A configured warehouse, as its assets read it (through their Dagster resource's client) and its drift
    sensor polls it (through a client built from the same settings: sensors hold no resources)."""
    return Polled(
        f"warehouse '{name}'",
        warehouse_address(settings.warehouses[name]),
        lambda: open_client(settings, name),
        (WarehouseError,),
        f"warehouses.{name}",
    )


def schema_snapshot_asset(name: str, settings: Settings, upstream: list[AssetKey]) -> Any:
    wh = settings.warehouses[name]

    @asset(
        name=schema_asset(name),
        group_name=GROUP,
        deps=upstream,
        description=f"Schema snapshot of warehouse '{name}' ({wh.type} INFORMATION_SCHEMA): tables, columns, "
        "types. Every materialization is a new version in the store, so drift can say since when.",
        kinds={wh.type},
        required_resource_keys={resource_key(name), "store"},
    )
    def warehouse_schema(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        client = warehouse_client(context, name, settings)
        try:
            with failing_step(warehouse_system(settings, name)):
                data = client.snapshot()
        finally:
            client.close()
        prov = store.writer().publish(
            schema_asset(name),
            data,
            run_id=context.run.run_id,
            source={"warehouse": name, "type": wh.type, "fingerprint": data["fingerprint"]},
        )
        return stored_result(
            prov,
            {
                "table_count": data["table_count"],
                "column_count": data["column_count"],
                "fingerprint": data["fingerprint"],
            },
        )

    return warehouse_schema


def declared_relations(reader: StoreReader) -> dict[str, manifest.Relation]:
    try:
        manifest_data = reader.latest(ARTIFACT_ASSETS["manifest"]).data
    except SnapshotNotFound:
        return {}
    try:
        catalog = reader.latest(ARTIFACT_ASSETS["catalog"]).data
    except SnapshotNotFound:
        catalog = None
    return manifest.relations(manifest_data, catalog)


def _history_refs(reader: StoreReader, asset_name: str, upto: str) -> list[drift.SnapshotRef]:
    refs = [drift.SnapshotRef(p.version, p.materialized_at) for p in reader.history(asset_name)]
    return [r for r in reversed(refs) if r.version <= upto]


def drift_report_asset(name: str, settings: Settings) -> Any:
    wh = settings.warehouses[name]
    key = AssetKey(drift_asset(name))

    @asset(
        name=drift_asset(name),
        group_name=GROUP,
        deps=[
            AssetKey(schema_asset(name)),
            AssetKey(ARTIFACT_ASSETS["manifest"]),
            AssetKey(ARTIFACT_ASSETS["catalog"]),
        ],
        description=f"Schema drift of warehouse '{name}': the columns and types the dbt manifest declares "
        "(typed by dbt's catalog where the yml gives none) vs the latest schema snapshot, with the snapshot "
        "version that first showed each change.",
        kinds={"python"},
        check_specs=[
            AssetCheckSpec(
                DRIFT_CHECK,
                asset=key,
                description="Fails when a declared column was removed or retyped, or a relation is missing; "
                "warns on columns that appeared outside dbt.",
            )
        ],
    )
    def warehouse_drift(context: AssetExecutionContext, store: StoreResource) -> MaterializeResult:
        reader = store.reader()
        snapshot = reader.latest(schema_asset(name))
        index = wschema.index_tables(snapshot.data)
        rels = declared_relations(reader)

        def table_of(rel: manifest.Relation) -> dict[str, Any] | None:
            return wschema.relation_table(index, rel.schema, rel.identifier, rel.database)

        summary = drift.summarize(rels, table_of, wh.type)
        history = _history_refs(reader, snapshot.asset, snapshot.version)
        cache: dict[str, dict[str, list[dict[str, Any]]]] = {snapshot.version: index}
        for report in summary["relations"]:
            rel = rels[report["unique_id"]]

            def table_at(version: str, rel: manifest.Relation = rel) -> dict[str, Any] | None:
                if version not in cache:
                    cache[version] = wschema.index_tables(reader.get(snapshot.asset, version).data)
                return wschema.relation_table(cache[version], rel.schema, rel.identifier, rel.database)

            drift.since_when(report, history, table_at, wh.type)
        summary["schema_version"] = snapshot.version
        summary["checked_at"] = freshness.iso(datetime.now(UTC))
        prov = store.writer().publish(
            drift_asset(name),
            summary,
            run_id=context.run.run_id,
            source={"warehouse": name, "schema_version": snapshot.version},
        )
        lines = [
            f"| {r['relation']} | {r['severity']} | {', '.join(c['column_name'] for c in r['removed_from_warehouse']) or '-'} | "
            f"{', '.join(c['column_name'] for c in r['added_in_warehouse']) or '-'} | "
            f"{', '.join(c['column_name'] for c in r['type_changed']) or '-'} |"
            for r in summary["relations"]
            if r["severity"] != "info"
        ]
        table = "| relation | severity | removed | added | retyped |\n|---|---|---|---|---|\n" + "\n".join(
            lines
        )
        passed = summary["errors"] == 0 and summary["warnings"] == 0
        check = AssetCheckResult(
            check_name=DRIFT_CHECK,
            passed=passed,
            severity=AssetCheckSeverity.ERROR if summary["errors"] else AssetCheckSeverity.WARN,
            metadata={
                "errors": summary["errors"],
                "warnings": summary["warnings"],
                "drift": MetadataValue.md(table if lines else "none"),
            },
        )
        return stored_result(
            prov, {"checked": summary["checked"], "drifted": summary["drifted"]}, check_results=[check]
        )

    return warehouse_drift


def freshness_asset_def(name: str, settings: Settings) -> Any:
    wh = settings.warehouses[name]
    targets = list(wh.freshness)
    key = AssetKey(freshness_asset(name))
    names = [check_name(f"freshness_{t.table}_{t.column}") for t in targets]

    @asset(
        name=freshness_asset(name),
        group_name=GROUP,
        deps=[AssetKey(schema_asset(name))],
        description=f"Freshness of the tables configured for warehouse '{name}': the newest value of each "
        "timestamp column and its age, checked against the configured warn/error hours.",
        kinds={wh.type},
        required_resource_keys={resource_key(name), "store"},
        check_specs=[
            AssetCheckSpec(
                n, asset=key, description=f"{t.table}.{t.column} newer than {t.error_after_hours:g} h"
            )
            for n, t in zip(names, targets, strict=True)
        ],
    )
    def warehouse_freshness(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        client = warehouse_client(context, name, settings)
        now = datetime.now(UTC)
        entries, checks = [], []
        try:
            for check, target in zip(names, targets, strict=True):
                entry: dict[str, Any] = {
                    "table": target.table,
                    "column": target.column,
                    "warn_after_hours": target.warn_after_hours,
                    "error_after_hours": target.error_after_hours,
                }
                try:
                    resolved = client.resolve_table(wschema.split_name(target.table))
                    column = next(
                        (c["name"] for c in resolved.columns if c["name"].lower() == target.column.lower()),
                        None,
                    )
                    if column is None:
                        raise WarehouseError(
                            "column_not_found", f"{target.table} has no column {target.column!r}"
                        )
                    row = client.query(max_timestamp_sql(resolved.parts, column, wh.type), max_rows=1).rows[0]
                    newest, count = list(row.values())
                    hours = freshness.staleness_hours(newest, now)
                    status = freshness.verdict(hours, target.warn_after_hours, target.error_after_hours)
                    entry.update(
                        schema=resolved.parts[-2],
                        name=resolved.parts[-1],
                        max_timestamp=freshness.iso(freshness.as_utc(newest)),
                        row_count=count,
                        staleness_hours=hours,
                        status=status,
                        error=None,
                    )
                except WarehouseError as exc:
                    status, hours = "error", None
                    entry.update(status="error", error=f"{exc.code}: {exc.detail}")
                entries.append(entry)
                checks.append(
                    AssetCheckResult(
                        check_name=check,
                        passed=status == "pass",
                        severity=AssetCheckSeverity.WARN if status == "warn" else AssetCheckSeverity.ERROR,
                        metadata={
                            "staleness_hours": MetadataValue.float(hours)
                            if hours is not None
                            else MetadataValue.text("n/a"),
                            "status": status,
                            **({"error": entry["error"]} if entry.get("error") else {}),
                        },
                    )
                )
        finally:
            client.close()
        data = {"warehouse": name, "checked_at": freshness.iso(now), "tables": entries}
        prov = store.writer().publish(
            freshness_asset(name), data, run_id=context.run.run_id, source={"warehouse": name}
        )
        return MaterializeResult(
            metadata={
                "tables": len(entries),
                "stale": sum(e["status"] != "pass" for e in entries),
                "store_version": prov.version,
            },
            check_results=checks,
        )

    return warehouse_freshness


def duplicates_asset_def(name: str, settings: Settings) -> Any:
    wh = settings.warehouses[name]
    key = AssetKey(duplicates_asset(name))

    @asset(
        name=duplicates_asset(name),
        group_name=GROUP,
        deps=[AssetKey(schema_asset(name)), AssetKey(ARTIFACT_ASSETS["manifest"])],
        description=f"Duplicate keys in warehouse '{name}' on every key a dbt `unique` test declares (read from "
        "the manifest snapshot), re-checked against the data as it is now.",
        kinds={wh.type},
        required_resource_keys={resource_key(name), "store"},
        check_specs=[
            AssetCheckSpec(DUPLICATES_CHECK, asset=key, description="No declared unique key has duplicates.")
        ],
    )
    def warehouse_duplicates(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        reader = store.reader()
        index = wschema.index_tables(reader.latest(schema_asset(name)).data)
        try:
            manifest_data = reader.latest(ARTIFACT_ASSETS["manifest"]).data
        except SnapshotNotFound:
            manifest_data = {}
        rels = manifest.relations(manifest_data)
        client = warehouse_client(context, name, settings)
        results = []
        try:
            for key_def in manifest.unique_keys(manifest_data):
                rel = rels.get(key_def.relation_id)
                table = (
                    wschema.relation_table(index, rel.schema, rel.identifier, rel.database) if rel else None
                )
                if table is None:
                    continue
                columns = [wschema.find_column(table, c) for c in key_def.columns]
                if any(c is None for c in columns):
                    continue
                parts = [p for p in (table.get("database"), table["schema"], table["name"]) if p]
                keys = [c["name"] for c in columns if c is not None]
                try:
                    first = client.query(duplicate_summary_sql(parts, keys, wh.type), max_rows=1).rows[0]
                    row = {k.lower(): v for k, v in first.items()}
                except WarehouseError as exc:
                    results.append(
                        {
                            "relation": wschema.qualified(table),
                            "key_columns": keys,
                            "test": key_def.test_id,
                            "error": exc.detail,
                        }
                    )
                    continue
                total, dup_rows = int(row["total_rows"] or 0), int(row["duplicate_row_count"] or 0)
                rate = round(100.0 * dup_rows / total, 2) if total else 0.0
                dup_keys = int(row["duplicate_key_count"] or 0)
                results.append(
                    {
                        "relation": wschema.qualified(table),
                        "key_columns": keys,
                        "test": key_def.test_id,
                        "total_rows": total,
                        "duplicate_key_count": dup_keys,
                        "duplicate_row_count": dup_rows,
                        "duplication_rate_pct": rate,
                        "severity": severity(rate, dup_keys),
                    }
                )
        finally:
            client.close()
        offenders = [r for r in results if r.get("duplicate_key_count") or r.get("error")]
        prov = store.writer().publish(
            duplicates_asset(name),
            {"warehouse": name, "keys": results},
            run_id=context.run.run_id,
            source={"warehouse": name},
        )
        lines = [
            f"| {r['relation']} | {', '.join(r['key_columns'])} | {r.get('duplicate_key_count', '-')} | {r.get('severity', r.get('error'))} |"
            for r in offenders
        ]
        check = AssetCheckResult(
            check_name=DUPLICATES_CHECK,
            passed=not offenders,
            severity=AssetCheckSeverity.ERROR,
            metadata={
                "keys_checked": len(results),
                "offending": MetadataValue.md(
                    "| relation | key | duplicate keys | severity |\n|---|---|---|---|\n" + "\n".join(lines)
                    if lines
                    else "none"
                ),
            },
        )
        return stored_result(prov, {"keys_checked": len(results)}, check_results=[check])

    return warehouse_duplicates
