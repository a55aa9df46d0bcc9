"""Incidents made on a running platform after it was materialized, drawn at random (seeded) over its tiles,
tables, columns, sources, models and jobs.

Each scenario breaks one thing the way it breaks in real life (a migration renames a column, a loader stops, a
dbt build run from a terminal fails at run time or at parse, a job run fails, a model edit drops a column a tile
reads), names the start an agent would be handed (the tile, the dashboard, the model, the table) and the cause
a correct answer ranks first; `revert` puts the platform back as the snapshots know it. Healthy controls break
nothing: a confident verdict on one is a false alarm.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.lineage.relations import _columns_in_sql, make_key
from ade_platform.lib.lineage.sources import LINEAGE_ASSET
from ade_platform.store import StoreReader
from benchmarks.lineage.platform import Platform

KINDS = (
    "column_renamed_under_tile",
    "column_dropped_under_tile",
    "column_retyped_under_tile",
    "column_renamed_under_model",
    "column_dropped_under_model",
    "column_retyped_under_model",
    "source_stopped_loading",
    "build_failed_at_run_time",
    "build_failed_at_parse",
    "builder_run_failed",
    "model_change_breaks_tile",
    "upstream_rename_committed",
    "upstream_rename_uncommitted",
    # silent incidents (silent_scenarios.py): builds green, values wrong
    "logic_drops_rows",
    "logic_remaps_values",
    "source_rows_deleted",
    "source_values_rewritten",
    "source_values_nulled",
    "source_rows_duplicated",
    "healthy_control",
    "healthy_refactor",
    "healthy_rows_appended",
)
# kinds where nothing breaks: a confident verdict on one is a false alarm
CONTROLS = ("healthy_control", "healthy_refactor", "healthy_rows_appended")
SILENT = (
    "logic_drops_rows",
    "logic_remaps_values",
    "source_rows_deleted",
    "source_values_rewritten",
    "source_values_nulled",
    "source_rows_duplicated",
    "healthy_rows_appended",
)


@dataclass
class Expected:
    cause: str
    node: str | None = None  # the graph node the cause is on
    column: str | None = None  # for schema changes: the column changed

    def matches(self, entry: dict[str, Any]) -> bool:
        if entry["cause"] != self.cause or (self.node is not None and entry["node"] != self.node):
            return False
        if self.column is None:
            return True
        ev = entry.get("evidence") or {}
        changed = {str(c).lower() for c in [*(ev.get("removed") or []), *(ev.get("dropped") or [])]}
        changed |= {str(r.get("column")).lower() for r in ev.get("retyped") or []}
        changed |= {str(r.get("from")).lower() for r in ev.get("renamed") or []}
        changed |= {str(c.get("column")).lower() for c in ev.get("changes") or []}  # value changes
        return self.column.lower() in changed


@dataclass
class Scenario:
    kind: str
    description: str
    start: dict[str, Any]  # lineage_explain_incident arguments
    expected: Expected | None  # None: a healthy control
    apply: Callable[[], None]
    revert: Callable[[], None]
    notes: dict[str, Any] = field(default_factory=dict)


class Catalog:
    """What the generator draws from: the graph, the inventory's tiles and the warehouse's live columns."""

    def __init__(self, platform: Platform):
        self.p = platform
        reader = StoreReader(platform.settings.store_root)
        self.graph = reader.latest(LINEAGE_ASSET).data
        self.nodes = {n["id"]: n for n in self.graph["nodes"]}
        self.up: dict[str, list[dict[str, Any]]] = {}
        self.down: dict[str, list[dict[str, Any]]] = {}
        for e in self.graph["edges"]:
            self.up.setdefault(e["to"], []).append(e)
            self.down.setdefault(e["from"], []).append(e)
        rows = platform.sql(
            "select table_schema, table_name, column_name, data_type, table_type from information_schema.columns "
            "join information_schema.tables using (table_catalog, table_schema, table_name) "
            "where table_schema not in ('information_schema', 'pg_catalog')"
        )[0]
        self.columns: dict[str, dict[str, str]] = {}
        self.views: set[str] = set()
        for schema, table, column, dtype, ttype in rows:
            self.columns.setdefault(f"{schema}.{table}".lower(), {})[column.lower()] = dtype
            if "VIEW" in str(ttype).upper():
                self.views.add(f"{schema}.{table}".lower())
        # the baseline health: only healthy starts make healthy controls, only healthy dashboards a start
        self.unhealthy: set[str] = set()
        for asset in reader.assets():
            if asset.startswith("bi_health_"):
                tool = asset.removeprefix("bi_health_")
                for dash in reader.latest(asset).data.get("dashboards") or []:
                    if dash.get("status") != "ok":
                        self.unhealthy.add(f"bi:{tool}:dashboard:{dash.get('id')}")
                    for el in dash.get("elements") or []:
                        if el.get("status") in ("error", "empty"):
                            self.unhealthy.add(f"bi:{tool}:tile:{el.get('id')}")
        for r in reader.latest("dbt_run_results").data.get("results") or []:
            if str(r.get("status")) not in ("success", "pass"):
                self.unhealthy.add(f"dbt:{r.get('unique_id')}")
        self.stale_sources = set()
        if "dbt_sources" in reader.assets():
            for r in reader.latest("dbt_sources").data.get("results") or []:
                if str(r.get("status")) not in ("pass", "warn"):
                    self.stale_sources.add(f"dbt:{r.get('unique_id')}")
        wh = platform.settings.dbt.warehouse  # type: ignore[union-attr]
        self.db = platform.warehouse.stem.lower()
        self.wh = wh

    def table_id(self, short: str) -> str:
        return f"warehouse:{self.wh}:table:{make_key(self.db, *short.split('.'), 'duckdb').dotted}"

    def short(self, table_id: str) -> str:
        return ".".join(str(self.nodes[table_id]["name"]).split(".")[-2:])

    def tiles(self) -> list[tuple[str, str, list[str]]]:
        """(tile node, table node, columns the tile reads that the table has) for every tile reading one table."""
        out = []
        for node in self.graph["nodes"]:
            if node.get("kind") != "tile":
                continue
            reads = [e["from"] for e in self.up.get(node["id"], ()) if e["kind"] == "reads"]
            if len(reads) != 1 or reads[0] not in self.nodes:
                continue
            have = self.columns.get(self.short(reads[0]), {})
            used = set(node.get("columns") or ()) | (
                _columns_in_sql(node["sql"], "duckdb") if node.get("sql") else set()
            )
            cols = sorted(c for c in used if c in have)
            if cols and reads[0].rsplit(".", 1)[0]:
                out.append((node["id"], reads[0], cols))
        return out

    def dbt_reader_of(self, table_id: str) -> list[str]:
        """The dbt models that read a table (through its source node)."""
        models = []
        for e in self.down.get(table_id, ()):
            if e["kind"] == "feeds":
                models += [
                    x["to"]
                    for x in self.down.get(e["to"], ())
                    if self.nodes.get(x["to"], {}).get("kind") == "model"
                ]
        return models

    def model_of(self, table_id: str) -> str | None:
        return next((e["from"] for e in self.up.get(table_id, ()) if e["kind"] == "materializes"), None)

    def downstream(self, node_id: str, kinds: set[str], limit: int = 50) -> list[str]:
        seen, queue, out = {node_id}, [node_id], []
        while queue and len(out) < limit:
            cur = queue.pop(0)
            for e in self.down.get(cur, ()):
                nxt = e["to"]
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
                    if self.nodes.get(nxt, {}).get("kind") in kinds:
                        out.append(nxt)
        return out

    def start_of(self, node_id: str) -> dict[str, Any]:
        node = self.nodes[node_id]
        kind = node.get("kind")
        if kind == "tile":
            return {"start_kind": "tile", "start": str(node["tile_id"]), "system": node["system"]}
        if kind == "dashboard":
            return {"start_kind": "dashboard", "start": str(node["dashboard_id"]), "system": node["system"]}
        if node.get("system") == "dbt":
            return {"start_kind": "dbt_node", "start": node["unique_id"]}
        if node.get("system") == "warehouse":
            return {"start_kind": "table", "start": self.short(node_id)}
        return {
            "start_kind": "job",
            "start": str(node.get("job_id") or node.get("dag_id")),
            "system": node.get("system"),
        }

    def model_path(self, model_id: str) -> str:
        return str(self.nodes[model_id]["path"])


# --- schema changes -------------------------------------------------------------------------------------------
_RETYPE = {"VARCHAR": "INTEGER", "DATE": "VARCHAR", "TIMESTAMP": "VARCHAR", "BIGINT": "VARCHAR"}


def _retype_target(dtype: str) -> str:
    base = dtype.split("(")[0].upper()
    return _RETYPE.get(base, "VARCHAR")


def _schema_change(
    cat: Catalog, kind: str, table_id: str, column: str, tag: str
) -> tuple[Callable[[], None], Callable[[], None]]:
    short = cat.short(table_id)
    schema, name = short.split(".")
    q = f'"{schema}"."{name}"'
    dtype = cat.columns[short][column]
    if kind == "renamed":
        new = f"{column}_{tag}"
        return (
            lambda: cat.p.sql(f'alter table {q} rename column "{column}" to "{new}"'),
            lambda: cat.p.sql(f'alter table {q} rename column "{new}" to "{column}"'),
        )
    backup = f'"{schema}"."ade_eval_{name}_{tag}"'
    if kind == "dropped":
        return (
            lambda: cat.p.sql(
                f"create table {backup} as select * from {q}", f'alter table {q} drop column "{column}"'
            ),
            lambda: cat.p.sql(f"drop table {q}", f'alter table {backup} rename to "{name}"'),
        )
    target = _retype_target(dtype)
    if (
        target == "INTEGER"
    ):  # text that is not a number cannot become one: keep the text, change the type's kind
        target = "BLOB"
    return (
        lambda: cat.p.sql(
            f"create table {backup} as select * from {q}",
            f'alter table {q} alter column "{column}" set data type {target} using cast("{column}" as {target})',
        ),
        lambda: cat.p.sql(f"drop table {q}", f'alter table {backup} rename to "{name}"'),
    )


def _column_change(
    cat: Catalog, kind: str, table: str, column: str, tag: str, under: str, start: str
) -> Scenario:
    """A column of `table` renamed, dropped or retyped (`kind` column_<change>), named by what it is under and
    explained from `start`."""
    change = kind.split("_")[1]
    apply, revert = _schema_change(cat, change, table, column, tag)
    where = f"{cat.short(table)}.{column} {change} under {under}"
    return Scenario(kind, where, cat.start_of(start), Expected("schema_change", table, column), apply, revert)


def _tile_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    # a tile already failing or empty has a cause of its own: breaking more under it is no clean incident
    options = [
        (t, tbl, cols)
        for t, tbl, cols in cat.tiles()
        if cat.short(tbl) not in cat.views and t not in cat.unhealthy
    ]
    if not options:
        return None
    tile, table, cols = rng.choice(options)
    column = rng.choice(cols)
    start = tile
    dashboard = next((e["to"] for e in cat.down.get(tile, ()) if e["kind"] == "shown_on"), None)
    if dashboard is not None and dashboard not in cat.unhealthy and rng.random() < 0.3:
        start = dashboard
    return _column_change(cat, kind, table, column, tag, f"tile {cat.nodes[tile].get('name')!r}", start)


def _model_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    """A column of a source table (read by a model) changes; the start is the model or something below it."""
    options = []
    for node in cat.graph["nodes"]:
        if node.get("kind") != "table" or node["id"] not in cat.nodes:
            continue
        short = cat.short(node["id"])
        readers = cat.dbt_reader_of(node["id"])
        if readers and short in cat.columns and short not in cat.views:
            options.append((node["id"], readers))
    if not options:
        return None
    table, readers = rng.choice(options)
    cols = [c for c in cat.columns[cat.short(table)] if not c.startswith("_")]
    column = rng.choice(sorted(cols))
    model = rng.choice(readers)
    below = cat.downstream(model, {"model", "table", "tile"})
    start = rng.choice([model, *below[:6]])
    return _column_change(cat, kind, table, column, tag, f"model {cat.nodes[model].get('name')}", start)


# --- sources, builds, jobs -----------------------------------------------------------------------------------
def _source_scenario(cat: Catalog, rng: random.Random, tag: str) -> Scenario | None:
    options = [
        n
        for n in cat.graph["nodes"]
        if n.get("kind") == "source"
        and n.get("freshness")
        and n.get("relation")
        and n["id"] not in cat.stale_sources  # already stopped: loading less changes nothing
    ]
    if not options:
        return None
    source = rng.choice(options)
    fresh = source["freshness"]
    shift = int((fresh.get("error_after_hours") or fresh.get("warn_after_hours") or 24) + 200)
    relation = ".".join(source["relation"].split(".")[-2:])
    column = fresh["loaded_at_field"]
    below = cat.downstream(source["id"], {"model", "table", "tile", "dashboard"})
    start = rng.choice(below[:8] or [source["id"]])
    return Scenario(
        "source_stopped_loading",
        f"source {relation} stopped loading (its last load moved {shift} h back)",
        cat.start_of(start),
        Expected("stale_source", source["id"]),
        lambda: cat.p.sql(f'update {relation} set "{column}" = "{column}" - interval {shift} hour'),
        lambda: cat.p.sql(f'update {relation} set "{column}" = "{column}" + interval {shift} hour'),
    )


def _models(cat: Catalog) -> list[str]:
    return [n["id"] for n in cat.graph["nodes"] if n.get("kind") == "model" and n.get("path")]


def _edit_model(
    cat: Catalog, model: str, rewrite: Callable[[str], str]
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The edit, and its revert: the file restored and the model built again from a terminal (the newest run
    results green again, as the team would leave it), then the project's target folder and log cleared."""
    path = cat.p.project / cat.model_path(model)
    original = path.read_text()
    name = str(cat.nodes[model]["name"])

    def revert() -> None:
        path.write_text(original)
        result = cat.p.dbt("run", "--select", name)
        if result.returncode != 0:
            raise RuntimeError(f"dbt run of the restored {name} failed (exit {result.returncode})")
        cat.p.publish_outside_runs()
        cat.p.clean_outside_runs()

    return lambda: path.write_text(rewrite(original)), revert


def _build_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    models = _models(cat)
    if not models:
        return None
    model = rng.choice(models)
    name = cat.nodes[model]["name"]
    if kind == "build_failed_at_run_time":
        edit, revert = _edit_model(
            cat, model, lambda sql: f"select *, no_such_column_{tag} from (\n{sql}\n) as ade_eval\n"
        )
        expected = Expected("failed_model", model)
        command = ("run", "--select", name)
    else:
        edit, revert = _edit_model(cat, model, lambda sql: sql + "\n{{ ref('unclosed' }}\n")
        expected = Expected("failed_invocation")
        command = ("build", "--select", name)

    def apply() -> None:
        edit()
        result = cat.p.dbt(*command)
        if result.returncode == 0:
            raise RuntimeError(f"dbt {' '.join(command)} did not fail")

    below = cat.downstream(model, {"model", "table", "tile"})
    start = rng.choice([model, model, *below[:6]])
    return Scenario(
        kind,
        f"dbt {' '.join(command)} outside ADE after an edit of {name}",
        cat.start_of(start),
        expected,
        apply,
        revert,
    )


def _break_tile_scenario(cat: Catalog, rng: random.Random, tag: str) -> Scenario | None:
    options = []
    for tile, table, cols in cat.tiles():
        if tile in cat.unhealthy:
            continue
        model = cat.model_of(table)
        # an incremental model with on_schema_change: fail refuses the change (the build fails instead)
        if (
            model
            and cat.nodes[model].get("path")
            and cat.nodes[model].get("materialization") in ("table", "view")
        ):
            options.append((tile, table, model, cols))
    if not options:
        return None
    tile, table, model, cols = rng.choice(options)
    column = rng.choice(cols)
    name = cat.nodes[model]["name"]
    edit, restore = _edit_model(
        cat,
        model,
        lambda sql: (
            f'select * exclude ("{column}"), "{column}" as "{column}_{tag}" from (\n{sql}\n) as ade_eval\n'
        ),
    )

    def apply() -> None:
        edit()
        result = cat.p.dbt("run", "--select", name)
        if result.returncode != 0:
            raise RuntimeError(f"dbt run of the edited {name} failed (exit {result.returncode})")

    def revert() -> None:
        restore()

    return Scenario(
        "model_change_breaks_tile",
        f"model {name} edited and rebuilt: {column} renamed, under tile {cat.nodes[tile].get('name')!r}",
        cat.start_of(tile),
        Expected("schema_change", table, column),
        apply,
        revert,
    )


def _builder_scenario(cat: Catalog, rng: random.Random, tag: str) -> Scenario | None:
    settings = cat.p.settings
    own_job = cat.p.info.get("builder_job")
    builders = [
        n
        for n in cat.graph["nodes"]
        if n.get("kind") == "job"
        and cat.down.get(n["id"])
        and ((n.get("system") == "dbt_cloud" and settings.dbt_cloud is not None) or n.get("name") == own_job)
    ]
    if not builders:
        return None
    job = rng.choice(builders)
    built = [e["to"] for e in cat.down.get(job["id"], ()) if e["kind"] == "builds"]
    below = [x for b in built[:5] for x in cat.downstream(b, {"table", "tile"})[:3]]
    start = rng.choice(built + below)
    if job.get("system") == "dagster":
        from benchmarks.lineage.generated import run_builder

        return Scenario(
            "builder_run_failed",
            f"Dagster job {job['name']} run failed",
            cat.start_of(start),
            Expected("failed_builder_run", job["id"]),
            lambda: run_builder(cat.p, fail=True),
            lambda: run_builder(cat.p, fail=False),
        )

    def run(steps: list[str]) -> None:
        from ade_platform.clients.dbt_cloud import DbtCloudClient

        with DbtCloudClient.from_settings(settings.dbt_cloud) as client:
            run = client.trigger_job(int(job["job_id"]), f"lineage evaluation {tag}", steps_override=steps)
            deadline = time.time() + 600
            while time.time() < deadline:
                if int(client.get_run(run["id"], steps=False).get("status") or 0) >= 10:
                    return
                time.sleep(1)

    return Scenario(
        "builder_run_failed",
        f"dbt Cloud job {job['name']} ({job['job_id']}) run failed",
        cat.start_of(start),
        Expected("failed_builder_run", job["id"]),
        lambda: run([f"dbt run-operation ade_no_such_macro_{tag}"]),
        lambda: run(["dbt ls --select " + str(cat.nodes[built[0]]["name"])]),
    )


def _healthy(cat: Catalog, rng: random.Random) -> Scenario:
    starts = [
        n["id"]
        for n in cat.graph["nodes"]
        if n.get("kind") in ("tile", "model", "table", "dashboard")
        and n["id"] not in cat.unhealthy
        and not str(n.get("name") or "").startswith("ade_eval")
    ]
    start = rng.choice(starts)
    return Scenario(
        "healthy_control", "nothing changed", cat.start_of(start), None, lambda: None, lambda: None
    )


def _upstream(cat: Catalog, node_id: str) -> list[str]:
    seen, queue = {node_id}, [node_id]
    while queue:
        for e in cat.up.get(queue.pop(0), ()):
            if e["from"] not in seen:
                seen.add(e["from"])
                queue.append(e["from"])
    return sorted(seen - {node_id})


def _with_distractor(cat: Catalog, rng: random.Random, s: Scenario, tag: str) -> Scenario:
    """The same incident, plus a source upstream of the start that stops loading at the same moment: a new
    condition on the chain that does not explain the error (the explaining one must still rank first)."""
    start = _node_of(cat, s.start)
    sources = [
        n
        for n in _upstream(cat, start)
        if cat.nodes[n].get("kind") == "source"
        and (cat.nodes[n].get("freshness") or {}).get("loaded_at_field")
        and n not in cat.stale_sources
    ]
    if not sources:
        return s
    source = cat.nodes[rng.choice(sources)]
    relation = ".".join(source["relation"].split(".")[-2:])
    column, shift = source["freshness"]["loaded_at_field"], 500

    def apply() -> None:
        s.apply()
        cat.p.sql(f'update {relation} set "{column}" = "{column}" - interval {shift} hour')

    def revert() -> None:
        try:
            cat.p.sql(f'update {relation} set "{column}" = "{column}" + interval {shift} hour')
        finally:
            s.revert()

    return Scenario(
        s.kind, f"{s.description} (and source {relation} stops loading)", s.start, s.expected, apply, revert
    )


def _node_of(cat: Catalog, start: dict[str, Any]) -> str:
    kind, ref, system = start["start_kind"], str(start["start"]), start.get("system")
    for n in cat.graph["nodes"]:
        if system is not None and n.get("system") != system:
            continue
        if (kind == "tile" and str(n.get("tile_id")) == ref and n.get("kind") == "tile") or (
            kind == "dashboard" and str(n.get("dashboard_id")) == ref and n.get("kind") == "dashboard"
        ):
            return n["id"]
        if kind == "dbt_node" and n.get("unique_id") == ref:
            return n["id"]
    return cat.table_id(ref) if kind == "table" else ref


# An incident whose symptom is an error (what the explaining cause is matched against) may come with a distractor.
_DISTRACTABLE = {*(k for k in KINDS if k.endswith("_under_tile")), "model_change_breaks_tile"}


def generate(
    platform: Platform, seed: int, per_kind: int, kinds: tuple[str, ...] = KINDS, distractors: float = 0.5
) -> list[Scenario]:
    """per_kind scenarios of each kind (fewer where the platform offers no candidate), in a seeded order; a share
    `distractors` of those whose symptom is an error also have an unrelated source stop loading on the chain."""
    rng = random.Random(seed)
    cat = Catalog(platform)
    out: list[Scenario] = []
    for kind in kinds:
        for i in range(per_kind):
            tag = f"s{seed}k{kinds.index(kind)}i{i}"
            if kind.endswith("_under_tile"):
                found = _tile_scenario(cat, rng, kind, tag)
            elif kind.endswith("_under_model"):
                found = _model_scenario(cat, rng, kind, tag)
            elif kind == "source_stopped_loading":
                found = _source_scenario(cat, rng, tag)
            elif kind.startswith("build_failed"):
                found = _build_scenario(cat, rng, kind, tag)
            elif kind == "builder_run_failed":
                found = _builder_scenario(cat, rng, tag)
            elif kind == "model_change_breaks_tile":
                found = _break_tile_scenario(cat, rng, tag)
            elif kind in SILENT:
                from benchmarks.lineage.silent_scenarios import silent_scenario

                found = silent_scenario(cat, rng, kind, tag)
            elif kind in ("upstream_rename_committed", "upstream_rename_uncommitted", "healthy_refactor"):
                from benchmarks.lineage.code_scenarios import staging_edit

                found = staging_edit(cat, rng, kind, tag)
            else:
                found = _healthy(cat, rng)
            if found is not None and kind in _DISTRACTABLE and rng.random() < distractors:
                found = _with_distractor(cat, rng, found, tag)
            if found is not None:
                out.append(found)
    rng.shuffle(out)
    return out
