"""Operator commands behind `ade materialize` and `ade status` (they import Dagster; the bridge never does)."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from ade_platform.config import Settings
from ade_platform.instance import ensure_dagster_home, open_instance
from ade_platform.live import QUIET_CONSOLE
from ade_platform.store import StoreReader
from ade_platform.store.observations import newest_by_asset


def materialize(settings: Settings, select: str, out: TextIO) -> int:
    """Materialize the selected assets in-process, printing each step and asset as it completes."""
    home = ensure_dagster_home(settings)
    import dagster as dg
    from dagster._core.utils import make_new_run_id

    from ade_platform.definitions import build_definitions

    defs = build_definitions(settings)
    graph = defs.resolve_asset_graph()
    with warnings.catch_warnings():  # the selection syntax is marked beta; the user needs no warning for it
        warnings.simplefilter("ignore", dg.BetaWarning)
        keys = dg.AssetSelection.from_string(select).resolve(graph)
    if not keys:
        out.write(f"ade: the selection {select!r} matches no asset\n")
        return 2
    instance = open_instance(home)
    job = defs.resolve_implicit_global_asset_job_def()
    run_id = make_new_run_id()

    def execute() -> dict[str, Any]:
        try:
            result = job.execute_in_process(
                instance=instance,
                asset_selection=list(keys),
                run_id=run_id,
                run_config=QUIET_CONSOLE,  # the progress display reads the stored events instead
                raise_on_error=False,
                tags={"ade/source": "cli"},
            )
            return {"success": result.success}
        except Exception as exc:  # surfaced after the progress display stops
            return {"error": exc}

    out.write(f"Materializing {len(keys)} asset(s) into {settings.home}  (run {run_id[:8]})\n")
    # dagster-dbt echoes every dbt event to sys.stdout (a run's captured output in the UI): here it goes to a log
    # file, so the terminal shows one line per step, asset and check. `out` keeps the real stream.
    log_path = settings.home / "logs" / "materialize.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log, contextlib.redirect_stdout(log):
        code = _execute_with_progress(execute, instance, run_id, len(keys), out)
    out.write(f"  (dbt's own output: {log_path})\n")
    return code


def _execute_with_progress(
    execute: Callable[[], dict[str, Any]], instance: Any, run_id: str, total: int, out: TextIO
) -> int:
    """Run execute() in a thread, printing a line per step, asset and check from the run's stored events."""
    outcome: dict[str, Any] = {}
    started = time.time()
    worker = threading.Thread(target=lambda: outcome.update(execute()), daemon=True)
    worker.start()
    seen = 0
    done = 0
    while True:
        finished = not worker.is_alive()
        try:
            events = instance.all_logs(run_id)
        except Exception:
            events = []
        for record in events[seen:]:
            line, counted = _progress_line(record, done, total, started)
            done += counted
            if line:
                out.write(line + "\n")
                out.flush()
        seen = len(events)
        if finished:
            break
        time.sleep(0.3)
    elapsed = time.time() - started
    if "error" in outcome:
        out.write(f"✗ failed after {elapsed:.1f}s: {outcome['error']}\n")
        return 1
    ok = outcome.get("success", False)
    out.write(f"{'✓ done' if ok else '✗ failed'}: {done}/{total} asset(s) in {elapsed:.1f}s (run {run_id})\n")
    return 0 if ok else 1


def _progress_line(record: Any, done: int, total: int, started: float) -> tuple[str | None, int]:
    event = record.dagster_event
    if event is None:
        return None, 0
    stamp = f"[{time.time() - started:6.1f}s]"
    kind = event.event_type_value
    if kind == "STEP_START":
        return f"{stamp} ▶ {event.step_key}", 0
    if kind == "ASSET_MATERIALIZATION":
        key = event.asset_key.to_user_string() if event.asset_key else "?"
        return f"{stamp} ✓ {key}  ({done + 1}/{total})", 1
    if kind == "ASSET_CHECK_EVALUATION":
        data = event.event_specific_data
        status = "passed" if data.passed else f"FAILED ({data.severity.value.lower()})"
        return (
            f"{stamp}   check {data.asset_check_key.name} on {data.asset_key.to_user_string()}: {status}",
            0,
        )
    if kind == "STEP_FAILURE":
        return f"{stamp} ✗ {event.step_key} failed: {failure_reason(event.step_failure_data)}", 0
    return None, 0


def failure_reason(data: Any) -> str:
    """Why a step failed, on one line and without a traceback: the description of the `Failure` it raised (an
    asset's failure line, defs/step_failure.py), else only the exception's class: its text may quote anything."""
    text = getattr(getattr(data, "user_failure_data", None), "description", None)
    if not text:
        error = getattr(data, "error", None)
        name = getattr(error, "cls_name", None) or "an error"
        text = f"{name} (the run's page in the Dagster UI has the details)"
    line = " ".join(str(text).split())
    return line if len(line) <= 500 else line[:499] + "…"


def asset_status(settings: Settings) -> list[dict[str, Any]]:
    """Each asset: last materialization, age, run id, and whether upstream data is newer (stale)."""
    home = ensure_dagster_home(settings)

    from ade_platform.definitions import build_definitions

    definitions = build_definitions(settings)
    graph = definitions.resolve_asset_graph()
    last_ticks = _last_ticks(definitions, graph)
    instance = open_instance(home)
    # an asset nothing materializes (the incidents sensor's observations) has no row here: `ade status` lists
    # the incidents themselves below the table
    keys = sorted(
        (k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable),
        key=lambda k: k.to_user_string(),
    )
    latest: dict[Any, Any] = {}
    for key in keys:
        event = instance.get_latest_materialization_event(key)
        latest[key] = event
    now = time.time()
    observed = newest_by_asset(StoreReader(settings.store_root))
    rows = []
    for key in keys:
        event = latest[key]
        node = graph.get(key)
        ts = event.timestamp if event else None
        newer_upstream = [
            parent.to_user_string()
            for parent in node.parent_keys
            if latest.get(parent) is not None and ts is not None and latest[parent].timestamp > ts
        ]
        missed = _missed_refresh(last_ticks.get(key), ts, now)
        because = (
            "never materialized"
            if ts is None
            else (f"upstream newer: {', '.join(newer_upstream)}" if newer_upstream else missed)
        )
        rows.append(
            {
                "asset": key.to_user_string(),
                "group": node.group_name,
                "last_materialized": datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
                if ts
                else None,
                "age_seconds": round(now - ts, 1) if ts else None,
                "run_id": event.run_id if event else None,
                "stale": because is not None,
                "stale_because": because,
                # what a live tool saw after this materialization (the snapshot may no longer describe it)
                "newer_observation": _newer_observation(observed.get(key.to_user_string()), ts),
            }
        )
    _mark_corrupt(rows, StoreReader(settings.store_root))
    return rows


def _mark_corrupt(rows: list[dict[str, Any]], reader: StoreReader) -> None:
    """A latest snapshot that does not read back intact is not fine, whatever Dagster's history says: the row
    says so (answers meanwhile come from the version before, stale)."""
    from ade_platform.store.fsck import latest_problem

    stored = set(reader.assets())
    for row in rows:
        row["snapshot_problem"] = None
        if row["asset"] not in stored:
            continue
        problem = latest_problem(reader, row["asset"])
        if problem:
            row["snapshot_problem"] = f"snapshot_corrupt: {problem}"
            row["stale"] = True
            because = f"latest snapshot corrupt ({problem}); answers use the previous good version"
            row["stale_because"] = f"{because}; {row['stale_because']}" if row["stale_because"] else because


# A scheduled refresh takes a while to run: an asset is late only when it missed its tick by more than this.
REFRESH_GRACE_SECONDS = 900
# Snapshots of systems that change without ADE seeing it (dbt Cloud, orchestrators, BI tools): only a refresh
# keeps them current, so a missed one makes them stale. dbt artifacts have their own detector (a newer file).
REFRESHED_GROUPS = frozenset({"dbt_cloud", "orchestration", "bi"})


def _last_ticks(definitions: Any, graph: Any) -> dict[Any, float]:
    """Asset key -> the newest past tick of a running schedule that refreshes it (the latest, when several)."""
    from dagster._utils.schedules import cron_string_iterator

    now = time.time()
    ticks: dict[Any, float] = {}
    for schedule in definitions.schedules or []:
        selection = getattr(schedule.job, "selection", None)
        if selection is None:
            continue
        keys = selection.resolve(graph)
        moment = next(cron_string_iterator(now, schedule.cron_schedule, schedule.execution_timezone, False))
        for key in keys:
            if graph.get(key).group_name not in REFRESHED_GROUPS:
                continue
            ticks[key] = max(ticks.get(key, 0.0), moment.timestamp())
    return ticks


def _missed_refresh(tick: float | None, materialized: float | None, now: float) -> str | None:
    """Why a scheduled asset is stale: its schedule ticked (more than the grace ago) after it was materialized."""
    if tick is None or materialized is None or materialized >= tick or now - tick < REFRESH_GRACE_SECONDS:
        return None
    when = datetime.fromtimestamp(tick, UTC).isoformat(timespec="seconds")
    return f"missed its scheduled refresh at {when}"


def _newer_observation(obs: Any, materialized: float | None) -> dict[str, Any] | None:
    if obs is None or (materialized is not None and obs.observed_at <= materialized):
        return None
    return {"kind": obs.kind, **obs.stamp()}


def dbt_folders_note(settings: Settings) -> str | None:
    """Which dbt target folder ADE watches for the team's own runs, and where ADE's own dbt output goes (None
    without a local dbt project)."""
    watched = settings.dbt_target_path
    if watched is None:
        return None
    newest = (
        max((f.stat().st_mtime for f in watched.glob("*.json") if f.is_file()), default=None)
        if watched.is_dir()
        else None
    )
    state = (
        "does not exist yet"
        if not watched.is_dir()
        else (f"newest artifact {_age(time.time() - newest)} old" if newest else "no artifact yet")
    )
    origin = (
        "dbt.target_path" if settings.dbt and settings.dbt.target_path else "default: the project's target/"
    )
    return (
        f"dbt target folder watched (the team's dbt runs): {watched}  ({origin}; {state})\n"
        f"ADE's own dbt output (kept apart): {settings.dbt_own_output}"
    )


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def render_status(rows: list[dict[str, Any]]) -> str:
    header = f"{'ASSET':<28} {'GROUP':<14} {'LAST MATERIALIZED':<26} {'AGE':>7} {'RUN':<9} STALE"
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['asset']:<28} {row['group'] or '-':<14} {row['last_materialized'] or 'never':<26} "
            f"{_age(row['age_seconds']):>7} {(row['run_id'] or '-')[:8]:<9} "
            f"{'yes' if row['stale'] else 'no'}{'  (' + row['stale_because'] + ')' if row['stale_because'] else ''}"
        )
        seen = row.get("newer_observation")
        if seen:
            lines.append(
                f"{'':<28} newer live observation: {seen['key']} by {seen['source']} at {seen['observed_at']}"
            )
    return "\n".join(lines)
