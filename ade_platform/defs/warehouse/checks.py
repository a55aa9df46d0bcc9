"""The warehouse's standalone asset check: new columns that look like personal data and carry no `pii` tag.

Its sensor (sensors.py) evaluates it on every new schema snapshot version, so jobs leave it out
(`sensor_evaluated_checks`); running it by hand compares the latest snapshot with the one before.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
    asset_check,
)

from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.warehouse.assets import declared_relations
from ade_platform.lib.warehouse import manifest, pii
from ade_platform.lib.warehouse.names import schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader

PII_CHECK = "no_new_untagged_pii"


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
        manifest.by_table(declared_relations(reader)),
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
