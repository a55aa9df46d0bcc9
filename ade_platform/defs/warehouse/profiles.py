"""Data profiles of the dbt warehouse's relations, and the monitors on them (issue 33, items 2 and 4).

- `warehouse_profiles_<name>`: profiles every relation of the dbt manifest that the schema snapshot holds (one
  bounded query each, plus one grouped query for the value mixes), records each in the store's profile history
  (`store/profiles.py`), and publishes a summary. Its checks are the monitors, with thresholds learned from each
  relation's history: volume, freshness cadence, null rate, duplicates, value mix; each lists the relations it
  flags with the numbers.
- It runs after each dbt build: inside `build_everything` (after the schema snapshot), and by its sensor, which
  requests a run for every new `dbt_run_results` version in the store (a build by ADE, in a terminal or CI, or in
  dbt Cloud); and on its schedule (`profiles.schedule_cron`), the daily points the monitors learn from.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import time
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSelection,
    MaterializeResult,
    MetadataValue,
    SensorEvaluationContext,
    asset,
)

from ade_platform.clients.warehouses import protect_rules
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Tick, failure_sensor, sensor_run
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.schedules import refresh_job
from ade_platform.defs.store_results import stored_result
from ade_platform.defs.warehouse.assets import warehouse_client
from ade_platform.defs.warehouse.resources import resource_key
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
from ade_platform.lib.profiles.run import DUCKDB_HOLD_SECONDS, profile_all
from ade_platform.lib.profiles.targets import profile_targets
from ade_platform.lib.warehouse.names import check_name, profiles_asset, schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader
from ade_platform.store.profiles import profile_history, record_profile

GROUP = "profiles"
JOB = "profile_warehouse"
RUN_RESULTS = ARTIFACT_ASSETS["run-results"]
SENSOR_INTERVAL_SECONDS = 60
CHECKS = {
    "volume": ("profile_volume", "The row count moved outside the band its history allows (same weekday when "
               "there are three weeks of history; +-10% without history)."),
    "freshness": ("profile_freshness_cadence", "The row count has not changed for longer than the relation's "
                  "own cadence allows after a change on that weekday."),
    "null_rate": ("profile_null_rate", "A column's null rate moved more points than its history allows."),
    "duplicates": ("profile_duplicates", "A key dbt declares unique gained duplicate rows."),
    "value_mix": ("profile_value_mix", "A value of a low-cardinality column appeared, vanished or moved its "
                  "share more than the history allows."),
}  # fmt: skip


def _latest(reader: StoreReader, asset_name: str) -> Any:
    try:
        return reader.latest(asset_name)
    except SnapshotNotFound:
        return None


def _check(monitor: str, summary: dict[str, Any]) -> AssetCheckResult:
    name, _ = CHECKS[monitor]
    rows = summary["failing"][monitor]
    lines = [f"| {r['relation']} | {r['detail']} | {r.get('learned_from_days', '-')} |" for r in rows]
    table = "| relation | what moved | days learned from |\n|---|---|---|\n" + "\n".join(lines)
    return AssetCheckResult(
        check_name=name,
        passed=not rows,
        severity=AssetCheckSeverity.ERROR if monitor == "duplicates" else AssetCheckSeverity.WARN,
        metadata={
            "relations_judged": summary["profiled"],
            "relations_flagged": summary["failing_counts"][monitor],
            "flagged": MetadataValue.md(table if lines else "none"),
        },
    )


def profiles_asset_def(name: str, settings: Settings) -> Any:
    wh = settings.warehouses[name]
    cfg = settings.profiles
    key = AssetKey(profiles_asset(name))

    @asset(
        name=profiles_asset(name),
        group_name=GROUP,
        deps=[AssetKey(schema_asset(name)), AssetKey(ARTIFACT_ASSETS["manifest"])],
        description=f"Data profiles of warehouse '{name}': per dbt relation the row count, per column nulls, "
        "distinct count, min/max/sum of numerics and dates, the value mix of low-cardinality columns, and "
        "duplicates on the keys dbt tests declare unique (one bounded query per relation; personal or excluded "
        "columns counted only). Each profile joins the relation's history in the store; the checks are monitors "
        "with thresholds learned from that history.",
        kinds={wh.type},
        required_resource_keys={resource_key(name), "store"},
        check_specs=[AssetCheckSpec(n, asset=key, description=d, blocking=False) for n, d in CHECKS.values()],
    )
    def warehouse_profiles(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        reader, writer = store.reader(), store.writer()
        snapshot = reader.latest(schema_asset(name))
        manifest = _latest(reader, ARTIFACT_ASSETS["manifest"])
        catalog = _latest(reader, ARTIFACT_ASSETS["catalog"])
        run_results = _latest(reader, RUN_RESULTS)
        targets = profile_targets(
            manifest.data if manifest else {},
            catalog.data if catalog else None,
            snapshot.data,
            lambda tagged: protect_rules(settings, name, tagged),
        )
        client = warehouse_client(context, name, settings)
        if hasattr(client, "hold_seconds"):
            client.hold_seconds = DUCKDB_HOLD_SECONDS
        started = time.perf_counter()
        try:
            summary = profile_all(
                lambda sql: [tuple(row.values()) for row in client.query(sql).rows],
                wh.type,
                name,
                targets,
                history=lambda relation: profile_history(reader, name, relation),
                record=lambda profile: record_profile(
                    writer, profile, "warehouse_profiles", profiles_asset(name)
                ),
                max_relations=cfg.max_relations,
                budget_seconds=cfg.budget_seconds,
                mix_bound=cfg.mix_bound,
            )
        finally:
            client.close()
        summary["run_results_version"] = run_results.version if run_results else None
        summary["schema_version"] = snapshot.version
        prov = writer.publish(
            profiles_asset(name),
            summary,
            run_id=context.run.run_id,
            source={"warehouse": name, "run_results_version": summary["run_results_version"]},
        )
        context.log.info(
            f"profiled {summary['profiled']} of {summary['targets']} relations in "
            f"{time.perf_counter() - started:.1f} s; skipped {summary['skipped']}"
        )
        skipped = [f"| {s['relation']} | {s['reason']} |" for s in summary["skipped_relations"]]
        return stored_result(
            prov,
            {
                "profiled": summary["profiled"],
                "skipped": summary["skipped"],
                "query_ms": MetadataValue.float(summary["query_ms"]),
                "skipped_relations": MetadataValue.md(
                    "| relation | why |\n|---|---|\n" + "\n".join(skipped) if skipped else "none"
                ),
            },
            check_results=[_check(m, summary) for m in CHECKS],
        )

    return warehouse_profiles


def after_build_sensor(name: str, settings: Settings, job: Any) -> Any:
    """A run of the profile job for every new dbt_run_results version the profiles have not covered yet."""

    def poll(context: SensorEvaluationContext) -> Tick:
        reader = StoreReader(settings.store_root)
        results = _latest(reader, RUN_RESULTS)
        if results is None:
            return Tick(skip_reason="no dbt build has published run results yet")
        covered = _latest(reader, profiles_asset(name))
        if (
            covered is not None
            and (covered.provenance.source or {}).get("run_results_version") == results.version
        ):
            return Tick(skip_reason="the profiles already cover the latest dbt build", cursor=results.version)
        if context.cursor == results.version:
            return Tick(skip_reason="a profile run was already requested for the latest dbt build")
        return Tick(
            run_requests=[sensor_run(f"{name}:{results.version}", "dbt build", **{"ade/warehouse": name})],
            cursor=results.version,
        )

    return failure_sensor(
        f"profile_after_build_sensor_{check_name(name)}",
        job=job,
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        description=f"Profiles warehouse '{name}' after each dbt build (every new dbt_run_results in the store: "
        "ADE's builds, a terminal or CI, dbt Cloud) unless the build's own run already profiled it.",
        poll=poll,
    )


def profile_definitions(name: str, settings: Settings) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """(assets, jobs, schedules, sensors) of the profiles of the dbt warehouse `name`."""
    if not settings.profiles.enabled:
        return [], [], [], []
    selection = AssetSelection.assets(AssetKey(profiles_asset(name)))
    job, schedules = refresh_job(settings, JOB, selection, settings.profiles.schedule_cron)
    return [profiles_asset_def(name, settings)], [job], schedules, [after_build_sensor(name, settings, job)]
