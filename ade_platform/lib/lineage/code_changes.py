"""What changed in the dbt project's code between two builds, node by node: the manifests the store keeps of
every build (ADE's and the team's, published from the target folder) reduced to each node's code, and compared.

Per node: its raw and compiled SQL, the columns its SQL outputs (the outermost select's names, and the type of a
column that is a plain cast), the columns it declares (name and data_type, a source's included), the config that
changes what it builds (materialization, incremental strategy and predicates, unique key, a seed's column types,
a test's `where`), and the files it is written in (to ask git who changed them). The comparison says what a change
took away (a column renamed or dropped), what it retyped, and what else moved, so a failure downstream that names a
column can be tied to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# config keys whose change alters what a node builds (the rest, tags, docs, meta..., do not)
CONFIG_KEYS = (
    "materialized",
    "incremental_strategy",
    "incremental_predicates",
    "unique_key",
    "on_schema_change",
    "column_types",
    "where",
    "enabled",
)
_JINJA_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_JINJA_BLOCK = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.S)
_MAX_SQL_CHARS = 200_000  # a node's SQL beyond this is compared, not parsed


@dataclass(frozen=True)
class NodeCode:
    """One node's code in one manifest."""

    uid: str
    name: str
    resource_type: str
    raw: str
    compiled: str | None
    declared: dict[str, str | None]  # column -> declared data_type (lower-cased names)
    config: dict[str, Any]
    files: tuple[str, ...]


@dataclass
class NodeChange:
    """How a node's code differs between a baseline build and now."""

    uid: str
    name: str
    resource_type: str
    files: tuple[str, ...]
    sql_changed: bool = False
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (from, to)
    dropped: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    retyped: list[tuple[str, str | None, str | None]] = field(default_factory=list)  # (column, from, to)
    config: list[tuple[str, Any, Any]] = field(default_factory=list)  # (key, from, to)

    @property
    def taken(self) -> set[str]:
        """Columns this change took away from what the node outputs or declares."""
        return {old for old, _ in self.renamed} | set(self.dropped)

    @property
    def breaking(self) -> bool:
        """Whether it changes the node's contract with what reads it (names, types, what is built)."""
        return bool(self.renamed or self.dropped or self.retyped or self.config)

    def describe(self) -> str:
        """The change in words, most telling first: "`status` renamed to `order_status`"."""
        parts = [f"`{a}` renamed to `{b}`" for a, b in self.renamed]
        parts += [f"`{c}` dropped" for c in self.dropped]
        parts += [f"`{c}` retyped from {a or '?'} to {b or '?'}" for c, a, b in self.retyped]
        parts += [f"config `{k}` changed from {_short(a)} to {_short(b)}" for k, a, b in self.config]
        if not parts and self.added:
            parts.append("added " + ", ".join(f"`{c}`" for c in self.added[:3]))
        if not parts and self.sql_changed:
            parts.append("SQL edited (the columns it outputs kept their names)")
        return "; ".join(parts[:3]) + ("; …" if len(parts) > 3 else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "sql_changed": self.sql_changed,
            "renamed": [{"from": a, "to": b} for a, b in self.renamed],
            "dropped": self.dropped,
            "added": self.added[:20],
            "retyped": [{"column": c, "from": a, "to": b} for c, a, b in self.retyped],
            "config": [{"key": k, "from": a, "to": b} for k, a, b in self.config],
            "files": list(self.files),
        }


def _short(value: Any) -> str:
    text = "unset" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _file(path: Any) -> str | None:
    if not path:
        return None
    text = str(path)
    return text.split("://", 1)[1] if "://" in text else text


def node_codes(manifest: Any) -> dict[str, NodeCode]:
    """The code of every model, seed, snapshot, test and source of one manifest."""
    out: dict[str, NodeCode] = {}
    data = manifest or {}
    for section in ("nodes", "sources"):
        for uid, node in (data.get(section) or {}).items():
            if not isinstance(node, dict):
                continue
            config = node.get("config") or {}
            declared = {
                str(name).lower(): (str(c.get("data_type")).lower() if c.get("data_type") else None)
                for name, c in (node.get("columns") or {}).items()
                if isinstance(c, dict)
            }
            files = tuple(
                f for f in (_file(node.get("original_file_path")), _file(node.get("patch_path"))) if f
            )
            out[str(uid)] = NodeCode(
                uid=str(uid),
                name=str(node.get("name") or uid),
                resource_type=str(node.get("resource_type") or section.rstrip("s")),
                raw=str(node.get("raw_code") or node.get("raw_sql") or ""),
                compiled=node.get("compiled_code") or node.get("compiled_sql"),
                declared=declared,
                config={k: config.get(k) for k in CONFIG_KEYS if config.get(k) not in (None, [], {})},
                files=tuple(dict.fromkeys(files)),
            )
    return out


def _plain_sql(code: NodeCode) -> str:
    """SQL sqlglot can read: the compiled code, else the raw code with its Jinja stood in for by a name."""
    if code.compiled:
        return code.compiled
    return _JINJA_BLOCK.sub(" ", _JINJA_EXPR.sub(" ade_jinja ", code.raw))


def output_columns(sql: str, dialect: str | None = None) -> list[tuple[str, str | None]] | None:
    """The (name, cast type or None) of each column the outermost select outputs, in order; None when that is
    not known from the SQL alone (a `*`, or SQL that does not parse)."""
    if not sql.strip() or len(sql) > _MAX_SQL_CHARS:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect or None)
    except Exception:  # any SQL sqlglot cannot read: its columns are unknown, not an error
        return None
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if isinstance(tree, exp.Union):
        select = tree.left if isinstance(tree.left, exp.Select) else tree.find(exp.Select)
    if not isinstance(select, exp.Select):
        return None
    out: list[tuple[str, str | None]] = []
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            return None
        name = projection.alias_or_name
        if not name:
            return None
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        cast = (
            inner.args.get("to").sql(dialect=dialect or None).lower() if isinstance(inner, exp.Cast) else None
        )
        out.append((name.lower(), cast))
    return out


def _columns_diff(change: NodeChange, old: NodeCode, new: NodeCode, dialect: str | None) -> None:
    before = output_columns(_plain_sql(old), dialect)
    after = output_columns(_plain_sql(new), dialect)
    if before is None or after is None:  # the SQL does not say: the declared columns may
        before = [(c, t) for c, t in old.declared.items()] if old.declared and new.declared else []
        after = [(c, t) for c, t in new.declared.items()] if old.declared and new.declared else []
    names_before = [c for c, _ in before]
    names_after = [c for c, _ in after]
    gone = [c for c in names_before if c not in names_after]
    came = [c for c in names_after if c not in names_before]
    # a column gone where a new one stands in its place (same position) is a rename
    for col in list(gone):
        i = names_before.index(col)
        if i < len(names_after) and names_after[i] in came:
            change.renamed.append((col, names_after[i]))
            came.remove(names_after[i])
            gone.remove(col)
    if len(gone) == 1 and len(came) == 1 and len(names_before) == len(names_after):
        change.renamed.append((gone.pop(), came.pop()))
    change.dropped += gone
    change.added += came
    types_before, types_after = dict(before), dict(after)
    for col, typ in types_after.items():
        if col in types_before and typ and types_before[col] and typ != types_before[col]:
            change.retyped.append((col, types_before[col], typ))


def diff_node(old: NodeCode, new: NodeCode, dialect: str | None = None) -> NodeChange | None:
    """How `new` differs from `old` (None when it does not)."""
    change = NodeChange(new.uid, new.name, new.resource_type, new.files or old.files)
    change.sql_changed = _normal(old.raw) != _normal(new.raw) or (
        old.compiled is not None
        and new.compiled is not None
        and _normal(old.compiled) != _normal(new.compiled)
    )
    if change.sql_changed:
        _columns_diff(change, old, new, dialect)
    for col, typ in new.declared.items():
        was = old.declared.get(col)
        if (
            col in old.declared
            and was != typ
            and (was or typ)
            and not any(c == col for c, _, _ in change.retyped)
        ):
            change.retyped.append((col, was, typ))
    old_types = {str(k).lower(): v for k, v in (old.config.get("column_types") or {}).items()}
    new_types = {str(k).lower(): v for k, v in (new.config.get("column_types") or {}).items()}
    for col in sorted(set(old_types) | set(new_types)):
        if old_types.get(col) != new_types.get(col):
            change.retyped.append((col, old_types.get(col), new_types.get(col)))
    for key in CONFIG_KEYS:
        if key != "column_types" and old.config.get(key) != new.config.get(key):
            change.config.append((key, old.config.get(key), new.config.get(key)))
    if not (change.sql_changed or change.retyped or change.config):
        return None
    return change


def _normal(sql: str) -> str:
    """SQL with its layout and comments taken out: a reformat is not a change."""
    text = re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql or "", flags=re.S)
    return re.sub(r"\s+", " ", text).strip().lower()


def diff_nodes(
    old: dict[str, NodeCode], new: dict[str, NodeCode], uids: list[str], dialect: str | None = None
) -> list[NodeChange]:
    """The changes of the nodes `uids` between two manifests' codes (a node new since the baseline is no change
    here: what reads it changed too, and says so)."""
    out = []
    for uid in uids:
        if uid in old and uid in new:
            change = diff_node(old[uid], new[uid], dialect)
            if change is not None:
                out.append(change)
    return out
