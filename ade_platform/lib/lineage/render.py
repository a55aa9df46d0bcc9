"""A Mermaid rendering of a chain, for the Dagster UI (asset metadata renders Markdown with Mermaid blocks)."""

from __future__ import annotations

import re
from typing import Any

_SHAPES = {
    "dashboard": ('[/"', '"/]'),
    "tile": ('["', '"]'),
    "table": ('[("', '")]'),
    "view": ('[("', '")]'),
    "source": ('(["', '"])'),
    "job": ('{{"', '"}}'),
    "dag": ('{{"', '"}}'),
    "deployment": ('{{"', '"}}'),
}
_CLASS = {"failed": "failed", "stale": "stale", "drifted": "failed", "warn": "warn"}


def _safe_id(node_id: str, ids: dict[str, str]) -> str:
    if node_id not in ids:
        ids[node_id] = f"n{len(ids)}_" + re.sub(r"[^A-Za-z0-9_]", "_", node_id)[-40:]
    return ids[node_id]


def _label(node: dict[str, Any]) -> str:
    text = f"{node.get('system')} {node.get('kind')}: {node.get('name') or node['id']}"
    return text.replace('"', "'")


def mermaid(
    nodes: list[dict[str, Any]], edges: list[dict[str, Any]], status: dict[str, str] | None = None
) -> str:
    """`graph LR` of the given nodes and edges; failed/stale/warn hops are coloured."""
    ids: dict[str, str] = {}
    lines = ["graph LR"]
    for node in nodes:
        left, right = _SHAPES.get(node.get("kind") or "", ('["', '"]'))
        lines.append(f"  {_safe_id(node['id'], ids)}{left}{_label(node)}{right}")
    for e in edges:
        arrow = "-.->" if e.get("kind") == "builds" else "-->"
        lines.append(f"  {_safe_id(e['from'], ids)} {arrow}|{e.get('how')}| {_safe_id(e['to'], ids)}")
    lines += [
        "  classDef failed fill:#fdd,stroke:#c00",
        "  classDef stale fill:#ffe8cc,stroke:#d80",
        "  classDef warn fill:#ffc,stroke:#aa0",
    ]
    for node_id, st in (status or {}).items():
        if node_id in ids and st in _CLASS:
            lines.append(f"  class {ids[node_id]} {_CLASS[st]}")
    return "\n".join(lines)
