"""The SQL of dbt nodes: compiled when some artifact has it, else the raw SQL with Jinja approximated.

Where compiled SQL can come from (first hit wins; `sql_source` in answers says which one was used):
1. `compiled_code` (dbt >= 1.3) / `compiled_sql` (older) of the manifest being queried: present when that
   manifest was written by `dbt compile`, `run`, `build` or `docs generate` (not by `dbt parse`);
2. another manifest that has it, e.g. the last Dagster build's copy (<home>/dbt/last_build/manifest.json),
   used only for nodes whose file checksum is identical (the same source file, so the same compiled SQL);
3. otherwise the raw SQL with `ref()`/`source()` replaced by the bare names and other Jinja removed
   (`raw_rendered`): good enough to find `SELECT *` and most column lineage, and labelled as such.
The file-level lookup under <target>/compiled/ lives in project_files (fs_read_model_sql uses it).
"""

from __future__ import annotations

import re
from typing import Any

SQL_TYPES = ("model", "snapshot", "analysis")
# dbt adapter_type -> sqlglot dialect
_DIALECTS = {
    "duckdb": "duckdb",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "postgres": "postgres",
    "redshift": "redshift",
    "databricks": "databricks",
    "spark": "spark",
    "trino": "trino",
    "athena": "athena",
    "clickhouse": "clickhouse",
    "sqlserver": "tsql",
    "fabric": "tsql",
    "synapse": "tsql",
    "oracle": "oracle",
    "mysql": "mysql",
    "teradata": "teradata",
    "materialize": "postgres",
    "sqlite": "sqlite",
    "starrocks": "starrocks",
    "doris": "doris",
}

_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)
_STATEMENT = re.compile(r"\{%-?.*?-?%\}", re.DOTALL)
_EXPR = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
_STR = r"""\s*['"]([^'"]+)['"]\s*"""
_REF = re.compile(rf"^\s*ref\s*\({_STR}(?:,{_STR})?(?:,[^)]*)?\)\s*$", re.DOTALL)
_SOURCE = re.compile(rf"^\s*source\s*\({_STR},{_STR}\)\s*$", re.DOTALL)
_CONFIG = re.compile(r"^\s*config\s*\(", re.DOTALL)


def dialect_for(adapter_type: str | None) -> str | None:
    return _DIALECTS.get((adapter_type or "").lower())


def sql_index(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per SQL-bearing node: compiled SQL (or None), raw SQL, language and file checksum."""
    out: dict[str, dict[str, Any]] = {}
    for uid, node in (manifest.get("nodes") or {}).items():
        if node.get("resource_type") not in SQL_TYPES:
            continue
        out[uid] = {
            "compiled": node.get("compiled_code") or node.get("compiled_sql") or None,
            "raw": node.get("raw_code") or node.get("raw_sql") or "",
            "language": node.get("language") or "sql",
            "checksum": (node.get("checksum") or {}).get("checksum"),
            "compiled_path": node.get("compiled_path"),  # project-relative, as dbt wrote it
        }
    return out


def supplement(primary: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Compiled SQL from another manifest, for nodes that lack it and whose source file is unchanged."""
    extra: dict[str, str] = {}
    for uid, entry in primary.items():
        if entry["compiled"]:
            continue
        candidate = other.get(uid)
        if (
            candidate
            and candidate["compiled"]
            and candidate["checksum"]
            and candidate["checksum"] == entry["checksum"]
        ):
            extra[uid] = candidate["compiled"]
    return extra


def borrowed_sql(
    primary: dict[str, dict[str, Any]], last_build: dict[str, dict[str, Any]] | None
) -> dict[str, str]:
    """The compiled SQL to borrow from the last build's manifest (nothing when every node is compiled)."""
    if last_build is None or all(entry["compiled"] for entry in primary.values()):
        return {}
    return supplement(primary, last_build)


REF_SCHEMA = "__ref__"  # with qualified=True: ref('x') -> __ref__.x, source('s', 't') -> s.t (two parts each)


def _render_expression(match: re.Match[str], qualified: bool = False) -> str:
    body = match.group(1)
    ref = _REF.match(body)
    if ref:
        name = ref.group(2) or ref.group(1)
        return f"{REF_SCHEMA}.{name}" if qualified else name
    source = _SOURCE.match(body)
    if source:
        return f"{source.group(1)}.{source.group(2)}"
    if _CONFIG.match(body):
        return ""
    if body.strip() == "this":
        return "__this__"
    return "__jinja__"


def render_approx(raw: str, qualified: bool = False) -> str:
    """Raw dbt SQL with Jinja replaced well enough for static analysis (not for execution)."""
    text = _COMMENT.sub("", raw)
    text = _STATEMENT.sub("", text)
    return _EXPR.sub(lambda m: _render_expression(m, qualified), text)


def node_sql(
    entry: dict[str, Any] | None, extra: dict[str, str] | None, uid: str, qualified: bool = False
) -> tuple[str | None, str]:
    """(sql, sql_source) for one node: compiled from the manifest, compiled from another build, or raw."""
    if entry is None:
        return None, "missing"
    if entry["compiled"]:
        return entry["compiled"], "compiled"
    if extra and uid in extra:
        return extra[uid], "compiled_last_build"
    if entry["language"] != "sql" or not entry["raw"]:
        return None, "missing"
    return render_approx(entry["raw"], qualified), "raw_rendered"
