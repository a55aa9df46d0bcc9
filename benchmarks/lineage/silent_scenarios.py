"""Silent incidents: every build stays green and a number is wrong. Made on a running platform after it was
materialized and profiled, the way they arrive: the team changes a model's logic (a WHERE added, a CASE changed,
committed or only saved) and builds it from a terminal; a loader deletes, rewrites, nulls or duplicates a source's
rows and the models are run again (`dbt run`, no tests: green). The controls change what ordinary days change:
new rows appended by the loader, a refactor that keeps every value.

The start an agent is handed is the changed relation or one below it (a model, its table, a tile) whose values
visibly changed (chosen once the change is made, with plain SQL of its own); the cause a
correct answer ranks first is on the node where the change began: `logic_change` on the edited model,
`source_data_change` on the source. After each scenario the platform is put back and profiled again (as the
profile asset does after the next build), so the next scenario's baseline is a healthy profile.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from benchmarks.lineage.scenarios import Catalog, Expected, Scenario, _models

SILENT_CONTROLS = ("healthy_rows_appended",)
PROFILE_SOURCE = "profile_baseline"  # what the stand-in for the profile asset records its profiles as


# --- baselines ------------------------------------------------------------------------------------------------
def unique_keys(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """relation (db.schema.name, lower case) -> the columns dbt tests declare unique on it."""
    nodes = {**(manifest.get("nodes") or {}), **(manifest.get("sources") or {})}
    relations = {
        uid: ".".join(str(p) for p in (n.get("database"), n.get("schema"), n.get("alias") or n.get("identifier")
                                        or n.get("name")) if p).lower()
        for uid, n in nodes.items()
    }  # fmt: skip
    out: dict[str, list[str]] = {}
    for node in nodes.values():
        meta = node.get("test_metadata") or {}
        column = (meta.get("kwargs") or {}).get("column_name")
        if meta.get("name") != "unique" or not column:
            continue
        for parent in (node.get("depends_on") or {}).get("nodes") or []:
            if parent in relations:
                out.setdefault(relations[parent], []).append(str(column))
    return out


def record_baselines(platform: Any, source: str = PROFILE_SOURCE) -> int:
    """Profile every relation of the lineage graph in the dbt warehouse and keep the profiles, as the profile
    asset does after a build (the stand-in: lib/profiles through the warehouse client). Returns how many."""
    from dataclasses import replace

    from ade_platform.clients.warehouses import open_client
    from ade_platform.lib.lineage.sources import LINEAGE_ASSET
    from ade_platform.lib.profiles.profile import profile_relation
    from ade_platform.store import StoreReader, StoreWriter
    from ade_platform.store.profiles import record_profile

    settings = platform.settings
    reader = StoreReader(settings.store_root)
    writer = StoreWriter(settings.store_root, retention=settings.store.retention)
    graph = reader.latest(LINEAGE_ASSET).data
    keys = unique_keys(reader.latest("dbt_manifest").data)
    wh_name = settings.dbt.warehouse
    client = open_client(settings, wh_name)
    rows = client.query(
        "select table_schema, table_name, column_name, data_type from information_schema.columns "
        "order by table_schema, table_name, ordinal_position",
        max_rows=100_000,
    ).rows
    columns: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        schema, table, column, dtype = row.values()
        columns.setdefault(f"{schema}.{table}".lower(), []).append((str(column), str(dtype)))

    def run_sql(sql: str) -> list[tuple]:
        return [tuple(r.values()) for r in client.query(sql, max_rows=20_000).rows]

    count = 0
    for node in graph["nodes"]:
        if node.get("system") != "warehouse" or node.get("warehouse") != wh_name:
            continue
        relation = str(node.get("name") or "").lower()
        short = ".".join(relation.split(".")[-2:])
        if short not in columns:
            continue
        uniques = [k for k in keys.get(relation, []) if k in {c for c, _ in columns[short]}]
        profile = profile_relation(
            run_sql, "duckdb", wh_name, short.split("."), columns[short], unique_keys=[(k,) for k in uniques]
        )
        record_profile(writer, replace(profile, relation=relation), source)
        count += 1
    return count


# --- helpers --------------------------------------------------------------------------------------------------
def _values(cat: Catalog, short: str, column: str) -> list[tuple[Any, int]]:
    """A column's values and counts, most frequent first."""
    return cat.p.sql(
        f'select "{column}", count(*) from {short} where "{column}" is not null group by 1 order by 2 desc, 1'
    )[0]


def _categories(cat: Catalog, short: str) -> list[tuple[str, list[tuple[Any, int]]]]:
    """The low-cardinality text columns of a relation (2-12 values), with their values."""
    out = []
    for column, dtype in cat.columns.get(short, {}).items():
        if column.startswith("_") or ("CHAR" not in dtype.upper() and "TEXT" not in dtype.upper()):
            continue
        values = _values(cat, short, column)
        if 2 <= len(values) <= 12:
            out.append((column, values))
    return out


def _numerics(cat: Catalog, short: str) -> list[str]:
    return [
        c
        for c, t in cat.columns.get(short, {}).items()
        if not c.startswith("_")
        and t.split("(")[0].upper() in ("DECIMAL", "DOUBLE", "INTEGER", "BIGINT", "FLOAT")
        and not c.endswith("id")
    ]


def _start_below(cat: Catalog, rng: random.Random, node: str, itself: bool) -> str | None:
    """Where an agent is handed the incident: a healthy model, table or tile below the change (or the changed
    relation itself)."""
    below = [n for n in cat.downstream(node, {"model", "table", "tile"}) if n not in cat.unhealthy][:8]
    if itself:
        below.append(node)
    return rng.choice(below) if below else None


def _relation_read(cat: Catalog, node_id: str) -> tuple[str, list[str] | None] | None:
    """(db-less relation, the columns a person sees there: None for all) of a start candidate."""
    node = cat.nodes[node_id]
    if node.get("kind") == "tile":
        for tile, table, cols in cat.tiles():
            if tile == node_id:
                return cat.short(table), cols
        return None
    rel = str(node.get("relation") or (node.get("name") if node.get("system") == "warehouse" else "") or "")
    short = ".".join(rel.split(".")[-2:]).lower()
    return (short, None) if short in cat.columns else None


def _looks(cat: Catalog, short: str, columns: list[str] | None) -> dict[str, float]:
    """What a person reading a relation notices, as numbers: its rows, each column's null share, the share of each
    value of a low-cardinality text column, a numeric column's mean. Computed here in plain SQL (not with the
    product's profiles) so that the symptom an agent is handed is chosen independently of what it will answer."""
    rows = float(cat.p.sql(f"select count(*) from {short}")[0][0][0] or 0)
    out = {"rows": rows}
    for column, dtype in cat.columns.get(short, {}).items():
        if column.startswith("_") or (columns is not None and column not in columns):
            continue
        nulls = cat.p.sql(f'select count(*) from {short} where "{column}" is null')[0][0][0]
        out[f"{column}:nulls"] = 100.0 * nulls / rows if rows else 0.0
        base = dtype.split("(")[0].upper()
        if base in ("DECIMAL", "DOUBLE", "INTEGER", "BIGINT", "FLOAT") and not column.endswith("id"):
            mean = cat.p.sql(f'select avg("{column}") from {short}')[0][0][0]
            out[f"{column}:mean"] = float(mean) if mean is not None else 0.0
        elif "CHAR" in base or "TEXT" in base:
            values = _values(cat, short, column)
            if len(values) <= 12:
                for value, n in values:
                    out[f"{column}={value}"] = 100.0 * n / rows if rows else 0.0
    return out


def _visible_change(before: dict[str, float], after: dict[str, float]) -> float:
    """How plainly two looks differ, 0 (not at all) and up; >= 1 is what anyone would notice: rows moved 10%, a
    null share or a value's share 5 points, a mean 25%."""
    score = 0.0
    for key in before.keys() | after.keys():
        a, b = before.get(key, 0.0), after.get(key, 0.0)
        if key == "rows":
            score = max(score, abs(b - a) / max(a, 1.0) / 0.10)
        elif key.endswith(":mean"):
            score = max(score, abs(b - a) / max(abs(a), 1e-9) / 0.25)
        else:
            score = max(score, abs(b - a) / 5.0)
    return score


class _ChangedStart:
    """The start an agent is handed for a silent incident: among the healthy models, tables and tiles below the
    change (and the changed relation itself, when `itself`), one whose values visibly changed. An agent is called
    in by a number that looks wrong; a relation the change never reached (a column aggregated away, a tile that
    does not show it) is no symptom. Chosen after the change is made; `start` is filled in place."""

    def __init__(self, cat: Catalog, rng: random.Random, node: str, itself: bool):
        self.cat, self.rng = cat, rng
        below = [n for n in cat.downstream(node, {"model", "table", "tile"}) if n not in cat.unhealthy][:8]
        self.candidates = [
            (n, r) for n in below + ([node] if itself else []) if (r := _relation_read(cat, n))
        ]
        self.start: dict[str, Any] = {}
        self._before: dict[str, dict[str, float]] = {}

    def __bool__(self) -> bool:
        return bool(self.candidates)

    def before(self) -> None:
        self._before = {n: _looks(self.cat, *r) for n, r in self.candidates}

    def choose(self) -> None:
        seen = [(_visible_change(self._before[n], _looks(self.cat, *r)), n) for n, r in self.candidates]
        plain = [n for score, n in seen if score >= 1.0]
        chosen = self.rng.choice(plain) if plain else max(seen)[1]
        self.start.clear()
        self.start.update(self.cat.start_of(chosen))


def _finish(cat: Catalog) -> None:
    """What the team's next green build and the profile asset leave: the run published, the target folder
    cleared, every relation profiled again (the next scenario's baseline)."""
    cat.p.publish_outside_runs()
    cat.p.clean_outside_runs()
    record_baselines(cat.p)


def _run(cat: Catalog, select: str, what: str) -> None:
    result = cat.p.dbt("run", "--select", select)
    if result.returncode != 0:
        raise RuntimeError(f"dbt run --select {select} ({what}) exited {result.returncode}")


# --- logic changes --------------------------------------------------------------------------------------------
def logic_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    """A model's logic changed by the team and built with what reads it: rows filtered out (a WHERE on a
    category, an amount or a date; committed) or a category remapped (a CASE; only saved, not committed)."""
    options = []
    for model in _models(cat):
        node = cat.nodes[model]
        rel = str(node.get("relation") or "")
        short = ".".join(rel.split(".")[-2:])
        if node.get("materialization") not in ("table", "view") or short not in cat.columns:
            continue
        if model in cat.unhealthy or not cat.downstream(model, {"model", "table", "tile"}):
            continue
        options.append((model, short))
    rng.shuffle(options)
    for model, short in options:
        cats = _categories(cat, short)
        nums = _numerics(cat, short)
        name = str(cat.nodes[model]["name"])
        if kind == "logic_remaps_values" and cats:
            column, values = rng.choice(cats)
            a, b = (
                rng.sample([v for v, _ in values], 2)
                if rng.random() < 0.6
                else (values[0][0], f"other_{tag}")
            )
            wrap = (
                f'select * replace (case when "{column}" = \'{a}\' then \'{b}\' else "{column}" end as "{column}")'
                f"\nfrom (\n{{sql}}\n) as ade_eval\n"
            )
            what = f"{name}: CASE maps {column} '{a}' to '{b}' (uncommitted), dbt run {name}+"
            return _logic(cat, rng, kind, model, wrap, what, column, commit=False, tag=tag)
        if kind == "logic_drops_rows":
            shapes = []
            if cats:
                column, values = rng.choice(cats)
                value = rng.choice(
                    [v for v, n in values if n >= 0.15 * sum(c for _, c in values)] or [values[0][0]]
                )
                shapes.append(
                    (f"\"{column}\" <> '{value}'", column, f"rows with {column} = '{value}' dropped")
                )
            if nums:
                column = rng.choice(nums)
                median = cat.p.sql(f'select median("{column}") from {short}')[0][0][0]
                if median is not None:
                    shapes.append((f'"{column}" > {median}', None, f"rows with {column} <= {median} dropped"))
            if not shapes:
                continue
            where, column, said = rng.choice(shapes)
            wrap = f"select * from (\n{{sql}}\n) as ade_eval\nwhere {where}\n"
            what = f"{name}: WHERE added ({said}; committed), dbt run {name}+"
            return _logic(cat, rng, kind, model, wrap, what, column, commit=True, tag=tag)
    return None


def _logic(
    cat: Catalog,
    rng: random.Random,
    kind: str,
    model: str,
    wrap: str,
    what: str,
    column: str | None,
    commit: bool,
    tag: str,
) -> Scenario | None:
    path = cat.p.project / cat.model_path(model)
    original = path.read_text()
    name = str(cat.nodes[model]["name"])
    start = _ChangedStart(cat, rng, model, itself=True)
    if not start:
        return None

    def apply() -> None:
        start.before()
        path.write_text(wrap.replace("{sql}", original.rstrip()))
        if commit:
            cat.p.git("commit", "-qam", f"Change the logic of {name} ({tag})")
        _run(cat, f"{name}+", "the edited model")
        start.choose()

    def revert() -> None:
        path.write_text(original)
        if commit:
            cat.p.git("commit", "-qam", f"Revert {name} ({tag})")
        _run(cat, f"{name}+", "the restored model")
        _finish(cat)

    return Scenario(kind, what, start.start, Expected("logic_change", model, column), apply, revert)


# --- source data changes --------------------------------------------------------------------------------------
def source_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    """A source's rows or values changed by its loader, then the models run again (green)."""
    options = [
        n["id"]
        for n in cat.graph["nodes"]
        if n.get("kind") == "source" and n.get("relation") and cat.downstream(n["id"], {"model"})
    ]
    if not options:
        return None
    source = rng.choice(options)
    node = cat.nodes[source]
    short = ".".join(str(node["relation"]).split(".")[-2:])
    cols = cat.columns.get(short, {})
    key = "id" if "id" in cols else next(iter(cols))
    cats, nums = _categories(cat, short), _numerics(cat, short)
    column: str | None = None
    if kind == "source_rows_deleted":
        shapes = [(f'delete from {short} where "{key}" % {k} = 0', f"1 row in {k} deleted") for k in (2, 3)]
        if cats:
            c, values = rng.choice(cats)
            shapes.append(
                (
                    f"delete from {short} where \"{c}\" = '{values[0][0]}'",
                    f"all '{values[0][0]}' rows deleted",
                )
            )
        dates = [c for c, t in cols.items() if t.upper() in ("DATE", "TIMESTAMP") and not c.startswith("_")]
        if dates:
            d = rng.choice(dates)
            cut = cat.p.sql(f'select quantile_disc("{d}", 0.6) from {short}')[0][0][0]
            shapes.append((f"delete from {short} where \"{d}\" >= '{cut}'", f"rows from {cut} on deleted"))
        statement, said = rng.choice(shapes)
    elif kind == "source_values_rewritten":
        if not cats:
            return None
        column, values = rng.choice(cats)
        a = values[0][0]
        b = rng.choice([v for v, _ in values[1:]] + [f"{a}_v2"])
        statement, said = (
            f"update {short} set \"{column}\" = '{b}' where \"{column}\" = '{a}'",
            f"{column} '{a}' rewritten to '{b}'",
        )
    elif kind == "source_values_nulled":
        choices = [c for c, _ in cats] + nums
        if not choices:
            return None
        column = rng.choice(choices)
        k = rng.choice((2, 3))
        statement, said = (
            f'update {short} set "{column}" = null where "{key}" % {k} = 0',
            f"{column} nulled on 1 row in {k}",
        )
    elif kind == "source_rows_duplicated":
        k = rng.choice((2, 3))
        statement, said = (
            f'insert into {short} select * from {short} where "{key}" % {k} = 0',
            f"1 row in {k} loaded twice",
        )
    else:  # healthy_rows_appended: the loader's ordinary day, a few % new rows
        top = cat.p.sql(f'select max("{key}"), count(*) from {short}')[0][0]
        share = rng.choice((40, 50, 60))  # every 40th-60th row copied with a new key: 1.7-2.5% more rows
        fresh = f'"{key}" + {top[0] + 1} as "{key}"'  # new keys past the largest
        if "_loaded_at" in cols:
            fresh += ', now()::timestamp as "_loaded_at"'
        statement = f'insert into {short} select * replace ({fresh}) from {short} where "{key}" % {share} = 0'
        said = f"{top[1] // share} new rows appended"
    backup = f'"{short.split(".")[0]}"."ade_eval_{short.split(".")[1]}_{tag}"'
    control = kind in SILENT_CONTROLS
    changed = None if control else _ChangedStart(cat, rng, source, itself=False)
    plain = _start_below(cat, rng, source, itself=False) if control else None
    if not (changed or plain):
        return None

    selector = "source:" + ".".join(str(node["unique_id"]).split(".")[-2:]) + "+"

    def apply() -> None:
        if changed:
            changed.before()
        cat.p.sql(f"create table {backup} as select * from {short}", statement)
        _run(cat, selector, "after the load")
        if changed:
            changed.choose()

    def revert() -> None:
        cat.p.sql(
            f"delete from {short}", f"insert into {short} select * from {backup}", f"drop table {backup}"
        )
        _run(cat, selector, "after the restore")
        _finish(cat)

    expected = None if control else Expected("source_data_change", source, column)
    start = changed.start if changed else cat.start_of(plain)  # type: ignore[arg-type]
    return Scenario(kind, f"source {short}: {said}; dbt run", start, expected, apply, revert)


def silent_scenario(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    if kind.startswith("logic_"):
        return logic_scenario(cat, rng, kind, tag)
    return source_scenario(cat, rng, kind, tag)


Factory = Callable[[Catalog, random.Random, str, str], Scenario | None]
