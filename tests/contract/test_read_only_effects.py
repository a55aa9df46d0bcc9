"""A tool annotated read-only writes nothing (issue 34 §3): each one called through MCP on the demo, every toolset
on, with valid arguments taken from the demo's own data, changes no file, no warehouse object and no remote state.

What counts as a write, and what a read may leave behind:
- Files: every file and folder under the ADE home (the store, the Snowfakery workspace and run folders, the
  warehouse file, the DDL repository) and the dbt project, compared by size and mtime before and after. Allowed:
  the audit (the Dagster instance under DAGSTER_HOME, where live reads are recorded, and its audit journal), the
  store's live observations (`.observations`: what a live read saw, written by design, docs/DEVELOPING.md "Live
  observations"), the sandbox's scratch folder (`_scratch`: a validation's temporary files, deleted after the
  answer and never listed or served), the empty advisory lock files under `locks/` (readers of the dbt target
  folder take its publishers' lock: coordination, no content) and the emulators' own state and logs (they stand in
  for remote systems, whose requests are checked below). Anything else is a write.
- Warehouse objects: the DuckDB warehouse's and the Snowflake stand-in's table lists, before and after.
- Remote calls: the dbt Cloud emulator's count of non-GET requests, and the Looker and Metabase emulators' counts
  by method and path. Reads those APIs define as POST are allowed by name: Looker's session login and Metabase's
  query of a saved question.

Every read-only tool must have an entry in EXAMPLES (a new tool cannot escape the test); a tool whose only
demo answer is a structured refusal says why in EXPECTED_REFUSALS.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.contract.surface import current_surface
from tests.helpers import tool_payload

RECIPE = "- snowfakery_version: 3\n- object: Account\n  count: 2\n  fields:\n    name: ${{fake.company}}\n"
BROKEN = "- snowfakery_version: 3\n- object: Account\n  fields:\n    n: ${{ undefined_name }}\n"
LOG = "12:00 ERROR column customer_idx does not exist\n12:01 retrying\n"
Args = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def _run_of(answers: dict[str, Any], tool: str) -> Any:
    return answers[tool]["run_id"]


# One call per read-only tool, in order; a callable gets the answers so far (ids only known at run time).
EXAMPLES: dict[str, Args] = {
    # dbt artifacts and project files (the store's snapshots, the dbt_demo project)
    "dbt_get_lineage": {"node_id": "model.dbt_demo.customers", "direction": "upstream"},
    "dbt_get_blast_radius": {"node_id": "model.dbt_demo.stg_customers"},
    "dbt_get_column_lineage": {"node_id": "model.dbt_demo.customers", "column_name": "customer_id"},
    "dbt_get_failed_models": {},
    "dbt_get_model_tests": {"model_name": "customers"},
    "dbt_get_schema": {"model_name": "customers", "source": "catalog"},
    "dbt_get_source_freshness": {},
    "dbt_detect_silent_skip": {"expected_patterns": ["stg_*", "customers"]},
    "dbt_find_select_star": {},
    "dbt_scan_pii_risk": {"extra_patterns": ["^first_"]},
    "fs_list_models": {},
    "fs_read_model_sql": {"model_name": "customers", "compiled": True},
    "fs_read_project_config": {},
    "fs_read_schema_yaml": {"schema_path": "models/marts/_marts.yml"},
    "fs_find_models_referencing": {"source_or_model": "stg_customers"},
    # the DuckDB warehouse
    "warehouse_get_schema": {"schema_name": "main"},
    "warehouse_execute": {"sql": "select count(*) as n from customers"},
    "warehouse_explain_query": {"sql": "select * from customers"},
    "warehouse_check_freshness": {"table_name": "raw.orders", "timestamp_column": "order_date"},
    "warehouse_detect_duplicates": {"table_name": "main.customers", "key_columns": ["customer_id"]},
    "warehouse_detect_schema_drift": {"model_name": "customers"},
    "warehouse_get_query_history": {"table_pattern": "customers"},
    # dbt Cloud (its emulator: jobs 7301 and 7303 ran at its start)
    "dbtcloud_list_jobs": {"project_id": 7101},
    "dbtcloud_get_last_run": {"job_id": 7301, "status": None},
    "dbtcloud_poll_run": lambda a: {"run_id": _run_of(a, "dbtcloud_get_last_run"), "timeout_seconds": 1},
    "dbtcloud_fetch_artifact": lambda a: {
        "run_id": _run_of(a, "dbtcloud_get_last_run"),
        "artifact": "run_results.json",
        "query": "metadata",
    },
    "dbtcloud_get_source_freshness": {"job_id": 7303},
    # Looker and Metabase (their emulators)
    "bi_list_dashboards": {"tool": "looker"},
    "bi_get_dashboard_elements": {"tool": "looker", "dashboard_id": "1"},
    "bi_check_dashboard_health": {"tool": "metabase", "dashboard_id": "1"},
    "bi_verify_row_counts": {"tool": "looker", "dashboard_id": "1", "compare_to_warehouse": True},
    "bi_run_look": {"look_id": 1, "limit": 2},
    # the Snowflake stand-in, behind the metadata proxy
    "list_objects": {"objectType": "table", "database": "JAFFLE_SHOP", "schema": "RAW"},
    "describe_object": {"objectType": "table", "objectName": "JAFFLE_SHOP.RAW.CUSTOMERS"},
    "get_ddl": {"objectType": "table", "objectName": "JAFFLE_SHOP.RAW.CUSTOMERS"},
    "get_dependencies": {"objectName": "JAFFLE_SHOP.RAW.CUSTOMERS", "objectType": "view"},
    "get_lineage": {"objectName": "JAFFLE_SHOP.RAW.CUSTOMERS", "objectType": "table"},
    "check_staleness": {"objectName": "JAFFLE_SHOP.RAW.CUSTOMERS", "objectType": "table"},
    "execute_sql": {"query": "SELECT COUNT(*) AS N FROM JAFFLE_SHOP.RAW.CUSTOMERS"},
    "execute_scalar": {"query": "SELECT COUNT(*) FROM JAFFLE_SHOP.RAW.CUSTOMERS"},
    # orchestrators (the platform's own Dagster instance: its materialization runs)
    "orchestrator_get_run_history": {"dag_id": "__ASSET_JOB", "backend": "dagster"},
    "orchestrator_get_last_run": {"dag_id": "__ASSET_JOB", "backend": "dagster"},
    "orchestrator_get_task_status": lambda a: _task(a),
    "orchestrator_fetch_logs": lambda a: _task(a),
    "orchestrator_detect_patterns": {"log_text": LOG, "patterns": ["ERROR", r"column \w+ does not exist"]},
    # cross-stack lineage
    "lineage_trace": {"start_kind": "dbt_node", "start": "customers"},
    "lineage_explain_incident": {"start_kind": "dbt_node", "start": "customers"},
    "lineage_what_changed": {"start_kind": "dbt_node", "start": "customers"},
    # incidents: what detection recorded in warm_up (the demo's designed broken tiles)
    "incident_list": {"status": "active"},
    "incident_get": lambda a: {"incident_id": a["incident_list"]["incidents"][0]["id"]},
    # Snowfakery: everything but run_recipe / render_diagram / generate_mapping, which keep a run folder
    "snowfakery.list_capabilities": {},
    "snowfakery.list_examples": {},
    "snowfakery.get_example": lambda a: {"name": a["snowfakery.list_examples"]["examples"][0]["name"]},
    "snowfakery.get_schema": {},
    "snowfakery.search_docs": {"query": "friends reference"},
    "snowfakery.validate_recipe": {"recipe_text": RECIPE},
    "snowfakery.analyze_recipe": {"recipe_text": RECIPE},
    "snowfakery.format_recipe": {"recipe_text": RECIPE},
    "snowfakery.explain_errors": {"recipe_text": BROKEN},
    "snowfakery.draft_recipe": {"description": "two accounts with a contact each", "max_rounds": 1},
}
# Read-only tools whose demo answer is a structured refusal, and why the call still counts.
EXPECTED_REFUSALS: dict[str, tuple[str, str]] = {
    # the demo warehouse is DuckDB, which keeps no query history: refused after the warehouse was opened
    "warehouse_get_query_history": ("not_implemented", "DuckDB keeps no query history"),
    # in-memory MCP sessions cannot sample: the tool stops before drafting (its validation is validate_recipe's)
    "snowfakery.draft_recipe": ("sampling_unavailable", "the in-memory client does not sample"),
}


def _task(answers: dict[str, Any]) -> dict[str, Any]:
    run_id = answers["orchestrator_get_last_run"]["run_id"]
    # a Dagster task is a step: the asset job's step that materialized dbt's manifest
    return {"dag_id": "__ASSET_JOB", "backend": "dagster", "run_id": run_id, "task_id": "dbt_manifest"}


# ---- what the demo looks like before and after ---------------------------------------------------------------
def _allowed(settings: Settings) -> list[Path]:
    store = (
        Path(settings.store_root.path) if hasattr(settings.store_root, "path") else settings.home / "store"
    )
    return [
        settings.dagster_home.resolve(),  # the audit: recorded runs and the audit journal
        (store / ".observations").resolve(),  # what live reads observed
        settings.home.resolve()
        / "emulators",  # the stand-ins for remote systems (checked through their APIs)
        settings.home.resolve() / "logs",  # the emulators' logs
        settings.home.resolve() / "locks",  # empty advisory lock files (the dbt target folder's publishers')
    ]


_SCRATCH = re.compile(r"(^|/)_scratch(/|$)")


def files(settings: Settings) -> dict[str, tuple[int, int]]:
    """Every file and folder under the ADE home and the dbt project: path -> (size, mtime_ns); folders (0, 0)."""
    skip = _allowed(settings)
    roots = [settings.home.resolve()]
    if settings.dbt is not None:
        roots.append(Path(settings.dbt.project_dir).resolve())
    seen: dict[str, tuple[int, int]] = {}
    for root in roots:
        for folder, dirs, names in os.walk(root):
            here = Path(folder)
            dirs[:] = [d for d in dirs if here / d not in skip and not _SCRATCH.search(str(here / d))]
            for d in dirs:
                seen[str(here / d)] = (0, 0)
            for name in names:
                path = here / name
                try:
                    stat = path.stat()
                except FileNotFoundError:
                    continue
                seen[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return seen


def remote_changes(env: dict[str, str]) -> dict[str, Any]:
    """The emulators' counts of requests that could change something."""
    dbt_cloud = env["ADE_DBT_CLOUD_URL"].removesuffix("/api/v2")
    counts: dict[str, Any] = {"dbt_cloud": httpx.get(f"{dbt_cloud}/_emulator/requests").json()["changes"]}
    for name, var in (("looker", "ADE_LOOKER_URL"), ("metabase", "ADE_METABASE_URL")):
        served = httpx.get(env[var].rstrip("/") + "/_emulator/requests").json()["requests"]
        counts[name] = {key: n for key, n in served.items() if not key.startswith(("GET ", "HEAD "))}
    return counts


# Looker's session login; Metabase runs a saved question (or a dashboard's card) by POSTing its query
READ_POSTS = re.compile(
    r"^POST (/api/4\.0/login|/api/card/\d+/query(/\w+)?|/api/dashboard/\d+/dashcard/\d+/card/\d+/query)$"
)

CATALOG_CALLS = [
    (
        "warehouse_execute",
        {"sql": "select table_schema, table_name from information_schema.tables order by 1, 2"},
    ),
    ("execute_sql", {"query": "SELECT TABLE_SCHEMA, TABLE_NAME FROM JAFFLE_SHOP.INFORMATION_SCHEMA.TABLES"}),
]


async def call_all(server: Any) -> tuple[dict[str, tuple[bool, Any]], list[Any]]:
    answers: dict[str, Any] = {}
    outcomes: dict[str, tuple[bool, Any]] = {}
    async with Client(server) as client:
        catalogs = [
            tool_payload(await client.call_tool(n, a, raise_on_error=False)) for n, a in CATALOG_CALLS
        ]
        for name, example in EXAMPLES.items():
            try:
                args = example(answers) if callable(example) else example
            except (KeyError, IndexError, TypeError) as exc:  # an earlier answer lacked the id: say which
                outcomes[name] = (False, {"error": "no_example_arguments", "detail": repr(exc)})
                continue
            ok, payload = tool_payload(await client.call_tool(name, args, raise_on_error=False))
            outcomes[name] = (ok, payload)
            if ok:
                answers[name] = payload
        # resources are reads too: every static one, and the dbt Cloud artifact (a live read of dbt Cloud)
        uris = [str(r.uri) for r in await client.list_resources()]
        if "dbtcloud_fetch_artifact" in answers:
            uris.append(answers["dbtcloud_fetch_artifact"]["resource_uri"])
        for uri in uris:
            try:
                await client.read_resource(uri)
                outcomes[uri] = (True, None)
            except Exception as exc:  # the structured error's JSON is the message
                outcomes[uri] = (False, {"error": "resource_read_failed", "detail": str(exc)[:300]})
    return outcomes, catalogs


async def catalogs_now(server: Any) -> list[Any]:
    async with Client(server) as client:
        return [tool_payload(await client.call_tool(n, a, raise_on_error=False)) for n, a in CATALOG_CALLS]


async def warm_up(server: Any) -> list[Any]:
    """What happens once per gateway, before any tool's effect is measured: the catalogs' clients open, the
    Snowfakery service creates its (empty) workspace and run folders, and the dbt Cloud runs its emulator started
    (jobs 7301 and 7303) finish, so their artifacts can be read."""
    await catalogs_now(server)
    polled = []
    async with Client(server) as client:
        await client.call_tool("snowfakery.list_capabilities", {}, raise_on_error=False)
        for job in (7301, 7303):
            args = {"job_id": job, "status": None}
            ok, last = tool_payload(
                await client.call_tool("dbtcloud_get_last_run", args, raise_on_error=False)
            )
            if ok:
                wait = {"run_id": last["run_id"], "timeout_seconds": 600}
                polled.append(
                    tool_payload(await client.call_tool("dbtcloud_poll_run", wait, raise_on_error=False))
                )
    return polled


def run_examples(settings: Settings, env: dict[str, str]) -> dict[str, Any]:
    """Call every example once; what each answered and what changed (files, catalogs, remote requests)."""
    from ade_platform.defs.incidents import incident_tick

    server = build_server(settings)
    polled = asyncio.run(warm_up(server))
    incident_tick(settings)  # the daemon's detection: the incidents the incident tools then read
    before_files, before_remote = files(settings), remote_changes(env)
    outcomes, catalogs_before = asyncio.run(call_all(server))
    import ade_platform.live

    ade_platform.live.flush_all(600)  # the fast path's audit runs land before the files are compared
    catalogs_after = asyncio.run(catalogs_now(server))
    after_files, after_remote = files(settings), remote_changes(env)
    changed = sorted(
        p for p in set(before_files) | set(after_files) if before_files.get(p) != after_files.get(p)
    )
    posts = {
        name: {
            k: n
            for k, n in after_remote[name].items()
            if not READ_POSTS.match(k) and n != before_remote[name].get(k)
        }
        for name in ("looker", "metabase")
    }
    return {
        "server": server,
        "dagster_home": settings.dagster_home,
        "polled": polled,
        "outcomes": outcomes,
        "changed_files": changed,
        "catalogs": (catalogs_before, catalogs_after),
        "dbt_cloud_changes": after_remote["dbt_cloud"] - before_remote["dbt_cloud"],
        "bi_posts": posts,
    }


@pytest.fixture(scope="module")
def report(demo_settings: Settings, demo_emulators: dict[str, str]) -> dict[str, Any]:
    return run_examples(demo_settings, demo_emulators)


def test_every_read_only_tool_has_an_example() -> None:
    """On the published surface (fast: no demo): a new read-only tool needs an example before it can pass."""
    published = {
        name
        for name, tool in current_surface()["tools"].items()
        if (tool["annotations"] or {}).get("readOnlyHint")
    }
    assert published == set(EXAMPLES), (
        f"missing: {sorted(published - set(EXAMPLES))} (add an example call); "
        f"not read-only: {sorted(set(EXAMPLES) - published)}"
    )
    assert set(EXPECTED_REFUSALS) <= set(EXAMPLES)


# Calling ~60 tools on the materialized demo (Snowflake, BI health, incidents) takes minutes on a loaded machine.
@pytest.mark.integration
@pytest.mark.slow
def test_each_example_answers_and_changes_nothing(report: dict[str, Any]) -> None:
    failed = {}
    for name, (ok, payload) in report["outcomes"].items():
        expected = EXPECTED_REFUSALS.get(name)
        if expected is not None:
            if ok or payload.get("error") != expected[0]:
                failed[name] = payload
        elif not ok:
            failed[name] = payload
    assert not failed, failed
    # no file written, outside the audit and the other allowed places (the module's docstring)
    assert report["changed_files"] == [], report["changed_files"]
    # no warehouse object created or dropped, in DuckDB or in the Snowflake stand-in
    before, after = report["catalogs"]
    for (ok_before, was), (ok_after, now) in zip(before, after, strict=True):
        assert ok_before and ok_after, (was, now)
        assert was["rows"] == now["rows"]
    # no request that changes dbt Cloud, Looker or Metabase
    assert report["dbt_cloud_changes"] == 0
    assert report["bi_posts"] == {"looker": {}, "metabase": {}}, report["bi_posts"]
    # the live resource read is audited like a tool's read, and names its caller
    import dagster as dg

    with dg.DagsterInstance.from_config(str(report["dagster_home"])) as instance:
        tags = [
            run.tags for run in instance.get_runs() if run.job_name == "live__dbtcloud_run_artifact_resource"
        ]
    assert tags and tags[0]["ade/tool"] == "dbtcloud_run_artifact_resource" and tags[0]["ade/user"], tags
