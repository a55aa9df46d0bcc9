"""Silent incidents: the values of the chain's relations now against their last healthy profile, walked upstream to
the first node whose values changed the way the start's did, joined with the code changes between the two.

A relation on the chain is a dbt node's (model, source, seed, snapshot; the node the cause names, where its code
lives) or a warehouse table no dbt node on the chain builds. The live probes profile each one (lib/profiles) and
compare it with its baseline profile (`compare`: only significant changes, so ordinary growth is none). The start's
own changes are the symptom; an upstream change explains it when it is the same change travelling down the chain
(the same column, or rows gone or multiplied showing as fewer or more rows, a category filtered out showing as
fewer rows). The origin is an explaining node with no explaining node upstream of it: its inputs did not change
that way, its output did. Its cause is `logic_change` when its code changed between the two profiles,
`source_data_change` when it is a source (the loader's data), `value_change` otherwise.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ade_platform.lib.lineage.conditions import Condition, Onset, condition_on, iso, live_source
from ade_platform.lib.lineage.trace import Walk

VALUE_CAUSES = ("logic_change", "source_data_change", "value_change")
_VOLUME = frozenset({"row_count", "duplicates"})
_SOURCES = frozenset({"source", "seed", "table", "view"})  # data that arrives from outside the dbt models
_MAX_PROPAGATED = 8
# A change touching fewer rows than this share (ValueChange.magnitude) is what ordinary days do (a value new to a
# mix in a handful of rows): named as a possible cause, never a confident one.
MIN_MAGNITUDE = 0.02


@dataclass(frozen=True)
class RelationHop:
    """One relation on a chain: the node a cause names, where it is, how far from the start, what feeds it."""

    node: str
    relation: str  # db.schema.name, lower case (how profiles are keyed)
    warehouse: str
    depth: int
    kind: str  # model | source | seed | snapshot | table | view
    name: str
    inputs: frozenset[str] = frozenset()  # every relation hop upstream of it on the chain (node ids)


@dataclass
class Compared:
    """One relation's live profile against its baseline: the significant changes (lib/profiles/compare.py)."""

    hop: RelationHop
    before_at: float | None
    now_at: float
    changes: list[Any] = field(default_factory=list)  # ValueChange
    profile: Any = None  # the live RelationProfile (recorded after the answer)


def relation_hops(v: dict[str, Any], chain: Walk) -> list[RelationHop]:
    """The relations on the chain, closest first, each once (a model and the table it builds are one)."""
    nodes = v["nodes"]
    by_relation: dict[str, dict[str, Any]] = {}
    for node_id, where in sorted(chain.nodes.items(), key=lambda item: item[1]["depth"]):
        node = nodes.get(node_id) or {}
        relation, warehouse = _relation_of(v, node_id, node)
        if relation is None or warehouse is None:
            continue
        seen = by_relation.get(relation)
        if seen is None:
            by_relation[relation] = {"ids": [node_id], "depth": where["depth"], "warehouse": warehouse}
        else:
            seen["ids"].append(node_id)
        if node.get("system") == "dbt":  # the dbt node names the relation: its code is there
            by_relation[relation]["named"] = node_id
    owner = {i: rel for rel, info in by_relation.items() for i in info["ids"]}
    hops = []
    for relation, info in by_relation.items():
        named = info.get("named") or info["ids"][0]
        node = nodes[named]
        hops.append(
            RelationHop(
                node=named,
                relation=relation,
                warehouse=info["warehouse"],
                depth=info["depth"],
                kind=str(node.get("kind") or "table"),
                name=str(node.get("name") or relation),
                inputs=frozenset(
                    by_relation[r].get("named") or by_relation[r]["ids"][0]
                    for r in _upstream_relations(v, info["ids"], owner, relation)
                ),
            )
        )
    return hops


def _relation_of(v: dict[str, Any], node_id: str, node: dict[str, Any]) -> tuple[str | None, str | None]:
    if node.get("system") == "warehouse" and node.get("kind") in ("table", "view"):
        return str(node.get("name") or "").lower() or None, node.get("warehouse")
    if node.get("system") == "dbt" and node.get("relation"):
        edges = [*v["down"].get(node_id, ()), *v["up"].get(node_id, ())]
        table = next(
            (
                e["to"] if e["from"] == node_id else e["from"]
                for e in edges
                if e["kind"] in ("materializes", "feeds")
                and v["nodes"].get(e["to"] if e["from"] == node_id else e["from"], {}).get("system")
                == "warehouse"
            ),
            None,
        )
        warehouse = v["nodes"].get(table, {}).get("warehouse") if table else None
        return str(node["relation"]).lower(), warehouse
    return None, None


def _upstream_relations(v: dict[str, Any], ids: list[str], owner: dict[str, str], relation: str) -> set[str]:
    """Every relation upstream of these nodes (the relation's own nodes) on the chain."""
    seen, queue, found = set(ids), deque(ids), set()
    while queue:
        for e in v["up"].get(queue.popleft(), ()):
            nxt = e["from"]
            if nxt in seen:
                continue
            seen.add(nxt)
            if owner.get(nxt) not in (None, relation):
                found.add(owner[nxt])
            queue.append(nxt)
    return found


def explains(up: Any, down: Any) -> bool:
    """Whether an upstream change is the same change as one seen downstream (travelling down the chain)."""
    if up.kind in _VOLUME and down.kind in _VOLUME:
        return True
    if up.column and down.column and str(up.column).lower() == str(down.column).lower():
        return True
    # rows gone or multiplied upstream move the aggregates below (a daily count's mean, a mix, the nulls)
    return up.kind == "row_count" and down.kind in ("range", "value_mix", "distinct", "nulls")


def _hm(at: float | None) -> str:
    if at is None:
        return "?"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def window(before: float | None, now: float) -> str:
    """ "between the 12:00 and 13:00 profiles" (the date once when both are on the same day)."""
    if before is None:
        return f"by the {_hm(now)} profile"
    day = datetime.fromtimestamp(before, UTC).date() == datetime.fromtimestamp(now, UTC).date()
    first = datetime.fromtimestamp(before, UTC).strftime("%H:%M" if day else "%Y-%m-%d %H:%M")
    return f"between the {first} and {_hm(now)} profiles"


def _said(change: Any) -> dict[str, Any]:
    return {
        "relation": change.relation,
        "column": change.column,
        "kind": change.kind,
        "detail": change.detail,
        "before": _plain(change.before),
        "after": _plain(change.after),
        "magnitude": _plain(change.magnitude),
    }


def phrase(change: Any) -> str:
    """A change's phrase without the column it leads with (the object the verdict names already holds it)."""
    lead = f"`{change.column}`: "
    text = str(change.detail)
    return text[len(lead) :] if change.column and text.startswith(lead) else text


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (int, float, str, bool)) else str(value)


def value_conditions(
    v: dict[str, Any], compared: list[Compared], code: dict[str, dict[str, Any]]
) -> list[Condition]:
    """The origins of the start's value changes as conditions (none when nothing changed significantly)."""
    changed = {c.hop.node: c for c in compared if c.changes}
    if not changed:
        return []
    nearest = min(c.hop.depth for c in compared)
    signature = [ch for c in compared if c.hop.depth == nearest for ch in c.changes]
    explaining: dict[str, list[Any]] = {}
    for node, c in changed.items():
        if c.hop.depth == nearest or not signature:
            explaining[node] = list(c.changes)
        else:
            hits = [ch for ch in c.changes if any(explains(ch, s) for s in signature)]
            if hits:
                explaining[node] = hits
    origins: dict[str, list[Any]] = {}
    for node, hits in explaining.items():
        c = changed[node]
        if any(i in explaining for i in c.hop.inputs):
            continue  # the same change upstream of it: it only passed it on
        roots = _roots(changed, c, code) if c.hop.kind == "model" and node not in code else []
        if roots:
            # a model whose code did not change only changes when its inputs do: the change began where its
            # changed inputs did, even when it took another shape on the way (a category pivoted into columns)
            for root in roots:
                origins.setdefault(root, _ordered(changed[root].changes, signature))
        else:
            origins.setdefault(node, hits)
    profiled = {c.hop.node for c in compared}
    out = []
    for node, hits in origins.items():
        c = changed[node]
        below = [changed[n] for n in changed if n != node and node in changed[n].hop.inputs]  # where it went
        if any(ch.magnitude >= MIN_MAGNITUDE for ch in c.changes) and any(
            ch.magnitude >= MIN_MAGNITUDE for ch in signature
        ):
            start_changed = True
        else:  # a few rows in the mix of a relation: what an ordinary day does
            start_changed = False
        if c.hop.kind == "model" and node not in code and c.hop.inputs and c.hop.inputs <= profiled:
            # no code change and every input read without a significant change: small moves upstream, amplified
            # in a small relation (a few accounts' counts), are no confident cause
            start_changed = False
        rest = [ch for ch in c.changes if ch not in hits]
        out.append(_condition(v, c, hits + rest, code.get(node), below, signature, start_changed))
    return out


def _roots(changed: dict[str, Compared], c: Compared, code: dict[str, dict[str, Any]]) -> list[str]:
    """The changed relations upstream of `c` where the change began: changed, with no changed input (or a code
    change of their own)."""
    return sorted(
        n
        for n in c.hop.inputs
        if n in changed and (n in code or not any(i in changed for i in changed[n].hop.inputs))
    )


def _ordered(changes: list[Any], signature: list[Any]) -> list[Any]:
    return [ch for ch in changes if any(explains(ch, s) for s in signature)] or list(changes)


def _condition(
    v: dict[str, Any],
    c: Compared,
    hits: list[Any],
    code: dict[str, Any] | None,
    below: list[Compared],
    signature: list[Any],
    start_changed: bool,
) -> Condition:
    hop = c.hop
    # the change that best matches the start's, then the largest
    hits = sorted(
        hits,
        key=lambda ch: (
            -sum(explains(ch, s) for s in signature),
            ch.kind == "range",
            -abs(float(ch.magnitude or 0.0)),
        ),
    )
    main = hits[0]
    text = f"{phrase(main)} {window(c.before_at, c.now_at)}"
    if len(hits) > 1:
        text += f" (and {len(hits) - 1} more: " + "; ".join(h.detail for h in hits[1:3]) + ")"
    if code is not None:
        cause = "logic_change"
        what = "SQL" if hop.kind == "model" else "code"
        text += f"; the {hop.kind}'s {what} changed in that window ({code['change']}"
        text += f" {code['who']})" if code.get("who") else ")"
    elif hop.kind in _SOURCES:  # a dbt source or seed, or a table no dbt model on the chain builds
        cause = "source_data_change"
    else:
        cause = "value_change"
        text += "; its code did not change in that window"
    strength = (3 if cause == "logic_change" else 2) if start_changed else 0
    column = main.column
    obj = f"{hop.name}.{column}" if column else hop.name
    travelled = [
        {"node": b.hop.node, "name": b.hop.name, "changes": [_said(x) for x in b.changes[:3]]}
        for b in sorted(below, key=lambda b: b.hop.depth)[:_MAX_PROPAGATED]
    ]
    node = v["nodes"].get(hop.node) or {}
    return condition_on(
        cause,
        (hop.node, node, hop.depth),
        facts={"change": text},
        evidence={
            "relation": hop.relation,
            "changes": [_said(h) for h in hits[:5]],
            "baseline_profiled_at": iso(c.before_at),
            "profiled_at": iso(c.now_at),
            "at_start": [_said(s) for s in signature[:5]],
            "propagated_to": travelled,
            "code": code,
        },
        source=live_source(c.now_at),
        onset=Onset(at=c.now_at, after=c.before_at, origin="live"),
        tool="lineage_what_changed",
        tool_args={
            "start_kind": "dbt_node" if node.get("system") == "dbt" else "table",
            "start": node.get("unique_id") or hop.relation,
            "since": iso(c.before_at),
        },
        columns=frozenset(str(h.column).lower() for h in hits if h.column),
        relations=frozenset({hop.relation}),
        extra={
            "value_strength": strength,
            "uncommitted": bool((code or {}).get("git", {}).get("uncommitted")),
        },
        object=obj,
        name=hop.name,
    )


def value_events(compared: list[Compared]) -> list[dict[str, Any]]:
    """Each significant value change as a lineage_what_changed event (the timeline's shape)."""
    out = []
    for c in compared:
        for ch in c.changes:
            out.append(
                {
                    "at": iso(c.now_at),
                    "kind": "value_change",
                    "node": c.hop.node,
                    "object": f"{c.hop.name}.{ch.column}" if ch.column else c.hop.name,
                    "change": f"{ch.detail} since the {_hm(c.before_at)} profile",
                    "source": live_source(c.now_at),
                    "detail": {**_said(ch), "baseline_profiled_at": iso(c.before_at)},
                    "_at": c.now_at,
                }
            )
    return out
