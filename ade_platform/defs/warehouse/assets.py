"""Warehouse assets: schema snapshots (with history) and the drift report, published to the store, with
the drift and PII checks operators see in the Dagster UI (freshness and duplicates: quality.py)."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from datetime import UTC, datetime
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from ade_platform.clients.warehouses import WarehouseError
from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.warehouse.resources import client_for, resource_key
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
from ade_platform.lib.warehouse import drift, freshness, manifest, pii
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.names import drift_asset, schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader

GROUP = "warehouse"
PII_CHECK = "no_new_untagged_pii"
DRIFT_CHECK = "no_schema_drift"


def warehouse_client(context: Any, name: str, settings: Settings) -> Any:
    return client_for(getattr(context.resources, resource_key(name)), name, settings)


def _fail(exc: WarehouseError) -> Failure:
    return Failure(description=f"{exc.code}: {exc.detail}")


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
            data = client.snapshot()
        except WarehouseError as exc:
            raise _fail(exc) from None
        finally:
            client.close()
        prov = store.writer().publish(
            schema_asset(name),
            data,
            run_id=context.run_id,
            source={"warehouse": name, "type": wh.type, "fingerprint": data["fingerprint"]},
        )
        return MaterializeResult(
            metadata={
                "table_count": data["table_count"],
                "column_count": data["column_count"],
                "fingerprint": data["fingerprint"],
                "store_version": prov.version,
            },
            data_version=DataVersion(prov.data_version),
        )

    return warehouse_schema


def _relations(reader: StoreReader) -> dict[str, manifest.Relation]:
    try:
        manifest_data = reader.latest(ARTIFACT_ASSETS["manifest"]).data
    except SnapshotNotFound:
        return {}
    try:
        catalog = reader.latest(ARTIFACT_ASSETS["catalog"]).data
    except SnapshotNotFound:
        catalog = None
    return manifest.relations(manifest_data, catalog)


def pii_findings(
    reader: StoreReader, name: str, settings: Settings, version: str | None = None
) -> dict[str, Any]:
    """New untagged PII columns of one schema snapshot version (default: the latest) vs its predecessor."""
    asset_name = schema_asset(name)
    versions = reader.versions(asset_name)
    if not versions:
        raise SnapshotNotFound(asset_name)
    version = version or reader.latest(asset_name).version
    position = versions.index(version) if version in versions else len(versions) - 1
    current = reader.get(asset_name, versions[position]).data
    previous = reader.get(asset_name, versions[position - 1]).data if position > 0 else None
    found = pii.new_untagged_pii(
        previous,
        current,
        manifest.by_table(_relations(reader)),
        pii.patterns_from(settings.pii.patterns, settings.pii.ignore),
        settings.pii.tags,
    )
    return {
        "version": versions[position],
        "baseline": versions[position - 1] if position > 0 else None,
        "findings": found,
    }


def pii_metadata(result: dict[str, Any]) -> dict[str, Any]:
    rows = [
        f"| {f['table']} | {f['column']} | {f['pii_pattern_matched']} | {f['dbt_node'] or '-'} |"
        for f in result["findings"]
    ]
    table = (
        "| table | column | looks like | dbt node |\n|---|---|---|---|\n" + "\n".join(rows)
        if rows
        else "none"
    )
    return {
        "snapshot_version": result["version"],
        "baseline_version": MetadataValue.text(result["baseline"] or "(first snapshot)"),
        "new_untagged_pii": MetadataValue.md(table),
        "count": len(result["findings"]),
    }


def pii_check(name: str, settings: Settings) -> Any:
    @asset_check(
        asset=AssetKey(schema_asset(name)),
        name=PII_CHECK,
        description="New columns whose names look like personal data (email, phone, ...) with no `pii` tag in "
        "the dbt manifest. Evaluated by the PII sensor on every new schema snapshot; running it compares "
        "the latest snapshot with the one before.",
        blocking=False,
    )
    def new_untagged_pii(context: AssetCheckExecutionContext, store: StoreResource) -> AssetCheckResult:
        result = pii_findings(store.reader(), name, settings)
        return AssetCheckResult(
            passed=not result["findings"], severity=AssetCheckSeverity.ERROR, metadata=pii_metadata(result)
        )

    return new_untagged_pii


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
        rels = _relations(reader)

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
            run_id=context.run_id,
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
        return MaterializeResult(
            metadata={
                "checked": summary["checked"],
                "drifted": summary["drifted"],
                "store_version": prov.version,
            },
            data_version=DataVersion(prov.data_version),
            check_results=[check],
        )

    return warehouse_drift
