"""Finding nodes by name in the lineage index without scanning it: built once per index version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# When a bare name matches several nodes, prefer these resource types (in order).
_TYPE_PREFERENCE = ("model", "snapshot", "seed", "source", "exposure", "metric", "semantic_model", "analysis")


class UnresolvedNode(Exception):
    """A name did not resolve to exactly one node. `candidates` lists what it could mean."""

    def __init__(self, query: str, candidates: list[str], ambiguous: bool):
        self.query = query
        self.candidates = candidates
        self.ambiguous = ambiguous
        super().__init__(query)


@dataclass
class NodeLookup:
    """Name -> unique_ids maps over the non-test nodes of one lineage index."""

    nodes: dict[str, dict[str, Any]]
    project: str | None
    by_key: dict[str, list[str]] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, index: dict[str, Any]) -> NodeLookup:
        lookup = cls(nodes=index["nodes"], project=index.get("project_name"))
        by_key: dict[str, set[str]] = {}
        for uid, rec in index["nodes"].items():
            if rec.get("resource_type") == "test":
                continue
            keys = {uid, uid.lower()}
            name = rec.get("name")
            if name:
                keys.add(name)
                keys.add(name.lower())
            parts = uid.split(".", 2)
            if len(parts) == 3:
                # "raw.customers" for a source, "orders.v2" for a versioned model
                keys.add(parts[2])
                keys.add(parts[2].lower())
            for key in keys:
                by_key.setdefault(key, set()).add(uid)
            if rec.get("resource_type") == "model":
                lookup.models.append(uid)
        lookup.by_key = {k: sorted(v) for k, v in by_key.items()}
        lookup.names = sorted(
            {
                (rec.get("name") or "").lower()
                for rec in index["nodes"].values()
                if rec.get("resource_type") != "test"
            }
            - {""}
        )
        lookup.models.sort()
        return lookup

    def resolve(self, query: str, resource_types: tuple[str, ...] | None = None) -> str:
        """A unique_id or an unambiguous name; raises UnresolvedNode otherwise."""
        if query in self.nodes and (
            resource_types is None or self.nodes[query].get("resource_type") in resource_types
        ):
            return query
        candidates = self.by_key.get(query) or self.by_key.get(query.lower()) or []
        if resource_types is not None:
            candidates = [c for c in candidates if self.nodes[c].get("resource_type") in resource_types]
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            raise UnresolvedNode(query, self.similar(query), ambiguous=False)
        return self._disambiguate(query, candidates)

    def _disambiguate(self, query: str, candidates: list[str]) -> str:
        def rank(uid: str) -> tuple[int, int]:
            rtype = self.nodes[uid].get("resource_type")
            type_rank = _TYPE_PREFERENCE.index(rtype) if rtype in _TYPE_PREFERENCE else len(_TYPE_PREFERENCE)
            own = 0 if self.nodes[uid].get("package") == self.project else 1
            return (type_rank, own)

        ranked = sorted(candidates, key=rank)
        if rank(ranked[0]) < rank(ranked[1]):
            return ranked[0]
        raise UnresolvedNode(query, ranked[:10], ambiguous=True)

    def similar(self, query: str, limit: int = 5) -> list[str]:
        """Close names (for a hint). Only called on the error path."""
        import difflib

        needle = query.lower().rsplit(".", 1)[-1]
        close = difflib.get_close_matches(needle, self.names, n=limit, cutoff=0.6)
        out: list[str] = []
        for name in close:
            for uid in self.by_key.get(name, ()):
                if uid not in out:
                    out.append(uid)
        return out[:limit]
