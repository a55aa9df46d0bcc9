"""Object types (the spec's list, no Cortex) and object names: parsing, quoting, qualifying."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ade_platform.lib.snowflake.errors import SnowflakeError


@dataclass(frozen=True)
class ObjectKind:
    name: str  # spec spelling: materialized_view
    level: str  # account | database | schema
    sql: str  # SHOW/DESCRIBE/GET_DDL spelling: MATERIALIZED VIEW
    plural: str  # SHOW ... MATERIALIZED VIEWS
    cli: str | None  # `snow object list|describe` type, None when the CLI does not know it
    ddl: bool = False  # GET_DDL accepts it
    folder: str | None = None  # sync folder under src/{DB}/{SCHEMA}/

    @property
    def guard_kind(self) -> str:
        return self.sql.replace(" ", "_")


_KINDS = [
    ObjectKind("database", "account", "DATABASE", "DATABASES", "database", True),
    ObjectKind("schema", "database", "SCHEMA", "SCHEMAS", "schema", True),
    ObjectKind("table", "schema", "TABLE", "TABLES", "table", True, "tables"),
    ObjectKind("view", "schema", "VIEW", "VIEWS", "view", True, "views"),
    ObjectKind("materialized_view", "schema", "MATERIALIZED VIEW", "MATERIALIZED VIEWS", None, True, "views"),
    ObjectKind("function", "schema", "FUNCTION", "USER FUNCTIONS", "function", True, "functions"),
    ObjectKind("procedure", "schema", "PROCEDURE", "PROCEDURES", "procedure", True, "procedures"),
    ObjectKind("stage", "schema", "STAGE", "STAGES", "stage", False, "stages"),
    ObjectKind("file_format", "schema", "FILE FORMAT", "FILE FORMATS", None, True, "file_formats"),
    ObjectKind("task", "schema", "TASK", "TASKS", "task", True, "tasks"),
    ObjectKind("stream", "schema", "STREAM", "STREAMS", "stream", True, "streams"),
    ObjectKind("warehouse", "account", "WAREHOUSE", "WAREHOUSES", "warehouse"),
    ObjectKind("compute_pool", "account", "COMPUTE POOL", "COMPUTE POOLS", "compute-pool"),
    ObjectKind("role", "account", "ROLE", "ROLES", "role"),
    ObjectKind("user", "account", "USER", "USERS", "user"),
    ObjectKind("network_rule", "schema", "NETWORK RULE", "NETWORK RULES", "network-rule"),
    ObjectKind("integration", "account", "INTEGRATION", "INTEGRATIONS", "integration"),
    ObjectKind("secret", "schema", "SECRET", "SECRETS", "secret"),
    ObjectKind("tag", "schema", "TAG", "TAGS", None, True),
]
KINDS: dict[str, ObjectKind] = {k.name: k for k in _KINDS}
OBJECT_TYPES: tuple[str, ...] = tuple(KINDS)

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_ARGS = re.compile(r"^(?P<name>[^()]+?)\s*\((?P<args>.*)\)\s*$", re.S)
_ARG_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_ ]{0,40}(\(\s*\d+\s*(,\s*\d+\s*)?\))?")


def kind(name: str) -> ObjectKind:
    key = re.sub(r"[\s\-]+", "_", name.strip().lower())
    if key not in KINDS:
        raise SnowflakeError("invalid_argument", f"unknown object type {name!r}; one of {', '.join(KINDS)}")
    return KINDS[key]


def quote_ident(part: str) -> str:
    """A name part as stored (upper-case unless it was quoted) -> a SQL identifier."""
    return part if _PLAIN.fullmatch(part) and part == part.upper() else '"' + part.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class ObjectName:
    """A resolved object: parts as stored by Snowflake (unquoted names upper-cased)."""

    kind: ObjectKind
    database: str | None
    schema: str | None
    name: str
    arguments: tuple[str, ...] | None = None  # functions/procedures: argument types

    @property
    def parts(self) -> list[str]:
        if self.kind.level == "account":
            return [self.name]
        if self.kind.name == "schema":
            return [p for p in (self.database, self.name) if p]
        return [p for p in (self.database, self.schema, self.name) if p]

    @property
    def fqn(self) -> str:
        """Quoted, qualified SQL name (with the argument list for functions/procedures)."""
        text = ".".join(quote_ident(p) for p in self.parts)
        if self.arguments is not None:
            text += "(" + ", ".join(self.arguments) + ")"
        return text

    @property
    def display(self) -> str:
        """DB.SCHEMA.NAME as used for exclusion checks and answers."""
        return ".".join(quote_ident(p) for p in self.parts)

    @property
    def fully_qualified(self) -> bool:
        return len(self.parts) == {"account": 1, "database": 2, "schema": 3}[self.kind.level]


def _check_part(part: str) -> None:
    if not part or len(part) > 255 or any(ord(c) < 32 for c in part):
        raise SnowflakeError("invalid_argument", "object name parts must be 1-255 printable characters")


def parse_name(
    text: str,
    kind_name: str,
    *,
    database: str | None = None,
    schema: str | None = None,
    default_database: str | None = None,
    default_schema: str | None = None,
) -> ObjectName:
    """``CUSTOMERS`` / ``APP.CUSTOMERS`` / ``"Db"."S"."T"`` / ``F(NUMBER)`` -> ObjectName.

    Missing parts come from the explicit ``database``/``schema`` arguments, then the connection defaults.
    """
    obj_kind = kind(kind_name)
    text = (text or "").strip()
    if not text or len(text) > 1000:
        raise SnowflakeError("invalid_argument", "objectName must be 1-1000 characters")
    arguments: tuple[str, ...] | None = None
    match = _ARGS.match(text)
    if match and obj_kind.name in ("function", "procedure"):
        text = match.group("name")
        raw_args = [a.strip() for a in _split_outside(match.group("args"), ",") if a.strip()]
        if not all(_ARG_TYPE.fullmatch(a) for a in raw_args):
            raise SnowflakeError("invalid_argument", "function arguments must be type names, e.g. F(NUMBER)")
        arguments = tuple(a.upper() for a in raw_args)
    if text.count('"') % 2:
        raise SnowflakeError("invalid_argument", "unbalanced double quotes in objectName")
    parts = _parts(text)
    for part in parts:
        _check_part(part)
    levels = {"account": 1, "database": 2, "schema": 3}[obj_kind.level]
    if not parts or len(parts) > levels:
        raise SnowflakeError("invalid_argument", f"a {obj_kind.name} name has at most {levels} part(s)")
    db_arg = _parts(database)[0] if database else None
    schema_arg = _parts(schema)[0] if schema else None
    name = parts[-1]
    if obj_kind.level == "account":
        return ObjectName(obj_kind, None, None, name)
    if obj_kind.level == "database":
        db = parts[0] if len(parts) == 2 else db_arg or default_database
        return ObjectName(obj_kind, db, None, name)
    if len(parts) == 3:
        return ObjectName(obj_kind, parts[0], parts[1], name, arguments)
    if len(parts) == 2:
        return ObjectName(obj_kind, db_arg or default_database, parts[0], name, arguments)
    return ObjectName(obj_kind, db_arg or default_database, schema_arg or default_schema, name, arguments)


def _split_outside(text: str, separator: str) -> list[str]:
    """Split at `separator` where it stands outside parentheses and double-quoted names ('NUMBER, NUMBER(38,0)'
    at commas, '"a.b".C' at dots)."""
    pieces, buf, depth, quoted = [], [], 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == separator and depth == 0 and not quoted:
            pieces.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    pieces.append("".join(buf))
    return pieces


def _parts(text: str) -> list[str]:
    """split_name keeps quoted parts' case and upper-cases everything; redo it keeping quoted case."""
    out: list[str] = []
    for raw in _split_outside(text, "."):
        raw = raw.strip()
        if len(raw) >= 2 and raw[0] == raw[-1] == '"':
            out.append(raw[1:-1].replace('""', '"'))
        else:
            out.append(raw.upper())
    return [p for p in out if p]


def guard_name(parts: list[str]) -> str:
    """Name text for the guard's exclusion matcher (it upper-cases; quote parts that need it)."""
    return ".".join(quote_ident(p) for p in parts)


__all__ = ["KINDS", "OBJECT_TYPES", "ObjectKind", "ObjectName", "kind", "parse_name"]
