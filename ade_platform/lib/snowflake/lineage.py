"""Object dependencies: edges from OBJECT_DEPENDENCIES rows or from view definitions (sqlglot), and traversal.

An edge ``(referenced, referencing)`` means the second object reads the first (upstream -> downstream).
Names are DB.SCHEMA.NAME as Snowflake stores them (upper-case unless created quoted).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from ade_platform.lib.snowflake.ddl import fqn

Edge = tuple[str, str]


def _ident(node: exp.Expression | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.upper()
    return str(node.name).upper() or None


def view_references(definition: str, database: str, schema: str) -> list[str]:
    """Tables and views a view definition reads, qualified with the view's own database and schema."""
    try:
        tree = sqlglot.parse_one(str(definition), read="snowflake")
    except Exception:  # an unparseable definition contributes no edges; the caller says so
        return []
    if isinstance(tree, exp.Create) and tree.expression is not None:
        tree = tree.expression
    ctes = {c.alias_or_name.upper() for c in tree.find_all(exp.CTE)}
    found: dict[str, None] = {}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # table functions, stages, IDENTIFIER(...)
        name = _ident(table.this)
        db, sch = _ident(table.args.get("catalog")), _ident(table.args.get("db"))
        if not name or (db is None and sch is None and name.upper() in ctes):
            continue
        found[fqn(db or database, sch or schema, name)] = None
    return list(found)


def edges_from_views(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Edge], int]:
    """Edges from INFORMATION_SCHEMA.VIEWS rows; also the number of definitions that could not be parsed."""
    edges: list[Edge] = []
    unparsed = 0
    for row in rows:
        db, sch, name = row.get("TABLE_CATALOG"), row.get("TABLE_SCHEMA"), row.get("TABLE_NAME")
        definition = row.get("VIEW_DEFINITION")
        if not (db and sch and name and definition):
            continue
        refs = view_references(str(definition), str(db), str(sch))
        if not refs:
            unparsed += 1
        view = fqn(str(db), str(sch), str(name))
        edges.extend((ref, view) for ref in refs if ref != view)
    return edges, unparsed


def edges_from_object_dependencies(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Edge], dict[str, str]]:
    """Edges and node kinds from SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES rows."""
    edges: list[Edge] = []
    kinds: dict[str, str] = {}
    for row in rows:
        src = fqn(
            row.get("REFERENCED_DATABASE"), row.get("REFERENCED_SCHEMA"), row.get("REFERENCED_OBJECT_NAME")
        )
        dst = fqn(
            row.get("REFERENCING_DATABASE"), row.get("REFERENCING_SCHEMA"), row.get("REFERENCING_OBJECT_NAME")
        )
        if src and dst:
            edges.append((src, dst))
            kinds[src] = str(row.get("REFERENCED_OBJECT_DOMAIN") or "").upper()
            kinds[dst] = str(row.get("REFERENCING_OBJECT_DOMAIN") or "").upper()
    return edges, kinds


@dataclass
class Graph:
    upstream: dict[str, set[str]] = field(default_factory=dict)  # node -> what it reads
    downstream: dict[str, set[str]] = field(default_factory=dict)  # node -> what reads it

    @classmethod
    def of(cls, edges: Iterable[Edge]) -> Graph:
        graph = cls()
        for src, dst in edges:
            graph.upstream.setdefault(dst, set()).add(src)
            graph.downstream.setdefault(src, set()).add(dst)
        return graph

    def walk(self, root: str, direction: str, depth: int | None, max_nodes: int) -> dict[str, Any]:
        """Breadth-first from ``root``: nodes with their hop distance and side, and the edges crossed."""
        nodes: dict[str, dict[str, Any]] = {}
        edges: set[Edge] = set()
        truncated = False
        sides = ["upstream", "downstream"] if direction == "both" else [direction]
        for side in sides:
            links = self.upstream if side == "upstream" else self.downstream
            queue = deque([(root, 0)])
            seen = {root}
            while queue:
                node, dist = queue.popleft()
                if depth is not None and dist >= depth:
                    continue
                for nxt in sorted(links.get(node, ())):
                    edges.add((nxt, node) if side == "upstream" else (node, nxt))
                    if nxt in seen:
                        continue
                    seen.add(nxt)
                    if len(nodes) >= max_nodes:
                        truncated = True
                        continue
                    nodes.setdefault(nxt, {"name": nxt, "direction": side, "distance": dist + 1})
                    queue.append((nxt, dist + 1))
        kept = set(nodes) | {root}
        return {
            "nodes": sorted(nodes.values(), key=lambda n: (n["distance"], n["name"])),
            "edges": [{"from": a, "to": b} for a, b in sorted(edges) if a in kept and b in kept],
            "truncated": truncated,
        }


def dependency_map(edges: Iterable[Edge]) -> dict[str, list[str]]:
    """name -> names it reads: the shape the guard's ``dependencies`` argument takes."""
    out: dict[str, list[str]] = {}
    for src, dst in edges:
        out.setdefault(dst, [])
        if src not in out[dst]:
            out[dst].append(src)
    return out
