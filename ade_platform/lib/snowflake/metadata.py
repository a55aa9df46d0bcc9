"""Post-processing of metadata results: hide excluded objects' rows, mask people's details, cap size.

SHOW and INFORMATION_SCHEMA results name objects in column groups: ``database_name``/``schema_name``/
``name`` (SHOW), ``TABLE_CATALOG``/``TABLE_SCHEMA``/``TABLE_NAME``, ``REFERENCED_DATABASE``/
``REFERENCED_SCHEMA``/``REFERENCED_OBJECT_NAME`` ... A row is dropped when any group names an object the
policy excludes, or an object of an excluded kind. Unknown parts count as matching (the guard's rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ade_platform.lib.guard.policy import GuardPolicy, excluded_kind, matches_exclusion
from ade_platform.lib.snowflake.objects import guard_name

Row = dict[str, Any]

# Columns of SHOW USERS / DESCRIBE USER and similar that describe people rather than objects.
PERSONAL_FIELDS = frozenset(
    {"EMAIL", "FIRST_NAME", "LAST_NAME", "MIDDLE_NAME", "DISPLAY_NAME", "LOGIN_NAME", "PHONE_NUMBER"}
)
_MASK = "***"
# Column-name groups that never name an object (column names, grantees are handled as account names).
_NON_OBJECT_PREFIXES = frozenset({"COLUMN", "DATA_TYPE", "CHARACTER_SET", "COLLATION", "DOMAIN", "UDT"})
_ROLE = {"db": 0, "schema": 1, "obj": 2}
_NUMERIC = re.compile(r"-?\d+(\.\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?")


def _role(key: str) -> tuple[str, str] | None:
    """Column name -> (group prefix, role) for the columns that name objects."""
    k = key.upper()
    exact = {
        "DATABASE_NAME": ("", "db"),
        "CATALOG_NAME": ("", "db"),
        "DATABASE": ("", "db"),
        "SCHEMA_NAME": ("", "schema"),
        "SCHEMA": ("", "schema"),
        "NAME": ("", "obj"),
    }
    if k in exact:
        return exact[k]
    for suffix, role in (
        ("_DATABASE_NAME", "db"),
        ("_CATALOG", "db"),
        ("_DATABASE", "db"),
        ("_SCHEMA_NAME", "schema"),
        ("_SCHEMA", "schema"),
        ("_OBJECT_NAME", "obj"),
        ("_NAME", "obj"),
    ):
        if k.endswith(suffix) and len(k) > len(suffix):
            return k[: -len(suffix)], role
    return None


def _groups(row: Row) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for key, value in row.items():
        role = _role(str(key))
        if role is None or not isinstance(value, str) or not value:
            continue
        prefix, part = role
        groups.setdefault(prefix, [None, None, None])[_ROLE[part]] = value
    return groups


def _row_kind(row: Row, listing_kind: str | None) -> str | None:
    for key in ("kind", "KIND", "TABLE_TYPE", "OBJECT_TYPE"):
        value = row.get(key)
        if isinstance(value, str) and value:
            value = value.upper()
            return "TABLE" if value in ("BASE TABLE", "TEMPORARY TABLE", "LOCAL TEMPORARY") else value
    return listing_kind


def row_is_excluded(row: Row, policy: GuardPolicy, listing_kind: str | None = None) -> bool:
    if not policy.has_exclusions:
        return False
    row_kind = _row_kind(row, listing_kind)
    if row_kind and excluded_kind(row_kind.replace(" ", "_"), policy):
        return True
    for prefix, (db, schema, obj) in _groups(row).items():
        if prefix in _NON_OBJECT_PREFIXES:
            continue
        if prefix and db is None and schema is None:
            # A lone name (GRANTEE_NAME, OWNER_NAME ...): an account-level name; single-part patterns only.
            if obj and matches_exclusion(guard_name([obj]), policy, kind="ROLE"):
                return True
            continue
        kind = (row_kind if prefix == "" else None) or "TABLE"
        if _names_excluded(db, schema, obj, kind, policy):
            return True
    return False


def _names_excluded(
    db: str | None, schema: str | None, obj: str | None, kind: str, policy: GuardPolicy
) -> bool:
    kind = kind.replace(" ", "_")
    if obj and "." in obj:
        # SHOW GRANTS names objects by their fully qualified name.
        return matches_exclusion(obj, policy, kind=kind if kind != "DATABASE" else "TABLE") is not None
    if kind == "DATABASE" or (obj is None and schema is None):
        name = obj or db
        return bool(name) and container_excluded(policy, name) is not None
    if kind == "SCHEMA" or obj is None:
        name = obj if kind == "SCHEMA" and obj else schema
        return bool(name) and container_excluded(policy, db or policy.default_database, name) is not None
    if db and schema:
        parts = [db, schema, obj]
    elif schema:
        parts = [schema, obj]  # the database is unknown: the policy default (or "any") stands in
    else:
        parts = [obj]
    return matches_exclusion(guard_name(parts), policy, kind=kind) is not None


# Object names no pattern is written for: a pattern matching both is indifferent to that part.
_PROBES = ("\u0001ADE_PROBE_A", "\u0002ADE_PROBE_B")


def container_excluded(policy: GuardPolicy, database: str | None, schema: str | None = None) -> str | None:
    """The pattern that excludes a whole database (or schema): it matches whatever is inside.

    The guard treats a container's unknown contents as matching (right for a statement that reads them);
    a listing whose rows are filtered one by one only needs to refuse containers that are excluded as a
    whole, e.g. ``PROD_*`` for database PROD_SALES, but not ``*.PROD_HR.*`` for the database around PROD_HR.
    """
    if not database and not schema:
        return None
    found = None
    for probe in _PROBES:
        parts = [database, schema or probe, probe] if database else [schema or "", probe]
        pattern = matches_exclusion(guard_name([p for p in parts if p]), policy, kind="TABLE")
        if pattern is None:
            return None
        found = pattern
    return found


def mask_personal(row: Row) -> Row:
    """SHOW USERS / DESCRIBE USER rows without people's names, logins and e-mail addresses."""
    out = {}
    prop = row.get("property") or row.get("PROPERTY")
    personal_row = isinstance(prop, str) and prop.upper() in PERSONAL_FIELDS
    for key, value in row.items():
        k = str(key).upper()
        if value is not None and (k in PERSONAL_FIELDS or (personal_row and k in ("VALUE", "DEFAULT"))):
            out[key] = _MASK
        else:
            out[key] = value
    return out


def filter_rows(
    rows: Iterable[Row], policy: GuardPolicy, *, listing_kind: str | None = None, limit: int | None = None
) -> tuple[list[Row], bool]:
    """Rows without excluded objects and personal fields, capped at ``limit``; (rows, truncated)."""
    kept: list[Row] = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        if row_is_excluded(row, policy, listing_kind):
            continue
        if limit is not None and len(kept) >= limit:
            return kept, True
        kept.append(mask_personal(row))
    return kept, False


def listing_kind_of(sql: str) -> str | None:
    """SHOW TERSE MATERIALIZED VIEWS ... -> MATERIALIZED VIEW (the kind each row of a SHOW names)."""
    words = sql.strip().split()
    if not words or words[0].upper() != "SHOW":
        return None
    kept = []
    for word in words[1:]:
        w = word.upper()
        if w in {"IN", "ON", "TO", "OF", "LIKE", "STARTS", "LIMIT", "FROM", "HISTORY"}:
            break
        if w != "TERSE":
            kept.append(w)
    if not kept:
        return None
    text = " ".join(kept)
    if text in ("USER FUNCTIONS", "EXTERNAL FUNCTIONS"):
        return "FUNCTION"
    if text.endswith("IES"):
        return text[:-3] + "Y"
    return text[:-1] if text.endswith("S") else text


def value_type(values: Iterable[Any]) -> str:
    """A type label inferred from the JSON values the CLI printed (the CLI does not print column types):
    NUMBER, FLOAT, BOOLEAN, DATE, TIMESTAMP, VARCHAR; VARIANT for objects/arrays or mixed kinds."""
    seen: set[str] = set()
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool):
            seen.add("BOOLEAN")
        elif isinstance(value, int):
            seen.add("NUMBER")
        elif isinstance(value, float):
            seen.add("FLOAT")
        elif isinstance(value, (dict, list)):
            seen.add("VARIANT")
        elif _NUMERIC.fullmatch(str(value)):
            seen.add("NUMBER")  # the CLI prints NUMBER(p,s) with a scale as a string
        elif _TIMESTAMP.fullmatch(str(value)):
            seen.add("TIMESTAMP")
        elif _DATE.fullmatch(str(value)):
            seen.add("DATE")
        else:
            seen.add("VARCHAR")
    if not seen:
        return "UNKNOWN"
    if seen == {"NUMBER", "FLOAT"}:
        return "FLOAT"
    return seen.pop() if len(seen) == 1 else "VARIANT"


__all__ = [
    "container_excluded",
    "filter_rows",
    "listing_kind_of",
    "mask_personal",
    "row_is_excluded",
    "value_type",
]
