"""The live probes of the lineage join as one table: per kind, how it probes (one bounded read), what it can
explain (the causes of conditions.VOCABULARY its reading feeds, said in their words there), the tool an agent
calls to read the same thing itself, where its reading goes in the findings, and what it records for the next
agent (the observations the single-system tools record for the same read; profiles are recorded apart, after the
answer, store/profiles.py).

The MCP layer plans and runs the probes (mcp_bridge/toolsets/lineage/live.py); this table is what it does with a
reading, so a new probe is one row here and its planner there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.lineage.evidence import LiveFindings


@dataclass(frozen=True)
class ProbeKind:
    kind: str
    reads: str  # how it probes
    explains: tuple[str, ...]  # the causes (conditions.VOCABULARY) its reading can reveal
    next_tool: str  # the single-system tool that reads the same
    keep: Callable[[LiveFindings, str | None, Any], None]  # its reading into the findings
    observe: Callable[[dict[str, Any], Any], list[Any]] | None = None  # facts, reading -> observations


def _symptom(live: LiveFindings, node: str | None, value: Any) -> None:
    live.symptom = value


def _table(live: LiveFindings, node: str | None, value: Any) -> None:
    if value is not None:
        live.tables[node or ""] = value


def _freshness(live: LiveFindings, node: str | None, value: Any) -> None:
    if value is not None:
        live.freshness[node or ""] = value


def _run_results(live: LiveFindings, node: str | None, value: Any) -> None:
    live.run_results = value


def _invocation(live: LiveFindings, node: str | None, value: Any) -> None:
    live.invocation = value


def _builder(live: LiveFindings, node: str | None, value: Any) -> None:
    if value is not None:
        live.builders[node or ""] = value


def _profile(live: LiveFindings, node: str | None, value: Any) -> None:
    if value is not None:
        live.values[node or ""] = value


def _observe_tiles(facts: dict[str, Any], value: Any) -> list[Any]:
    from ade_platform.lib import live_observations as lo
    from ade_platform.lib.bi.names import health_asset
    from ade_platform.store.observations import tile_key

    tool, dash = facts["tool"], facts["dashboard"]
    tiles = [{**value, "tile": facts["tile"]}] if facts.get("tile") is not None else value.get("all")
    return [
        lo.Observed(
            "bi_tile_health",
            tile_key(tool, dash, str(t["tile"])),
            {"status": t["status"], "error": t.get("error")},
            health_asset(tool),
        )
        for t in tiles or []
        if t.get("tile") is not None and t.get("status") != "unknown"
    ]


def _observe_table(facts: dict[str, Any], value: Any) -> list[Any]:
    from ade_platform.lib import live_observations as lo

    return lo.table_schema(value.table, facts)


def _observe_freshness(facts: dict[str, Any], value: Any) -> list[Any]:
    from ade_platform.lib import live_observations as lo

    answer = {"timestamp_column": value["loaded_at_field"], "max_timestamp": value["max_loaded_at"]}
    return lo.freshness(answer, facts)


def _observe_builder(facts: dict[str, Any], value: Any) -> list[Any]:
    from ade_platform.lib import live_observations as lo

    if facts.get("system") == "dbt_cloud":
        from ade_platform.lib.dbt_cloud import last_run_answer

        return lo.dbt_cloud_run(last_run_answer(value), {"latest": True})
    return lo.orchestrator_run(value, {"backend": facts["system"], "latest": True})


PROBES: dict[str, ProbeKind] = {
    row.kind: row
    for row in (
        ProbeKind(
            "symptom",
            "the tile (or every tile of the dashboard) run now, as bi_check_dashboard_health runs it",
            ("tile_references_missing_column",),
            "bi_check_dashboard_health",
            _symptom,
            _observe_tiles,
        ),
        ProbeKind(
            "table_schema",
            "one table's catalog (describe_table), compared with the schema snapshot history",
            ("schema_change", "schema_drift"),
            "warehouse_get_schema",
            _table,
            _observe_table,
        ),
        ProbeKind(
            "source_freshness",
            "a source's max(loaded_at) against its dbt freshness thresholds",
            ("stale_source",),
            "warehouse_check_freshness",
            _freshness,
            _observe_freshness,
        ),
        ProbeKind(
            "run_results",
            "the target folder's run_results.json when dbt wrote it after the stored snapshot",
            ("failed_model", "skipped_model", "failing_tests"),
            "dbt_get_failed_models",
            _run_results,
        ),
        ProbeKind(
            "invocation",
            "the newest dbt invocation in dbt's log (a parse error writes nothing else)",
            ("failed_invocation",),
            "dbt_get_failed_models",
            _invocation,
        ),
        ProbeKind(
            "builder_run",
            "the last run of a job that builds a model (dbt Cloud, Airflow, Prefect, Dagster), and dbt's error "
            "in a failed run's log",
            ("failed_builder_run", "failed_model"),
            "orchestrator_get_last_run",
            _builder,
            _observe_builder,
        ),
        ProbeKind(
            "profile",
            "one relation's profile (one bounded query and a grouped mix query, lib/profiles) compared with its "
            "baseline profile",
            ("logic_change", "source_data_change", "value_change"),
            "lineage_what_changed",
            _profile,
        ),
    )
}
