"""Code changes as conditions: the dbt nodes of a chain whose code differs between the last healthy build of the
symptom and now (code_changes.py reads the manifests the store keeps), each said with who changed it and when
where git knows (a commit, or an edit not committed yet).

The baseline is the newest manifest published at or before the symptom was last seen healthy; a symptom that is
not failing has no baseline here (a silent change is compared by the data profiles, not by this). A change that
takes away or retypes a column that a failure on the chain names is tied to that failure (`extra["explains"]`):
ranking then puts it above the node that merely failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ade_platform.lib.lineage.code_changes import NodeChange, NodeCode, diff_nodes, node_codes
from ade_platform.lib.lineage.conditions import Condition, Onset, condition_on, iso
from ade_platform.lib.lineage.error_shapes import parse_error
from ade_platform.lib.lineage.evidence import Records
from ade_platform.lib.lineage.history import VersionRef
from ade_platform.lib.lineage.symptom import Symptom
from ade_platform.lib.lineage.trace import Walk

MANIFEST = "dbt_manifest"
_KEY = "node_codes"
_MAX_VERSIONS = 10  # manifests walked back to date a change (each reduced once per content)
_MAX_CHANGES = 20

# files -> {file: {"uncommitted": True} | {"sha", "author", "at" (epoch), "message"}}; {} when git cannot tell
Blame = Callable[[list[str]], dict[str, dict[str, Any]]]


def _codes(records: Records, ref: VersionRef) -> dict[str, NodeCode]:
    return records.history.reduce(MANIFEST, ref, _KEY, node_codes)


def _baseline(refs: list[VersionRef], symptom: Symptom) -> VersionRef | None:
    """The manifest of the last healthy build: the newest at or before the symptom was last healthy."""
    if not symptom.failing or len(refs) < 2:
        return None
    healthy = symptom.healthy_at
    if healthy is None:
        return refs[-1]  # never seen healthy in the records: the oldest build they keep
    base = next((r for r in refs if r.at <= healthy), None)
    return None if base is None or base.version == refs[0].version else base  # no build since it was healthy


def _first_seen(records: Records, refs: list[VersionRef], base: VersionRef, uid: str) -> VersionRef:
    """The oldest build after the baseline whose code of `uid` is the code now (when the change took effect)."""
    newest = _codes(records, refs[0]).get(uid)
    first = refs[0]
    for ref in refs[1:_MAX_VERSIONS]:
        if ref.version == base.version or ref.at <= base.at:
            break
        if _codes(records, ref).get(uid) != newest:
            break
        first = ref
    return first


def _named_by_failures(symptom: Symptom, conditions: list[Condition]) -> dict[str, tuple[set[str], bool]]:
    """What the failures on the chain name: failing node -> (columns named, a type error)."""
    out: dict[str, tuple[set[str], bool]] = {}
    own = {c for s in symptom.shapes for c in s.columns}
    if symptom.failing and symptom.shapes:
        out[symptom.name or symptom.node] = (own, any(s.kind == "type_mismatch" for s in symptom.shapes))
    for cond in conditions:
        if cond.cause != "failed_model":
            continue
        shape = parse_error(cond.message)
        if shape is not None and shape.kind in ("missing_column", "type_mismatch"):
            out[str(cond.name)] = (set(shape.columns), shape.kind == "type_mismatch")
    return out


def _who(change: NodeChange, blame: dict[str, dict[str, Any]], failing_since: float | None) -> dict[str, Any]:
    """Who changed the node's files, and when: an uncommitted edit first (it is what the build ran), else the
    newest commit to them."""
    files = list(change.files) + (["dbt_project.yml"] if change.config or change.retyped else [])
    dirty = [f for f in files if (blame.get(f) or {}).get("uncommitted")]
    if dirty:
        return {"uncommitted": True, "files": dirty, "text": f"in an uncommitted edit of {dirty[0]}"}
    commits = [blame[f] for f in files if blame.get(f) and blame[f].get("sha")]
    if not commits:
        return {}
    newest = min(commits, key=lambda c: (-(c.get("at") or 0.0), c.get("order", 0)))
    text = f"in commit {str(newest['sha'])[:7]} by {newest.get('author') or '?'}"
    at = newest.get("at")
    if at is not None and failing_since is not None and at <= failing_since:
        minutes = round((failing_since - at) / 60)
        text += f", {minutes} min before the failure" if minutes >= 1 else ", just before the failure"
    elif at is not None:
        text += f" ({iso(at)})"
    return {**newest, "uncommitted": False, "text": text}


def code_conditions(
    v: dict[str, Any],
    chain: Walk,
    records: Records,
    symptom: Symptom,
    conditions: list[Condition],
    blame: Blame | None,
    dialect: str | None = None,
    depth_offset: int = 0,
) -> list[Condition]:
    """The code changes on the chain's dbt nodes since the symptom's last healthy build, as conditions."""
    refs = records.history.versions(MANIFEST)
    base = _baseline(refs, symptom)
    if base is None:
        return []
    nodes = v["nodes"]
    hops = {
        str(nodes[n].get("unique_id")): (n, where["depth"])
        for n, where in chain.nodes.items()
        if nodes.get(n, {}).get("system") == "dbt" and nodes[n].get("unique_id")
    }
    changes = diff_nodes(_codes(records, base), _codes(records, refs[0]), sorted(hops), dialect)
    changes = sorted(changes, key=lambda c: (not c.breaking, hops[c.uid][1]))[:_MAX_CHANGES]
    if not changes:
        return []
    files = sorted({f for c in changes for f in c.files} | {"dbt_project.yml"})
    authors = blame(files) if blame is not None else {}
    named = _named_by_failures(symptom, conditions)
    out = []
    for change in changes:
        node_id, depth = hops[change.uid]
        who = _who(change, authors, symptom.failing_since)
        taken, retyped = change.taken, {c for c, _, _ in change.retyped}
        explains = next(
            (
                (failing, sorted(cols & taken)[0] if cols & taken else None)
                for failing, (cols, type_error) in named.items()
                if failing != change.name and (cols & taken or (type_error and retyped))
            ),
            None,
        )
        first = _first_seen(records, refs, base, change.uid)
        if (
            change.breaking
            and not (change.renamed or change.dropped or change.config)
            and change.resource_type
            in (
                "source",
                "seed",
            )
        ):
            cause = "declared_type_change"
        else:
            cause = "code_change" if change.breaking else "code_edit"
        text = change.describe() + (f" {who['text']}" if who.get("text") else "")
        out.append(
            condition_on(
                cause,
                (node_id, nodes[node_id], depth + depth_offset),
                facts={"change": text},
                evidence={
                    **change.as_dict(),
                    "baseline_build": {"version": base.version, "at": iso(base.at)},
                    "build": {"version": first.version, "at": iso(first.at)},
                    "git": {
                        k: who.get(k)
                        for k in ("sha", "author", "message", "uncommitted", "files")
                        if k in who
                    }
                    | ({"at": iso(who["at"])} if who.get("at") else {}),
                    "explains_failure_of": explains[0] if explains else None,
                },
                source={
                    "source": "cache",
                    "asset": MANIFEST,
                    "version": first.version,
                    "materialized_at": iso(first.at),
                },
                onset=Onset(at=first.at, after=base.at, origin=MANIFEST),
                tool_args={"start_kind": "dbt_node", "start": change.uid, "since": iso(base.at)},
                columns=frozenset(taken),
                retyped=frozenset(retyped),
                extra={"explains": explains, "uncommitted": bool(who.get("uncommitted"))},
                object=str(nodes[node_id].get("name") or change.name),
            )
        )
    return out


def absorb_table_changes(v: dict[str, Any], conditions: list[Condition]) -> list[Condition]:
    """A table change that a code change of the model building it explains (the same columns taken away or
    retyped) is that change's effect, not a second cause: it goes into the code change's evidence."""
    code = {
        c.node: c
        for c in conditions
        if c.cause in ("code_change", "declared_type_change") and (c.columns or c.retyped)
    }
    if not code:
        return conditions
    kept = []
    for cond in conditions:
        model = next(
            (
                e["from"]
                for e in v["up"].get(cond.node, ())
                if e["kind"] == "materializes" and e["from"] in code
            ),
            None,
        )
        by = (
            code.get(model) if model is not None and cond.cause in ("schema_change", "schema_drift") else None
        )
        if by is not None and (cond.columns & by.columns or cond.retyped & by.retyped):
            by.evidence.setdefault("table_changes", []).append({"table": cond.object, "change": cond.change})
            continue
        kept.append(cond)
    return kept


def code_between(
    v: dict[str, Any],
    chain: Walk,
    records: Records,
    base_at: float,
    blame: Blame | None,
    dialect: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The chain's dbt nodes whose code differs between the build in place at `base_at` (the newest manifest at
    or before it) and now: node id -> {change (words), who (words), git facts, evidence}. What a value change
    is joined with (gather_values.py): a silent incident has no failure to date a baseline, its profiles do."""
    refs = records.history.versions(MANIFEST)
    base = next((r for r in refs if r.at <= base_at), None)
    if base is None or base.version == refs[0].version:
        return {}  # no build since the baseline: the code that made its values is the code now
    nodes = v["nodes"]
    hops = {
        str(nodes[n].get("unique_id")): n
        for n in chain.nodes
        if nodes.get(n, {}).get("system") == "dbt" and nodes[n].get("unique_id")
    }
    changes = diff_nodes(_codes(records, base), _codes(records, refs[0]), sorted(hops), dialect)
    if not changes:
        return {}
    files = sorted({f for c in changes for f in c.files} | {"dbt_project.yml"})
    authors = blame(files) if blame is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for change in changes[:_MAX_CHANGES]:
        who = _who(change, authors, None)
        first = _first_seen(records, refs, base, change.uid)
        out[hops[change.uid]] = {
            "change": change.describe(),
            "who": who.get("text") or "",
            "git": {k: who.get(k) for k in ("sha", "author", "message", "uncommitted", "files") if k in who}
            | ({"at": iso(who["at"])} if who.get("at") else {}),
            "evidence": {
                **change.as_dict(),
                "baseline_build": {"version": base.version, "at": iso(base.at)},
                "build": {"version": first.version, "at": iso(first.at)},
            },
        }
    return out
