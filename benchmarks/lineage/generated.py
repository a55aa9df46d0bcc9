"""A generated project to make incidents on (not the demo): seeded-random sources, staging views, fact and daily
tables, a dimension, Metabase dashboards whose questions read the marts (the Metabase emulator serves them), and
a Dagster job that builds the marts (mapped in `lineage.builders`), on DuckDB.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.lineage.platform import Platform, _git_init, _running
from tests.helpers import environment

ENTITIES = ["orders", "shipments", "invoices", "subscriptions", "refunds", "sessions", "tickets", "returns"]
ATTRIBUTES = ["status", "region", "channel", "category", "plan", "country", "segment", "priority", "carrier"]
BUILDER_JOB = "nightly_marts"

ADE_YAML = """
home: {root}/ade
warehouses:
  gen:
    type: duckdb
    path: ${{ADE_HOME}}/warehouse/demo.duckdb
dbt:
  project_dir: {root}/gen_project
  profiles_dir: {root}/gen_project
  warehouse: gen
bi:
  warehouse: gen
  metabase:
    base_url: ${{ADE_METABASE_URL:-}}
    api_key: ${{ADE_METABASE_API_KEY:-}}
mcp:
  toolsets: [dbt-artifacts, warehouse, bi-api, orchestrator, lineage]
lineage:
  builders:
    - {{system: dagster, job: {job}, select: "tag:marts"}}
"""

PROFILE = """
gen_project:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{{ env_var('ADE_DUCKDB_PATH') }}"
      schema: main
      threads: 2
"""


def project_files(rng: random.Random) -> tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]:
    """(files of the dbt project, the Metabase content, the raw tables to load)."""
    entities = rng.sample(ENTITIES, rng.randint(3, 5))
    files = {
        "dbt_project.yml": "name: gen_project\nversion: '1.0.0'\nconfig-version: 2\nprofile: gen_project\n"
        "model-paths: ['models']\nmodels:\n  gen_project:\n    staging:\n      +materialized: view\n"
        "      +tags: ['staging']\n    marts:\n      +materialized: table\n      +tags: ['marts']\n",
        "profiles.yml": PROFILE,
    }
    raw, sources, cards, dashboards = [], [], {}, {}
    card_id = 1
    for e in entities:
        a1, a2 = rng.sample(ATTRIBUTES, 2)
        date = f"{e[:-1]}_date"
        raw.append({"name": e, "attributes": (a1, a2), "date": date, "rows": rng.randint(200, 600)})
        sources.append(
            f"      - name: {e}\n        columns:\n          - name: id\n            data_tests: [unique, not_null]\n"
        )
        files[f"models/staging/stg_{e}.sql"] = (
            f"select id as {e[:-1]}_id, {date}, amount, {a1}, {a2}, account_id, _loaded_at as loaded_at\n"
            f"from {{{{ source('raw', '{e}') }}}}\n"
        )
        files[f"models/marts/fct_{e}.sql"] = (
            f"select {e[:-1]}_id, {date}, amount, {a1}, {a2}, account_id\nfrom {{{{ ref('stg_{e}') }}}}\n"
        )
        files[f"models/marts/fct_{e}_daily.sql"] = (
            f"select {date}, {a1}, count(*) as {e}_count, sum(amount) as total_amount\n"
            f"from {{{{ ref('fct_{e}') }}}}\ngroup by 1, 2\n"
        )
        dash_cards = []
        for sql, name in (
            (
                f"select {date}, sum(total_amount) as total from main.fct_{e}_daily group by 1 order by 1",
                f"{e} per day",
            ),
            (f"select {a1}, sum(amount) as amount from main.fct_{e} group by 1", f"{e} by {a1}"),
            (f"select {a2}, count(*) as n from main.fct_{e} group by 1", f"{e} by {a2}"),
        ):
            cards[card_id] = {"name": name.title(), "display": "bar", "native": sql}
            dash_cards.append([100 + card_id, card_id])
            card_id += 1
        dashboards[len(dashboards) + 1] = {
            "name": f"{e.title()} overview",
            "collection_id": 2,
            "view_count": rng.randint(5, 500),
            "dashcards": dash_cards,
        }
    files["models/sources.yml"] = (
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    config:\n      loaded_at_field: _loaded_at\n"
        "      freshness:\n        warn_after: {count: 12, period: hour}\n        error_after: {count: 24, period: hour}\n"
        "    tables:\n" + "".join(sources)
    )
    counts = ",\n".join(
        f"  (select count(*) from {{{{ ref('fct_{e}') }}}} f where f.account_id = a.account_id) as {e}_count"
        for e in entities
    )
    files["models/marts/dim_accounts.sql"] = (
        "with a as (\n"
        + "\n  union\n".join(f"  select distinct account_id from {{{{ ref('stg_{e}') }}}}" for e in entities)
        + f"\n)\nselect a.account_id,\n{counts}\nfrom a\n"
    )
    first = entities[0]
    cards[card_id] = {
        "name": "Accounts",
        "display": "table",
        "native": f"select account_id, {first}_count from main.dim_accounts order by 2 desc",
    }
    dashboards[len(dashboards) + 1] = {
        "name": "Accounts",
        "collection_id": 2,
        "view_count": 40,
        "dashcards": [[900, card_id]],
    }
    content = {
        "tables": {},
        "cards": cards,
        "dashboards": dashboards,
        "collections": {2: "Generated", 3: "Other"},
    }
    return files, content, raw


def _load_raw(warehouse: Path, raw: list[dict[str, Any]], rng: random.Random) -> None:
    import duckdb

    warehouse.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema if not exists raw")
        for t in raw:
            a1, a2 = t["attributes"]
            hours = rng.uniform(0.5, 2.0)
            con.execute(
                f"create or replace table raw.{t['name']} as select i::integer as id, "
                f"(date '2026-01-01' + (i % 90)::integer) as {t['date']}, "
                f"round(10 + (i * 7919 % 1000) / 10.0, 2)::decimal(12,2) as amount, "
                f"'{a1}_' || (i % 4) as {a1}, '{a2}_' || (i % 3) as {a2}, (i % 37)::integer as account_id, "
                f"(now() - interval {hours:.2f} hour)::timestamp as _loaded_at from range({t['rows']}) r(i)"
            )


def run_builder(platform: Platform, fail: bool) -> None:
    """A run of the Dagster job that builds the marts (mapped in lineage.builders): success or failure."""
    import dagster as dg

    from ade_platform.instance import open_instance

    @dg.op(name="dbt_build_marts")
    def build_marts() -> None:
        if fail:
            raise RuntimeError("dbt build --select tag:marts exited with 1")

    job = dg.GraphDefinition(name=BUILDER_JOB, node_defs=[build_marts]).to_job()
    instance = open_instance(platform.settings.dagster_home)
    job.execute_in_process(instance=instance, raise_on_error=False)


@contextmanager
def generated_platform(root: Path, seed: int, reuse: bool = False) -> Iterator[Platform]:

    rng = random.Random(seed)
    files, content, raw = project_files(rng)
    project = root / "gen_project"
    if not (reuse and project.exists()):
        for rel, text in files.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(text.lstrip())
        _git_init(project)
        _load_raw(root / "ade" / "warehouse" / "demo.duckdb", raw, rng)
    content_path = root / "metabase-content.json"
    content_path.write_text(json.dumps(content))
    config = ADE_YAML.format(root=root, job=BUILDER_JOB)
    with (
        environment({"METABASE_EMULATOR_CONTENT": str(content_path)}),
        _running(
            root, config, "generated", {"builder_job": BUILDER_JOB}, reuse, before=_first_run
        ) as platform,
    ):
        yield platform


def _first_run(platform: Platform) -> None:
    """The builder has a successful run before the platform is materialized (its history)."""
    run_builder(platform, fail=False)
