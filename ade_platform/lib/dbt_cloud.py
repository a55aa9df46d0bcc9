"""dbt Cloud answers shaped for the agent and for the store: runs, jobs, steps, freshness and artifact summaries.

Plain functions over the Administrative API v2 payloads (dicts as the API returns them), shared by the dbt-cloud
toolset and the Dagster assets, so a cached answer and a live one have the same shape. Also what an agent's trigger
may be (`checked_trigger`: the job allow-list and the dbt command policy of lib/dbt/command_policy.py) and which
runs may stand for a job (`canonical_run`: never an agent's steps-override run).
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from ade_platform.lib.dbt.command_policy import StepRefused, parse_steps
from ade_platform.lib.errors import CodedError
from ade_platform.lib.timestamps import parse_timestamp

STATUS_NAMES = {1: "queued", 2: "starting", 3: "running", 10: "success", 20: "error", 30: "cancelled"}
# dbtcloud_get_last_run's filter: dbt Cloud's status strings (case-insensitive) -> the numeric status.
STATUS_FILTERS = {"success": 10, "error": 20, "cancelled": 30}
TERMINAL = frozenset({10, 20, 30})
ARTIFACT_NAMES = ("manifest.json", "catalog.json", "run_results.json", "sources.json")
# artifact file -> its kind in lib/dbt/artifacts (schema checks) and lib/dbt/publish (store slots)
ARTIFACT_KINDS = {
    "manifest.json": "manifest",
    "catalog.json": "catalog",
    "run_results.json": "run-results",
    "sources.json": "sources",
}
# artifact file -> the dbt-artifacts tools that read it (when dbt_cloud.dbt_tools_job publishes a run's files)
DBT_TOOLS_READING = {
    "manifest.json": (
        "dbt_get_lineage", "dbt_get_blast_radius", "dbt_get_column_lineage", "dbt_get_model_tests",
        "dbt_get_schema", "dbt_find_select_star", "dbt_scan_pii_risk", "dbt_detect_silent_skip",
    ),
    "catalog.json": ("dbt_get_schema", "dbt_get_column_lineage", "dbt_scan_pii_risk"),
    "run_results.json": ("dbt_get_failed_models", "dbt_detect_silent_skip"),
    "sources.json": ("dbt_get_source_freshness",),
}  # fmt: skip
# what dbtcloud_fetch_artifact's summary suggests, per artifact: JMESPath that picks one part
NARROWING = {
    "manifest.json": 'nodes."model.<project>.<model>" | keys(nodes) | nodes.*.{id: unique_id, deps: depends_on.nodes}',
    "catalog.json": 'nodes."model.<project>.<model>".columns | keys(nodes)',
    "run_results.json": "results[?status!='success'].{id: unique_id, status: status, message: message}",
    "sources.json": "results[?status!='pass'].{id: unique_id, status: status, age: max_loaded_at_time_ago_in_s}",
}
_INVOKE = re.compile(r"^Invoke dbt with `(?P<command>.+)`$")


def is_freshness_step(step: dict[str, Any]) -> bool:
    """A run step that runs `dbt source freshness` (the job's "run source freshness" setting or an explicit step)."""
    invoke = _INVOKE.match(str(step.get("name") or ""))
    return invoke is not None and invoke["command"].split()[:3] == ["dbt", "source", "freshness"]


def status_name(code: Any) -> str:
    return STATUS_NAMES.get(code if isinstance(code, int) else -1, "unknown")


def iso(value: Any) -> str | None:
    moment = parse_timestamp(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def seconds_between(start: Any, end: Any) -> float | None:
    a, b = parse_timestamp(start), parse_timestamp(end)
    return round((b - a).total_seconds(), 3) if a and b else None


# ADE appends this to the cause of every run an agent triggers: dbt Cloud keeps no other record of who asked for a
# run, and the canonical-run rule below must tell an agent's override run from an operator's.
AGENT_CAUSE_MARK = " [via ADE]"


def agent_cause(cause: str) -> str:
    """The cause ADE sends to dbt Cloud for an agent's trigger."""
    return cause + AGENT_CAUSE_MARK


def steps_override_of(run: dict[str, Any]) -> list[str] | None:
    """The run's steps override, from its `trigger` (the API includes it with include_related=["trigger"])."""
    steps = (run.get("trigger") or {}).get("steps_override")
    return [str(s) for s in steps] if isinstance(steps, list) and steps else None


def started_by_agent(run: dict[str, Any]) -> bool:
    return str((run.get("trigger") or {}).get("cause") or "").endswith(AGENT_CAUSE_MARK)


def canonical_run(run: dict[str, Any]) -> bool:
    """Whether a run's artifacts may stand for the job (the dbt tools' manifest, freshness): a run that ran the
    job's own steps, or one whose steps an operator overrode. An agent's override run never is: what it ran was
    chosen by the agent. A run listed without its trigger cannot be told apart, so it is not canonical either."""
    if not isinstance(run.get("trigger"), dict):
        return False
    return steps_override_of(run) is None or not started_by_agent(run)


class TriggerRefused(CodedError, ValueError):
    """A trigger refused before any API call: a stable error code, a detail and what to show with it."""


def checked_trigger(
    job_id: int,
    steps_override: list[str] | None,
    *,
    triggerable: list[int],
    allow_steps_override: bool,
    allow_full_refresh: bool,
    secret: str = "",
) -> list[str] | None:
    """The steps to send for an agent's trigger (the policy's rendering), or TriggerRefused: a job off the
    allow-list (`trigger_not_allowed`), an override when overrides are off or one the dbt command policy refuses
    (`steps_override_refused`, naming the step and the token; a token holding the API token shows as ***)."""
    if job_id not in triggerable:
        raise TriggerRefused(
            "trigger_not_allowed",
            f"job {job_id} is not on the trigger allow-list",
            "An operator adds it to dbt_cloud.triggerable_jobs in ade.yaml (default: tracked_jobs).",
        )
    if steps_override is None:
        return None
    if not allow_steps_override:
        raise TriggerRefused(
            "steps_override_refused",
            "steps overrides are turned off (dbt_cloud.allow_steps_override: false); omit steps_override",
        )
    try:
        commands = parse_steps(steps_override, allow_full_refresh=allow_full_refresh)
    except StepRefused as exc:
        where = f"steps_override[{exc.index}]" if exc.index is not None else "steps_override"
        detail, token = f"{where}: {exc.reason}", exc.token
        if token and _overlaps(token, secret):
            detail, token = detail.replace(token, "***"), "***"
        raise TriggerRefused("steps_override_refused", detail, step_index=exc.index, token=token) from None
    return [command.text for command in commands]


def _overlaps(shown: str, secret: str) -> bool:
    """Whether a token the policy names (perhaps truncated with …) holds the secret or 8 characters of it."""
    core = shown.rstrip("…")
    if not secret:
        return False
    return secret in core or any(core[i : i + 8] in secret for i in range(len(core) - 7))


def triggered_by(run: dict[str, Any]) -> str:
    trigger = run.get("trigger") or {}
    category = str(trigger.get("cause_category") or "").lower()
    cause = str(trigger.get("cause") or "")
    if category in ("scheduled", "schedule") or cause.lower().startswith("scheduled"):
        return "scheduler"
    if category in ("github", "gitlab", "azure_devops", "webhook") or trigger.get("github_pull_request_id"):
        return "webhook"
    return "api"


def step_summary(step: dict[str, Any]) -> dict[str, Any]:
    name = str(step.get("name") or "")
    match = _INVOKE.match(name)
    status = status_name(step.get("status"))
    if str(step.get("status_humanized") or "").lower() == "skipped":
        status = "skipped"
    return {
        "index": step.get("index"),
        "name": match["command"] if match else name,
        "status": status,
        "started_at": iso(step.get("started_at")),
        "finished_at": iso(step.get("finished_at")),
        "duration_seconds": seconds_between(step.get("started_at"), step.get("finished_at")),
    }


def run_record(run: dict[str, Any]) -> dict[str, Any]:
    """One run as the `dbt_cloud_runs` asset stores it (docs/STORE_ASSETS.md)."""
    trigger = run.get("trigger") or {}
    return {
        "id": run.get("id"),
        "job_id": run.get("job_definition_id") or run.get("job_id"),
        "status": status_name(run.get("status")),
        "status_code": run.get("status"),
        "created_at": iso(run.get("created_at")),
        "started_at": iso(run.get("started_at")),
        "finished_at": iso(run.get("finished_at")),
        "duration_seconds": seconds_between(run.get("started_at"), run.get("finished_at")),
        "git_sha": run.get("git_sha"),
        "trigger_cause": str(trigger.get("cause") or "").removesuffix(AGENT_CAUSE_MARK) or None,
        "triggered_by": triggered_by(run),
        "started_by_agent": started_by_agent(run),
        "steps_override": steps_override_of(run),
        "status_message": run.get("status_message"),
        "href": run.get("href"),
        "has_docs_generated": bool(run.get("has_docs_generated")),
        "has_sources_generated": bool(run.get("has_sources_generated")),
    }


def last_run_answer(record: dict[str, Any]) -> dict[str, Any]:
    """dbtcloud_get_last_run's shape from a run record."""
    status = str(record.get("status") or "unknown")
    return {
        "run_id": record["id"],
        "job_id": record["job_id"],
        "status": status.capitalize(),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "duration_seconds": record.get("duration_seconds"),
        "triggered_by": record.get("triggered_by"),
        "cause": record.get("trigger_cause"),
        "git_sha": record.get("git_sha"),
        "status_message": record.get("status_message"),
        "href": record.get("href"),
        "started_by_agent": bool(record.get("started_by_agent")),
        "steps_override": record.get("steps_override"),
    }


def job_record(job: dict[str, Any], tracked: bool) -> dict[str, Any]:
    """One job as the `dbt_cloud_jobs` asset stores it (docs/STORE_ASSETS.md), plus what list_jobs shows."""
    schedule = job.get("schedule") or {}
    triggers = job.get("triggers") or {}
    environment = job.get("environment") or {}
    return {
        "id": job.get("id"),
        "name": job.get("name"),
        "project_id": job.get("project_id"),
        "environment_id": job.get("environment_id"),
        "environment_name": environment.get("name"),
        "execute_steps": list(job.get("execute_steps") or []),
        "state": job.get("state"),
        "schedule_enabled": bool(triggers.get("schedule")),
        "schedule_cron": schedule.get("cron") if triggers.get("schedule") else None,
        "tracked": tracked,
        "generate_docs": bool(job.get("generate_docs")),
        "run_generate_sources": bool(job.get("run_generate_sources")),
        "job_type": job.get("job_type"),
        "updated_at": iso(job.get("updated_at")),
    }


def same_jobs(records: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> bool:
    """Whether stored job records still describe the jobs dbt Cloud lists: the same ids, none changed since."""
    stored = {r.get("id"): r.get("updated_at") for r in records}
    return stored == {j.get("id"): iso(j.get("updated_at")) for j in jobs}


def list_jobs_entry(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "job_id": record["id"],
        "name": record.get("name"),
        "environment_id": record.get("environment_id"),
        "environment_name": record.get("environment_name"),
        "schedule_enabled": bool(record.get("schedule_enabled")),
        "cron": record.get("schedule_cron"),
        "steps": list(record.get("execute_steps") or []),
        "generate_docs": bool(record.get("generate_docs")),
        "run_source_freshness": bool(record.get("run_generate_sources")),
        "tracked": bool(record.get("tracked")),
    }


def runs_freshness(job: dict[str, Any]) -> bool:
    """Whether a job's runs include source freshness (the job setting, or an explicit step)."""
    if job.get("run_generate_sources"):
        return True
    return any("source freshness" in " ".join(str(s).split()) for s in job.get("execute_steps") or [])


def freshness_rows(sources: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-source rows of a sources.json artifact."""
    rows = []
    for result in sources.get("results") or []:
        unique_id = str(result.get("unique_id") or "")
        parts = unique_id.split(".")
        rows.append(
            {
                "unique_id": unique_id,
                "source_name": parts[2] if len(parts) >= 4 else None,
                "table_name": parts[3] if len(parts) >= 4 else None,
                "status": result.get("status"),
                "max_loaded_at": iso(result.get("max_loaded_at")),
                "snapshotted_at": iso(result.get("snapshotted_at")),
                "age_seconds": _number(result.get("max_loaded_at_time_ago_in_s")),
                "error": (result.get("error") or None) if result.get("status") == "runtime error" else None,
            }
        )
    return rows


def _number(value: Any) -> float | None:
    return round(float(value), 3) if isinstance(value, int | float) else None


def artifact_summary(name: str, data: Any, *, result_over: int | None = None) -> dict[str, Any]:
    """What a large artifact holds, in a few hundred bytes: metadata and counts by kind and status, and how to
    ask for one part of it (`result_over`: the cap a query's result went over)."""
    if not isinstance(data, dict):
        return {"top_level": type(data).__name__}
    meta = data.get("metadata") or {}
    too_large = (
        f"the query's result is over {result_over} bytes" if result_over else "the artifact is too large"
    )
    summary: dict[str, Any] = {
        "dbt_schema_version": meta.get("dbt_schema_version"),
        "dbt_version": meta.get("dbt_version"),
        "generated_at": meta.get("generated_at"),
        "top_level_keys": sorted(data)[:50],
        "how_to_narrow": f"{too_large} to inline: pass `query`, a JMESPath expression (jmespath.org) picking the "
        f"part you need, e.g. {NARROWING.get(name, 'keys(@)')}; or read resource_uri for the whole file",
    }
    if name == "manifest.json":
        kinds: dict[str, int] = {}
        for node in (data.get("nodes") or {}).values():
            kind = str(node.get("resource_type") or "node")
            kinds[kind] = kinds.get(kind, 0) + 1
        summary["nodes_by_resource_type"] = kinds
        for key in ("sources", "exposures", "metrics", "macros"):
            summary[f"{key}_count"] = len(data.get(key) or {})
    elif name in ("run_results.json", "sources.json"):
        statuses: dict[str, int] = {}
        for result in data.get("results") or []:
            status = str(result.get("status"))
            statuses[status] = statuses.get(status, 0) + 1
        summary["results_by_status"] = statuses
        summary["elapsed_time"] = data.get("elapsed_time")
    elif name == "catalog.json":
        summary["nodes_count"] = len(data.get("nodes") or {})
        summary["sources_count"] = len(data.get("sources") or {})
    return summary


def freshness_entry(run: dict[str, Any], sources: dict[str, Any]) -> dict[str, Any]:
    """dbtcloud_get_source_freshness's body (without job_id) from a run and its sources.json."""
    return {
        "run_id": run.get("id"),
        "run_status": status_name(run.get("status")),
        "run_finished_at": iso(run.get("finished_at")),
        "sources": freshness_rows(sources),
    }
