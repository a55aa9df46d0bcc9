"""The local DDL repository: collect DDL for every visible object, write it out, detect staleness.

Layout (spec 4.5)::

    <root>/src/{DB}/_database.sql
    <root>/src/{DB}/{SCHEMA}/_schema.sql
    <root>/src/{DB}/{SCHEMA}/tables|views|functions|procedures|stages|tasks/{NAME}.sql
    <root>/.object-repository.json      index: every object with its path, sha256 and DDL source

Collection costs one batched INFORMATION_SCHEMA call per database plus one batched GET_DDL call (skipped
once GET_DDL is known to be unavailable). Excluded objects are never written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ade_platform.lib.snowflake import ddl as ddl_lib
from ade_platform.lib.snowflake.errors import FATAL_CODES, SnowflakeError
from ade_platform.lib.snowflake.metadata import container_excluded
from ade_platform.lib.snowflake.objects import KINDS, quote_ident, sql_literal

if TYPE_CHECKING:
    # Discovery (the guard) and view lineage parse SQL with sqlglot: loaded when a sync runs, not when the
    # snowflake toolset is mounted.
    from ade_platform.lib.snowflake.discovery import SnowflakeService
    from ade_platform.lib.snowflake.lineage import Edge

INDEX_FILE = ".object-repository.json"
INDEX_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_$.\-()]")
_GET_DDL_CHUNK = 100


@dataclass(frozen=True)
class SyncOptions:
    include_databases: bool = True
    include_schemas: bool = True
    include_tables: bool = True
    include_views: bool = True
    include_functions: bool = False
    include_procedures: bool = False
    include_stages: bool = False
    include_tasks: bool = False
    databases: tuple[str, ...] = ()  # empty: every visible database


@dataclass
class RepoObject:
    kind: str  # spec spelling: database, schema, table, view, ...
    database: str
    schema: str | None
    name: str  # functions/procedures: NAME(ARG_TYPES)
    ddl: str
    source: str  # get_ddl | information_schema | show

    @property
    def key(self) -> str:
        if self.kind == "database":
            return quote_ident(self.name)
        return ".".join(quote_ident(p) for p in (self.database, self.schema, self.name) if p)

    @property
    def path(self) -> str:
        if self.kind == "database":
            return f"src/{_safe(self.database)}/_database.sql"
        if self.kind == "schema":
            return f"src/{_safe(self.database)}/{_safe(self.name)}/_schema.sql"
        folder = KINDS[self.kind].folder or f"{self.kind}s"
        return f"src/{_safe(self.database)}/{_safe(self.schema or '')}/{folder}/{_safe(self.name)}.sql"


@dataclass
class Inventory:
    objects: list[RepoObject] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _safe(part: str) -> str:
    text = _UNSAFE.sub("_", part)[:200] or "_"
    return "_" + text if text.startswith(".") else text


def _upper(row: dict[str, Any], key: str) -> str:
    return str(row.get(key) or "")


def collect(service: SnowflakeService, options: SyncOptions) -> Inventory:
    inv = Inventory()
    databases = list(options.databases)
    if not databases:
        databases = [
            str(r.get("name")) for r in service.list_objects("database", None, None, None)["objects"]
        ]
    for db in databases:
        if container_excluded(service.policy, db):
            continue
        _collect_database(service, db, options, inv)
    if not service.ddl_unavailable:
        _apply_get_ddl(service, inv)
    return inv


def _collect_database(service: SnowflakeService, db: str, options: SyncOptions, inv: Inventory) -> None:
    info = f"{quote_ident(db)}.INFORMATION_SCHEMA"
    databases, schemata, tables, columns, views = service.metadata_batch(
        [
            f"SELECT * FROM {info}.DATABASES WHERE DATABASE_NAME = {sql_literal(db)}",
            f"SELECT * FROM {info}.SCHEMATA",
            f"SELECT * FROM {info}.TABLES",
            f"SELECT * FROM {info}.COLUMNS",
            f"SELECT * FROM {info}.VIEWS",
        ]
    )

    def visible_schema(name: str) -> bool:
        return name.upper() != "INFORMATION_SCHEMA" and not container_excluded(service.policy, db, name)

    def visible(schema: str, name: str, kind_sql: str = "TABLE") -> bool:
        return visible_schema(schema) and not service.excluded(ddl_lib.fqn(db, schema, name), kind_sql)

    if options.include_databases:
        inv.objects.append(
            RepoObject(
                "database",
                db,
                None,
                db,
                ddl_lib.database_ddl(db, (databases or [None])[0]),
                "information_schema",
            )
        )
    if options.include_schemas:
        for row in schemata:
            name = _upper(row, "SCHEMA_NAME")
            if name and visible_schema(name):
                inv.objects.append(
                    RepoObject(
                        "schema", db, None, name, ddl_lib.schema_ddl(db, name, row), "information_schema"
                    )
                )
    by_table: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for col in columns:
        by_table.setdefault((_upper(col, "TABLE_SCHEMA"), _upper(col, "TABLE_NAME")), []).append(col)
    if options.include_tables:
        for row in tables:
            schema, name = _upper(row, "TABLE_SCHEMA"), _upper(row, "TABLE_NAME")
            if "VIEW" in _upper(row, "TABLE_TYPE").upper() or not visible(schema, name):
                continue
            text = ddl_lib.table_ddl(db, schema, name, by_table.get((schema, name), []), row)
            inv.objects.append(RepoObject("table", db, schema, name, text, "information_schema"))
    kinds = {
        (_upper(r, "TABLE_SCHEMA"), _upper(r, "TABLE_NAME")): _upper(r, "TABLE_TYPE").upper() for r in tables
    }
    if options.include_views:
        for row in views:
            schema, name = _upper(row, "TABLE_SCHEMA"), _upper(row, "TABLE_NAME")
            if not visible(schema, name, "VIEW"):
                continue
            mat = "MATERIALIZED" in kinds.get((schema, name), "")
            text = ddl_lib.view_ddl(db, schema, name, _upper(row, "VIEW_DEFINITION"), materialized=mat)
            inv.objects.append(
                RepoObject(
                    "materialized_view" if mat else "view", db, schema, name, text, "information_schema"
                )
            )
    from ade_platform.lib.snowflake.lineage import edges_from_views

    edges, unparsed = edges_from_views(
        r for r in views if _upper(r, "TABLE_SCHEMA").upper() != "INFORMATION_SCHEMA"
    )
    inv.edges.extend(edges)
    if unparsed:
        inv.notes.append(f"{db}: {unparsed} view definition(s) could not be parsed for dependencies")
    for label, wanted in (("FUNCTION", options.include_functions), ("PROCEDURE", options.include_procedures)):
        if wanted:
            _collect_routines(service, db, label, info, visible, inv)
    if options.include_stages or options.include_tasks:
        _collect_shown(service, db, options, visible, inv)


def _collect_routines(
    service: SnowflakeService, db: str, label: str, info: str, visible: Any, inv: Inventory
) -> None:
    try:
        rows = service.metadata(f"SELECT * FROM {info}.{label}S")
    except SnowflakeError as exc:
        if exc.code in FATAL_CODES:
            raise
        inv.notes.append(
            f"{db}: INFORMATION_SCHEMA.{label}S is unavailable; {label.lower()}s were not synced"
        )
        return
    for row in rows:
        schema = _upper(row, f"{label}_SCHEMA")
        name = _upper(row, f"{label}_NAME")
        if schema.upper() == "INFORMATION_SCHEMA" or not visible(schema, name, label):
            continue
        text = ddl_lib.routine_ddl(label, db, schema, row)
        inv.objects.append(
            RepoObject(
                label.lower(), db, schema, ddl_lib.routine_signature(row, label), text, "information_schema"
            )
        )


def _collect_shown(
    service: SnowflakeService, db: str, options: SyncOptions, visible: Any, inv: Inventory
) -> None:
    for kind, wanted in (("stage", options.include_stages), ("task", options.include_tasks)):
        if not wanted:
            continue
        try:
            rows = service.metadata(f"SHOW {KINDS[kind].plural} IN DATABASE {quote_ident(db)}", scopes={db})
        except SnowflakeError as exc:
            if exc.code in FATAL_CODES:
                raise
            inv.notes.append(f"{db}: SHOW {KINDS[kind].plural} is unavailable; {kind}s were not synced")
            continue
        for row in rows:
            schema, name = str(row.get("schema_name") or ""), str(row.get("name") or "")
            if not schema or not name or not visible(schema, name, kind.upper()):
                continue
            fq = ddl_lib.fqn(db, schema, name)
            if kind == "stage":
                text = f"create or replace stage {fq}" + (
                    f" url={sql_literal(str(row['url']))}" if row.get("url") else ""
                )
            else:
                text = (
                    f"create or replace task {fq}"
                    + (f"\nwarehouse={quote_ident(str(row['warehouse']))}" if row.get("warehouse") else "")
                    + (f"\nschedule={sql_literal(str(row['schedule']))}" if row.get("schedule") else "")
                    + f"\nas\n{row.get('definition') or ''}"
                )
            inv.objects.append(RepoObject(kind, db, schema, name, ddl_lib.normalize_ddl(text), "show"))


def _apply_get_ddl(service: SnowflakeService, inv: Inventory) -> None:
    """Replace reconstructed DDL by GET_DDL's, in batches; on the first failure keep the reconstruction."""
    # Containers keep their own CREATE only: GET_DDL of a database or schema includes all its objects.
    targets = [o for o in inv.objects if KINDS[o.kind].ddl and o.kind not in ("database", "schema")]
    for start in range(0, len(targets), _GET_DDL_CHUNK):
        chunk = targets[start : start + _GET_DDL_CHUNK]
        selects = []
        for i, obj in enumerate(chunk):
            kind = "VIEW" if obj.kind == "materialized_view" else KINDS[obj.kind].guard_kind
            selects.append(
                f"SELECT {i} AS I, GET_DDL({sql_literal(kind)}, {sql_literal(obj.key)}, TRUE) AS DDL"
            )
        try:
            rows = service.metadata("\nUNION ALL\n".join(selects))
        except SnowflakeError as exc:
            if exc.code in FATAL_CODES or exc.code == "EXCLUDED_OBJECT":
                raise
            service.ddl_unavailable = True
            inv.notes.append("GET_DDL is unavailable; DDL reconstructed from INFORMATION_SCHEMA")
            return
        for row in rows:
            idx, text = row.get("I"), row.get("DDL")
            if isinstance(idx, int) and 0 <= idx < len(chunk) and text:
                chunk[idx].ddl = ddl_lib.normalize_ddl(str(text))
                chunk[idx].source = "get_ddl"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".sql")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_index(root: Path) -> dict[str, Any] | None:
    try:
        return json.loads((root / INDEX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_repository(
    root: Path, inv: Inventory, *, connection: str | None, databases: Sequence[str]
) -> dict[str, Any]:
    root = root.resolve()
    previous = read_index(root) or {}
    entries, written, unchanged = [], 0, 0
    for obj in sorted(inv.objects, key=lambda o: o.path):
        target = (root / obj.path).resolve()
        if root not in target.parents:
            continue  # a name that escapes the repository is never written
        text = ddl_lib.normalize_ddl(obj.ddl)
        try:
            same = target.read_text(encoding="utf-8") == text
        except OSError:
            same = False
        if same:
            unchanged += 1
        else:
            _write_atomic(target, text)
            written += 1
        entries.append(
            {
                "type": obj.kind,
                "database": obj.database,
                "schema": obj.schema,
                "name": obj.name,
                "key": obj.key,
                "path": obj.path,
                "sha256": ddl_lib.ddl_hash(text),
                "ddl_source": obj.source,
            }
        )
    kept = {e["path"] for e in entries}
    removed = 0
    for old in previous.get("objects", []):
        rel = str(old.get("path", ""))
        target = (root / rel).resolve()
        if rel.startswith("src/") and rel not in kept and root in target.parents and target.is_file():
            target.unlink()
            removed += 1
    index = {
        "version": INDEX_VERSION,
        "synced_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "connection": connection,
        "databases": list(databases),
        "objects": entries,
        "dependencies": [{"from": a, "to": b} for a, b in sorted(set(inv.edges))],
        "notes": inv.notes,
    }
    _write_atomic(root / INDEX_FILE, json.dumps(index, indent=2, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    return {
        "synced": len(entries),
        "written": written,
        "unchanged": unchanged,
        "removed": removed,
        "counts": counts,
        "index": INDEX_FILE,
        "notes": inv.notes,
    }


def staleness(index: dict[str, Any], current: Iterable[RepoObject]) -> dict[str, Any]:
    """Compare an index with freshly collected DDL: changed, dropped and new objects."""
    local = {e["key"] + "|" + e["type"]: e for e in index.get("objects", [])}
    remote = {o.key + "|" + o.kind: o for o in current}
    changed = [
        {"objectName": o.key, "objectType": o.kind, "path": local[k]["path"]}
        for k, o in remote.items()
        if k in local and local[k]["sha256"] != ddl_lib.ddl_hash(o.ddl)
    ]
    dropped = [
        {"objectName": e["key"], "objectType": e["type"], "path": e["path"]}
        for k, e in local.items()
        if k not in remote
    ]
    new = [{"objectName": o.key, "objectType": o.kind} for k, o in remote.items() if k not in local]
    return {"stale": changed, "dropped": dropped, "new": new, "is_stale": bool(changed or dropped or new)}
