"""Discovery and lineage over a SnowRunner: list, describe, DDL (with fallback), lineage, dependencies.

Every statement this service builds is classified by the guard before it runs (it must be METADATA and
reference nothing excluded), and every object named by the agent is checked against the exclusions
first. Where GET_DDL or OBJECT_DEPENDENCIES are unavailable (missing privilege, or an emulator), DDL is
rebuilt from INFORMATION_SCHEMA and lineage from sqlglot-parsed view definitions; answers say which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ade_platform.lib.guard import GuardPolicy, classify_sql
from ade_platform.lib.guard.policy import excluded_kind, matches_exclusion, split_name
from ade_platform.lib.snowflake import ddl as ddl_lib
from ade_platform.lib.snowflake.errors import FATAL_CODES, CliFailure, SnowflakeError
from ade_platform.lib.snowflake.lineage import (
    Edge,
    Graph,
    edges_from_object_dependencies,
    edges_from_views,
    view_references,
)
from ade_platform.lib.snowflake.metadata import container_excluded, filter_rows, mask_personal
from ade_platform.lib.snowflake.objects import ObjectName, kind, parse_name, quote_ident, sql_literal
from ade_platform.lib.snowflake.proxy import safe_message
from ade_platform.lib.snowflake.runner import Row, SnowRunner

_FATAL = FATAL_CODES
DDL_FALLBACK_NOTE = (
    "GET_DDL is unavailable on this connection (function missing or privilege lacking); the DDL was "
    "reconstructed from INFORMATION_SCHEMA"
)
LINEAGE_FALLBACK_NOTE = (
    "SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES is unavailable on this connection; lineage was derived "
    "by parsing view definitions from INFORMATION_SCHEMA.VIEWS with sqlglot (views only, within the "
    "database)"
)
CONTAINER_NOTE = (
    "GET_DDL of a database or schema includes every object in it, and some of them match the exclusion "
    "patterns: only the container's own DDL is returned (reconstructed from INFORMATION_SCHEMA)"
)
EXCLUSION_NOTE = "objects matching the exclusion patterns are omitted"


def ident(text: str | None) -> str | None:
    """One identifier as stored: unquoted -> upper-case, "quoted" -> as written."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    if len(text) > 255 or any(ord(c) < 32 for c in text):
        raise SnowflakeError("invalid_argument", "identifiers must be 1-255 printable characters")
    return text.upper()


class SnowflakeService:
    def __init__(
        self, runner: SnowRunner, policy: GuardPolicy, *, max_rows: int = 1000, max_nodes: int = 500
    ):
        self.runner = runner
        self.policy = dataclasses.replace(
            policy, default_database=runner.database, default_schema=runner.schema
        )
        self.max_rows = max_rows
        self.max_nodes = max_nodes
        self.ddl_unavailable = False
        self.dependencies_unavailable = False

    # -- names and exclusions -------------------------------------------------------------------
    def excluded(self, name: str, kind_sql: str = "TABLE") -> str | None:
        return matches_exclusion(name, self.policy, kind=kind_sql.replace(" ", "_"))

    def check(self, obj: ObjectName) -> ObjectName:
        guard_kind = obj.kind.guard_kind
        if excluded_kind(guard_kind, self.policy):
            raise SnowflakeError("EXCLUDED_OBJECT", f"objects of type {obj.kind.name} are excluded")
        if obj.kind.name in ("database", "schema"):
            pattern = container_excluded(
                self.policy, obj.database or obj.name, obj.name if obj.database else None
            )
        else:
            pattern = matches_exclusion(obj.display, self.policy, kind=guard_kind)
        if pattern:
            raise SnowflakeError("EXCLUDED_OBJECT", f"{obj.display} matches exclusion pattern '{pattern}'")
        return obj

    def name(self, text: str, kind_name: str, database: str | None, schema: str | None) -> ObjectName:
        obj = parse_name(
            text,
            kind_name,
            database=database,
            schema=schema,
            default_database=self.runner.database,
            default_schema=self.runner.schema,
        )
        return self.check(obj)

    # -- running our own statements -------------------------------------------------------------
    def _guarded(self, sql: str, scopes: frozenset[str] | set[str] = frozenset()) -> None:
        """Our statements must be METADATA and reference nothing excluded. ``scopes``: containers
        (DB, DB.SCHEMA) already checked with container_excluded, whose rows are then filtered one by one."""
        c = classify_sql(sql, self.policy)
        if [e for e in c.excluded if e not in scopes]:
            raise SnowflakeError(
                "EXCLUDED_OBJECT", f"statement references excluded object(s): {', '.join(c.excluded)}"
            )
        if c.classification != "METADATA":
            raise RuntimeError(f"internal statement classified {c.classification}: {c.reasons}")

    def metadata(self, sql: str, scopes: frozenset[str] | set[str] = frozenset()) -> list[Row]:
        self._guarded(sql, scopes)
        try:
            return self.runner.sql(sql)
        except CliFailure as exc:
            raise SnowflakeError(exc.code, safe_message(exc, sql)) from None

    def metadata_batch(self, statements: Sequence[str]) -> list[list[Row]]:
        for sql in statements:
            self._guarded(sql)
        try:
            return self.runner.sql_batch(statements)
        except CliFailure as exc:
            raise SnowflakeError(exc.code, safe_message(exc, ";\n".join(statements))) from None

    # -- discovery --------------------------------------------------------------------------------
    def list_objects(
        self, kind_name: str, database: str | None, schema: str | None, like: str | None
    ) -> dict[str, Any]:
        k = kind(kind_name)
        if excluded_kind(k.guard_kind, self.policy):
            raise SnowflakeError("EXCLUDED_OBJECT", f"objects of type {k.name} are excluded")
        db, sch = ident(database), ident(schema)
        if like is not None and (len(like) > 255 or any(ord(c) < 32 for c in like)):
            raise SnowflakeError("invalid_argument", "like must be at most 255 printable characters")
        if k.level == "account":
            db = sch = None
        if sch and not db:
            db = self.runner.database
        if db and (pattern := container_excluded(self.policy, db)):
            raise SnowflakeError("EXCLUDED_OBJECT", f"database {db} matches exclusion pattern '{pattern}'")
        if sch and (pattern := container_excluded(self.policy, db, sch)):
            raise SnowflakeError("EXCLUDED_OBJECT", f"schema {sch} matches exclusion pattern '{pattern}'")
        scopes = {p for p in (db, f"{db}.{sch}" if db and sch else None) if p}
        if k.cli:
            try:
                rows = self.runner.object_list(k, database=db, schema=sch, like=like)
            except CliFailure as exc:
                raise SnowflakeError(exc.code, safe_message(exc, "")) from None
        else:
            sql = f"SHOW {k.plural}"
            if like:
                sql += f" LIKE {sql_literal(like)}"
            if sch:
                sql += (
                    f" IN SCHEMA {quote_ident(db)}.{quote_ident(sch)}"
                    if db
                    else f" IN SCHEMA {quote_ident(sch)}"
                )
            elif db:
                sql += f" IN DATABASE {quote_ident(db)}"
            rows = self.metadata(sql, scopes=scopes)
        if k.name == "function":
            rows = [r for r in rows if str(r.get("is_builtin", "N")).upper() != "Y"]
        kept, truncated = filter_rows(rows, self.policy, listing_kind=k.sql, limit=self.max_rows)
        return {"objectType": k.name, "objects": kept, "count": len(kept), "truncated": truncated}

    def describe_object(
        self, kind_name: str, object_name: str, database: str | None, schema: str | None
    ) -> dict[str, Any]:
        obj = self.name(object_name, kind_name, database, schema)
        if obj.kind.cli:
            try:
                rows = self.runner.object_describe(obj)
            except CliFailure as exc:
                raise SnowflakeError(exc.code, safe_message(exc, obj.fqn)) from None
        elif obj.kind.name == "tag":
            scope = ".".join(quote_ident(p) for p in (obj.database, obj.schema) if p)
            rows = self.metadata(
                f"SHOW TAGS LIKE {sql_literal(obj.name)}" + (f" IN SCHEMA {scope}" if scope else "")
            )
            if not rows:
                raise SnowflakeError(
                    "OBJECT_NOT_FOUND", f"tag {obj.display} does not exist or is not visible"
                )
        else:
            rows = self.metadata(f"DESCRIBE {obj.kind.sql} {obj.fqn}")
        return {"object": _describe(obj), "metadata": [mask_personal(r) for r in rows[: self.max_rows]]}

    def get_ddl(
        self, kind_name: str, object_name: str, database: str | None, schema: str | None
    ) -> dict[str, Any]:
        obj = self.name(object_name, kind_name, database, schema)
        if not obj.kind.ddl:
            raise SnowflakeError(
                "invalid_argument", f"GET_DDL does not cover {obj.kind.name}; use describe_object"
            )
        failure: SnowflakeError | None = None
        if not self.ddl_unavailable:
            ddl_kind = "VIEW" if obj.kind.name == "materialized_view" else obj.kind.guard_kind
            sql = f"SELECT GET_DDL({sql_literal(ddl_kind)}, {sql_literal(obj.fqn)}, TRUE) AS DDL"
            try:
                rows = self.metadata(sql)
                if rows and rows[0].get("DDL"):
                    return {**_describe(obj), "ddl": str(rows[0]["DDL"]), "source": "get_ddl"}
            except SnowflakeError as exc:
                if exc.code == "EXCLUDED_OBJECT" and obj.kind.name in ("database", "schema"):
                    # GET_DDL of a container includes every object in it, and some of those are excluded.
                    text = self.reconstruct(obj)
                    return {
                        **_describe(obj),
                        "ddl": text,
                        "source": "information_schema",
                        "note": CONTAINER_NOTE,
                    }
                if exc.code in _FATAL or exc.code == "EXCLUDED_OBJECT":
                    raise
                failure = exc
        text = self.reconstruct(obj, failure)
        if failure is not None:
            self.ddl_unavailable = True
        return {**_describe(obj), "ddl": text, "source": "information_schema", "note": DDL_FALLBACK_NOTE}

    def reconstruct(self, obj: ObjectName, failure: SnowflakeError | None = None) -> str:
        if not obj.database:
            raise SnowflakeError(
                "invalid_argument", "qualify the name with its database (no default database)"
            )
        db, sch, name = obj.database, obj.schema, obj.name
        info = f"{quote_ident(db)}.INFORMATION_SCHEMA"
        where = f"TABLE_SCHEMA = {sql_literal(sch or '')} AND TABLE_NAME = {sql_literal(name)}"
        missing = SnowflakeError(
            "OBJECT_NOT_FOUND", f"{obj.kind.name} {obj.display} does not exist or is not visible"
        )
        k = obj.kind.name
        if k == "database":
            rows = self.metadata(f"SELECT * FROM {info}.DATABASES WHERE DATABASE_NAME = {sql_literal(name)}")
            if not rows:
                raise missing
            return ddl_lib.database_ddl(name, rows[0])
        if k == "schema":
            rows = self.metadata(f"SELECT * FROM {info}.SCHEMATA WHERE SCHEMA_NAME = {sql_literal(name)}")
            if not rows:
                raise missing
            return ddl_lib.schema_ddl(db, name, rows[0])
        if k == "table":
            tables, columns = self.metadata_batch(
                [f"SELECT * FROM {info}.TABLES WHERE {where}", f"SELECT * FROM {info}.COLUMNS WHERE {where}"]
            )
            if not tables or not columns:
                raise missing
            return ddl_lib.table_ddl(db, sch or "", name, columns, tables[0])
        if k in ("view", "materialized_view"):
            rows = self.metadata(f"SELECT * FROM {info}.VIEWS WHERE {where}")
            if not rows:
                raise missing
            return ddl_lib.view_ddl(
                db,
                sch or "",
                name,
                str(rows[0].get("VIEW_DEFINITION") or ""),
                materialized=k == "materialized_view",
            )
        if k in ("function", "procedure"):
            label = k.upper()
            rows = self.metadata(
                f"SELECT * FROM {info}.{label}S WHERE {label}_SCHEMA = {sql_literal(sch or '')} "
                f"AND {label}_NAME = {sql_literal(name)}"
            )
            if obj.arguments is not None:
                wanted = f"{name}({', '.join(obj.arguments)})"
                rows = [r for r in rows if ddl_lib.routine_signature(r, label) == wanted]
            if not rows:
                raise missing
            return ddl_lib.routine_ddl(label, db, sch or "", rows[0])
        raise failure or missing

    # -- lineage ----------------------------------------------------------------------------------
    def edges(self, databases: Sequence[str]) -> tuple[list[Edge], dict[str, str], str, str | None]:
        """All dependency edges touching ``databases``: (edges, node kinds, source, note)."""
        dbs = [d for d in dict.fromkeys(databases) if d]
        if not self.dependencies_unavailable:
            in_list = ", ".join(sql_literal(d) for d in dbs)
            sql = (
                "SELECT REFERENCED_DATABASE, REFERENCED_SCHEMA, REFERENCED_OBJECT_NAME, REFERENCED_OBJECT_DOMAIN, "
                "REFERENCING_DATABASE, REFERENCING_SCHEMA, REFERENCING_OBJECT_NAME, REFERENCING_OBJECT_DOMAIN "
                "FROM SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES"
                + (
                    f" WHERE REFERENCED_DATABASE IN ({in_list}) OR REFERENCING_DATABASE IN ({in_list})"
                    if dbs
                    else ""
                )
            )
            try:
                edges, kinds = edges_from_object_dependencies(self.metadata(sql))
                return edges, kinds, "object_dependencies", None
            except SnowflakeError as exc:
                if exc.code in _FATAL:
                    raise
                self.dependencies_unavailable = True
        rows = self.view_rows(dbs)
        edges, unparsed = edges_from_views(rows)
        kinds = {
            ddl_lib.fqn(r.get("TABLE_CATALOG"), r.get("TABLE_SCHEMA"), r.get("TABLE_NAME")): "VIEW"
            for r in rows
        }
        note = LINEAGE_FALLBACK_NOTE + (f"; {unparsed} definition(s) could not be parsed" if unparsed else "")
        return edges, kinds, "view_definitions", note

    def view_rows(self, databases: Sequence[str]) -> list[Row]:
        statements = [
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM "
            f"{quote_ident(d)}.INFORMATION_SCHEMA.VIEWS WHERE TABLE_SCHEMA <> 'INFORMATION_SCHEMA'"
            for d in databases
        ]
        if not statements:
            return []
        return [r for result in self.metadata_batch(statements) for r in result]

    def _visible(self, name: str) -> bool:
        return self.excluded(name) is None

    def get_lineage(
        self,
        object_name: str,
        kind_name: str,
        database: str | None,
        schema: str | None,
        direction: str,
        depth: int | None,
    ) -> dict[str, Any]:
        obj = self.name(object_name, kind_name, database, schema)
        edges, kinds, source, note = self.edges([obj.database or ""])
        edges = [(a, b) for a, b in edges if self._visible(a) and self._visible(b)]
        walk = Graph.of(edges).walk(obj.display, direction, depth, self.max_nodes)
        for node in walk["nodes"]:
            node["type"] = kinds.get(node["name"]) or "TABLE"
        notes = [n for n in (note, EXCLUSION_NOTE) if n]
        lineage = [_dependency_row(e["from"], e["to"], kinds) for e in walk["edges"]]
        return {
            **_describe(obj),
            "direction": direction,
            "depth": depth,
            **walk,
            "lineage": lineage,
            "source": source,
            "note": "; ".join(notes),
        }

    def get_dependencies(
        self, object_name: str, kind_name: str, database: str | None, schema: str | None
    ) -> dict[str, Any]:
        obj = self.name(object_name, kind_name, database, schema)
        note: str | None = None
        refs: list[str]
        source = "object_dependencies"
        if obj.kind.name in ("view", "materialized_view"):
            edges, kinds, source, note = self.edges([obj.database or ""])
            refs = sorted({a for a, b in edges if b == obj.display})
        else:
            kinds = {}
            refs, note = self._routine_references(obj)
            source = "routine_definition"
        deps = [
            {
                "name": r,
                "type": kinds.get(r) or "TABLE",
                "REFERENCE_OBJECT_NAME": r,
                "REFERENCE_OBJECT_TYPE": kinds.get(r) or "TABLE",
            }
            for r in refs
            if self._visible(r)
        ]
        notes = [n for n in (note, EXCLUSION_NOTE) if n]
        return {**_describe(obj), "dependencies": deps, "source": source, "note": "; ".join(notes)}

    def _routine_references(self, obj: ObjectName) -> tuple[list[str], str | None]:
        try:
            text = self.reconstruct(obj)
        except SnowflakeError as exc:
            if exc.code in _FATAL or exc.code == "OBJECT_NOT_FOUND":
                raise
            return [], "the routine's definition is unavailable on this connection (INFORMATION_SCHEMA)"
        body = text.split("$$")[1] if text.count("$$") >= 2 else ""
        sql = body if body.strip().lower().startswith(("select", "with")) else f"SELECT ({body})"
        return view_references(sql, obj.database or "", obj.schema or ""), "parsed from the SQL body"


def _dependency_row(referenced: str, referencing: str, kinds: Mapping[str, str]) -> dict[str, Any]:
    """One edge in the row shape of SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES (the spec's `lineage` rows)."""
    row: dict[str, Any] = {}
    for side, name in (("REFERENCED", referenced), ("REFERENCING", referencing)):
        parts = split_name(name)
        db, schema, obj = ([None, None, *parts])[-3:]
        row[f"{side}_DATABASE"] = db
        row[f"{side}_SCHEMA"] = schema
        row[f"{side}_OBJECT_NAME"] = obj
        row[f"{side}_OBJECT_DOMAIN"] = kinds.get(name) or "TABLE"
    row["DEPENDENCY_TYPE"] = "BY_NAME"
    return row


def _describe(obj: ObjectName) -> dict[str, Any]:
    return {
        "objectType": obj.kind.name,
        "objectName": obj.display,
        "database": obj.database,
        "schema": obj.schema,
    }
