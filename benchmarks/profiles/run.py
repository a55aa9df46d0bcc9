"""Profiles: what profiling every relation costs next to the dbt build that made them, and the monitors' false
alarms and detections on a generated history.

    python -m benchmarks.profiles.run [--quick]

Cost: the demo (copied and materialized with its emulators, as `benchmarks/lineage` does) and a generated project
of 1,000 models (100 raw tables of 5,000 rows; per table a staging view and nine chained tables, unique tests on
the staging keys; `--quick`: 100 models) on DuckDB. Each is built with `dbt build` from a terminal (timed, after a
first build that warms dbt's partial parsing), then profiled the way the `warehouse_profiles_<name>` asset does it
(targets from the manifest and the schema snapshot, one aggregate query and at most one mix query per relation
through the warehouse client, each profile recorded in a store and judged against its history): timed, as a
share of the build. Target: at most 10%.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.profiles.history import healthy_history, measure
from benchmarks.timing import quick_mode

DBT = Path(sys.executable).parent / "dbt"
PROFILE = """
bench_project:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{{ env_var('ADE_DUCKDB_PATH') }}"
      schema: main
      threads: 2
"""
CHAIN = 9  # tables per raw table after its staging view
ROWS = 5_000


def generated_project(root: Path, models: int) -> tuple[Path, Path]:
    """A dbt project of `models` models over models // 10 raw tables, and its loaded DuckDB file."""
    import duckdb

    project, warehouse = root / "bench_project", root / "warehouse.duckdb"
    tables = max(1, models // (CHAIN + 1))
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: bench_project\nversion: '1.0.0'\nconfig-version: 2\nprofile: bench_project\n"
        "models:\n  bench_project:\n    +materialized: table\n"
    )
    (project / "profiles.yml").write_text(PROFILE.lstrip())
    sources = ["version: 2", "sources:", "  - name: raw", "    schema: raw", "    tables:"]
    tests = ["version: 2", "models:"]
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema raw")
        for t in range(tables):
            con.execute(
                f"create table raw.t{t:03d} as select i::integer as id, (i % 4)::integer as kind, "
                "['placed','shipped','returned'][i % 3 + 1] as status, round(10 + (i * 7919 % 1000) / 10.0, 2) "
                "as amount, date '2026-01-01' + (i % 90)::integer as day, 'user' || i || '@example.com' as email "
                f"from range({ROWS}) r(i)"
            )
            sources.append(f"      - name: t{t:03d}")
            stg = f"stg_t{t:03d}"
            (project / "models" / f"{stg}.sql").write_text(
                f"{{{{ config(materialized='view') }}}}\nselect * from {{{{ source('raw', 't{t:03d}') }}}}\n"
            )
            tests += [f"  - name: {stg}", "    columns:", "      - name: id", "        data_tests: [unique]"]
            previous = stg
            for k in range(CHAIN):
                name = f"m_t{t:03d}_{k}"
                (project / "models" / f"{name}.sql").write_text(
                    f"select id, kind, status, amount * {1 + k / 10} as amount, day, email "
                    f"from {{{{ ref('{previous}') }}}} where id % {k + 2} <> 1\n"
                )
                previous = name
    (project / "models" / "sources.yml").write_text("\n".join(sources) + "\n")
    (project / "models" / "tests.yml").write_text("\n".join(tests) + "\n")
    return project, warehouse


def dbt_build(project: Path, warehouse: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [str(DBT if DBT.exists() else "dbt"), "build", "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, **(env or {}), "ADE_DUCKDB_PATH": str(warehouse)},
        capture_output=True,
        text=True,
        timeout=3600,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: a test failed or warned into an error; the build still ran
        raise RuntimeError(f"dbt build failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    return elapsed


def profile_run(warehouse_name: str, warehouse: Path, manifest_path: Path, store: Path) -> dict[str, Any]:
    """Profile every relation of the manifest as the asset does; the summary with its wall time."""
    import orjson

    from ade_platform.clients.warehouses.duckdb import DuckDBClient
    from ade_platform.lib.guard.policy import GuardPolicy
    from ade_platform.lib.profiles.run import DUCKDB_HOLD_SECONDS, profile_all
    from ade_platform.lib.profiles.targets import profile_targets
    from ade_platform.lib.sql_protect import ProtectRules
    from ade_platform.store import StoreReader, StoreWriter
    from ade_platform.store.profiles import profile_history, record_profile

    writer, reader = StoreWriter(store), StoreReader(store)
    client = DuckDBClient(warehouse_name, warehouse, timeout=120, hold_seconds=DUCKDB_HOLD_SECONDS)
    started = time.perf_counter()
    try:
        snapshot = client.snapshot()
        targets = profile_targets(
            orjson.loads(manifest_path.read_bytes()),
            None,
            snapshot,
            lambda tagged: ProtectRules(GuardPolicy(), tagged=tagged),
        )
        summary = profile_all(
            lambda sql: [tuple(r.values()) for r in client.query(sql).rows],
            "duckdb",
            warehouse_name,
            targets,
            history=lambda relation: profile_history(reader, warehouse_name, relation),
            record=lambda profile: record_profile(writer, profile, "bench"),
            max_relations=5_000,
            budget_seconds=3_600,
        )
    finally:
        client.close()
    summary["wall_s"] = time.perf_counter() - started
    return summary


def _line(name: str, models: int, build_s: float, summary: dict[str, Any]) -> str:
    share = summary["wall_s"] / build_s * 100
    return (
        f"    {name:<28} {models:>6} {summary['profiled']:>9} {build_s:>9.1f} {summary['wall_s']:>11.1f} "
        f"{summary['query_ms'] / 1000:>9.1f} {share:>7.1f}%"
    )


HEADER = (
    "    project                      models  profiled   build s  profiling s  query s   share\n"
    "    (profiling s: targets, queries, recording and monitors; query s: the profile queries alone)"
)


def generated_cost(models: int) -> str:
    with tempfile.TemporaryDirectory(prefix="ade-bench-profiles-") as tmp:
        project, warehouse = generated_project(Path(tmp), models)
        dbt_build(project, warehouse)  # the first build creates everything and warms partial parsing
        build_s = dbt_build(project, warehouse)
        summary = profile_run("bench", warehouse, project / "target" / "manifest.json", Path(tmp) / "store")
        return _line(f"generated ({models} models)", models, build_s, summary)


def demo_cost() -> str:
    from benchmarks.lineage.platform import demo_platform

    with tempfile.TemporaryDirectory(prefix="ade-bench-profiles-demo-") as tmp, demo_platform(Path(tmp)) as p:
        build_s = dbt_build(p.project, p.warehouse, p.env)
        manifest = p.project / "target" / "manifest.json"
        store = Path(tmp) / "profile-store"
        summary = profile_run("demo", p.warehouse, manifest, store)
        models = sum(
            1 for k in __import__("orjson").loads(manifest.read_bytes())["nodes"] if k.startswith("model.")
        )
        return _line("demo (dbt_demo)", models, build_s, summary)


def monitors() -> None:
    print("Monitors on a generated healthy history (70 days, weekly seasonality, growth); days 35-69 judged")
    for seed in (33, 1, 2):
        r = measure(healthy_history(seed=seed))
        kinds = ", ".join(f"{k} {h}/{t}" for k, (h, t) in r.detected_by_kind.items())
        print(
            f"    seed {seed:>2}: false alarms {r.false_alarm_days}/{r.judged_days} days "
            f"({r.false_alarm_rate:.1%}); detected {r.detected}/{r.injected} ({r.detection_rate:.1%}): {kinds}"
        )


def main() -> None:
    quick = quick_mode(__doc__)
    monitors()
    print("\nProfiling cost vs the dbt build (DuckDB, 2 dbt threads; target: profiling <= 10% of the build)")
    print(HEADER)
    print(generated_cost(100 if quick else 1000), flush=True)
    if shutil.which("git") and not quick:
        print(demo_cost(), flush=True)


if __name__ == "__main__":
    main()
