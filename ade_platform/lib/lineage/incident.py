"""Rank the likely root causes of a symptom (a broken tile or dashboard, a failed model, a missing table, a failed
job) along its upstream chain, and say it in one verdict.

Ranking, in order (DESIGN.md, "The join is live too"):
1. causes that explain the symptom's own error: the column the tile misses is the one renamed or dropped in its
   table or upstream; the relation it misses is the table dropped or the model that failed; a type error meets a
   retyped column; a model's own failure explains itself, and a change upstream naming its missing column explains
   it better;
2. then by onset: a condition that began before the symptom did, and closest to it, ranks above one that began
   long before; a condition that already held while the symptom was healthy is background: ranked low, and
   it says so;
3. then by kind and by closeness to the symptom (hops).
The verdict names the object and the change ("`main.orders.status` renamed to `order_status` between 14:40 and
14:47 UTC"); `confidence` is high when a cause that explains the error leads, medium when a change (the records
show a time before it held) leads, low when only long-standing or background conditions remain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ade_platform.lib.lineage.conditions import VOCABULARY, WEIGHT, Condition, iso
from ade_platform.lib.lineage.error_shapes import mentions_relation, mentions_text
from ade_platform.lib.lineage.evidence import LiveFindings, Records
from ade_platform.lib.lineage.gather import Gatherer
from ade_platform.lib.lineage.gather_code import Blame, absorb_table_changes, code_between, code_conditions
from ade_platform.lib.lineage.gather_values import VALUE_CAUSES, Compared, value_conditions
from ade_platform.lib.lineage.symptom import Symptom, symptom_of
from ade_platform.lib.lineage.trace import walk

# the kinds of condition that change a relation's columns (what a missing-column or type error is matched with)
_CHANGES = frozenset({"schema_change", "schema_drift", "code_change", "declared_type_change"})
# A condition first seen this close after the symptom's onset may still be its cause (clocks, polling).
_SIMULTANEOUS_SECONDS = 120.0


def explanation(symptom: Symptom, cond: Condition) -> tuple[int, str | None]:
    """How well a condition explains the symptom's error: 0 (not at all) to 3 (names what the error names)."""
    best: tuple[int, str | None] = (0, None)

    def take(strength: int, why: str) -> None:
        nonlocal best
        if strength > best[0]:
            best = (strength, why)

    changed = cond.cause in _CHANGES
    if cond.cause in VALUE_CAUSES and cond.extra.get("value_strength"):
        # the start's own values changed, and this is where that change began (gather_values.py)
        take(
            cond.extra["value_strength"], "the start's values changed the same way, and the change began here"
        )
    explains = cond.extra.get("explains")
    if explains is not None:  # a code change taking away what a failure on the chain names (gather_code.py)
        failing, column = explains
        named = f"`{column}`" if column else "a column whose type"
        take(3, f"the failure of {failing} names {named}, which this change took away or retyped")
    for shape in symptom.shapes:
        if shape.kind == "missing_column":
            named = set(shape.columns)
            if changed and named & cond.columns:
                take(3, f"the error names `{sorted(named & cond.columns)[0]}`, which this change took away")
            elif cond.cause == "tile_references_missing_column" and (not named or named & cond.columns):
                take(2, "the tile's SQL names a column its table does not have")
            elif changed and not named and cond.columns and cond.depth <= 2:
                take(2, "the error is a missing column, and this table lost columns")
            elif cond.cause == "failed_model" and any(mentions_text(cond.message, c) for c in named):
                take(1, "the model's failure names the same column")
        elif shape.kind == "missing_relation":
            if any(mentions_relation(shape, r) for r in cond.relations) and cond.cause in (
                "schema_change",
                "failed_model",
                "skipped_model",
            ):
                take(3, "the error names this relation")
        elif shape.kind == "type_mismatch":
            if cond.retyped and (not shape.columns or set(shape.columns) & cond.retyped):
                take(3, "the error is a type mismatch, and this column changed type")
        elif shape.kind == "empty" and cond.cause in (
            "stale_source",
            "failed_model",
            "skipped_model",
            "failed_builder_run",
            "failed_invocation",
        ):
            take(1, "an empty result follows from data that was not refreshed")
    if symptom.failing and cond.cause == "failed_model" and cond.evidence.get("from_log_of") == symptom.node:
        take(2, "the failed run's log names this node's failure")
    if symptom.failing and cond.node == symptom.node and cond.cause in ("failed_model", "failed_builder_run"):
        take(2, "the symptom's own run failed")
    if symptom.failing and cond.cause == "failed_invocation" and symptom.system == "dbt":
        take(2, "the newest dbt invocation failed before writing results")
    if symptom.status == "missing" and cond.cause == "failed_model":
        take(2, "the model that builds the missing table failed")
    return best


def background(symptom: Symptom, cond: Condition) -> str | None:
    """Why a condition cannot have caused the symptom (it held while the symptom was healthy), or None."""
    healthy = symptom.healthy_at
    if healthy is None or cond.cause in VALUE_CAUSES:
        # a value change is dated by its two profiles; a green build says nothing of the values it built
        return None
    onset = cond.onset
    if onset.at is not None and onset.at <= healthy:
        return (
            f"it held since {iso(onset.at)}, and {symptom.name or symptom.node} was healthy at {iso(healthy)}"
        )
    if onset.at_or_before and onset.origin not in ("live",):
        return (
            f"it is in every retained record (since {iso(onset.at) or 'before the history'}), while "
            f"{symptom.name or symptom.node} was healthy at {iso(healthy)}"
        )
    return None


def _time_bonus(symptom: Symptom, cond: Condition) -> float:
    """Onsets before the symptom's, and close to it, rank higher."""
    at = cond.onset.at
    if at is None:
        return 0.0
    reference = symptom.failing_since or symptom.healthy_at
    if reference is None:
        return 0.1
    if symptom.failing_since is not None and at > symptom.failing_since + _SIMULTANEOUS_SECONDS:
        return 0.0  # began after the symptom did
    gap_hours = abs(reference - at) / 3600
    return 0.5 / (1.0 + gap_hours)


# People's feedback (incident_update resolve, cause_was_right): a cause kind or node named wrongly before in this
# project weighs less. Small on purpose: the evidence still decides; feedback breaks near ties.
KIND_FEEDBACK = 0.2
NODE_FEEDBACK = 0.3


@dataclass(frozen=True)
class Feedback:
    """(right, wrong) verdicts per cause kind and per cause node, from resolved incidents."""

    kinds: dict[str, tuple[int, int]] = field(default_factory=dict)
    nodes: dict[str, tuple[int, int]] = field(default_factory=dict)

    def factor(self, cause: str, node: str) -> float:
        """1 - 0.2 x wrong / (right + wrong + 1) for the kind, times the same with 0.3 for the node; 1 without
        feedback. One wrong verdict of a kind: x0.9; three wrong, none right: x0.85."""
        out = 1.0
        for table, weight, key in ((self.kinds, KIND_FEEDBACK, cause), (self.nodes, NODE_FEEDBACK, node)):
            right, wrong = table.get(key, (0, 0))
            out *= 1.0 - weight * wrong / (right + wrong + 1)
        return out


def rank(
    symptom: Symptom, conditions: list[Condition], feedback: Feedback | None = None
) -> list[dict[str, Any]]:
    best: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
    for cond in conditions:
        strength, why = explanation(symptom, cond)
        behind = background(symptom, cond)
        score = WEIGHT[cond.cause] * (0.97 ** max(0, cond.depth))
        score += strength + (0.0 if behind else _time_bonus(symptom, cond))
        if behind:
            score *= 0.1
        if feedback is not None:
            score *= feedback.factor(cond.cause, cond.node)
        entry = {
            "cause": cond.cause,
            "node": cond.node,
            "name": cond.name,
            "system": cond.system,
            "hops_from_symptom": cond.depth,
            "score": round(score, 4),
            "object": cond.object,
            "change": cond.change,
            "summary": cond.summary,
            "explains_symptom": strength > 0,
            "_strength": strength,
            "explanation": why,
            "background": behind is not None,
            "background_reason": behind,
            "onset": cond.onset.as_dict(),
            "evidence_source": cond.source,
            "evidence": cond.evidence,
            "next_tool": cond.next_tool,
        }
        key = (cond.cause, cond.node)
        if key not in best or score > best[key][0]:
            best[key] = (score, entry)
    ranked = sorted(
        (e for _, e in best.values()),
        key=lambda e: (e["background"], -e["score"], e["hops_from_symptom"], e["node"]),
    )
    for i, entry in enumerate(ranked, 1):
        entry["rank"] = i
    return ranked


def _when(onset: dict[str, Any]) -> str:
    def hms(text: str | None) -> str:
        if not text:
            return "?"
        return (
            datetime.fromisoformat(text.replace("Z", "+00:00"))
            .astimezone(UTC)
            .strftime("%Y-%m-%d %H:%M:%S UTC")
        )

    if onset["from"] in ("live", "observation") and onset["last_absent_at"]:
        return f"between {hms(onset['last_absent_at'])} and {hms(onset['first_seen_at'])} (seen live)"
    if onset["first_seen_at"] is None:
        return "(no record of when)"
    return f"at {hms(onset['first_seen_at'])}" + (" or earlier" if onset["at_or_before"] else "")


def _symptom_text(symptom: Symptom) -> str:
    what = f"{symptom.kind} '{symptom.name or symptom.node}'"
    shape = symptom.shapes[0] if symptom.shapes else None
    if not symptom.failing:
        return f"{what} looks healthy now"
    if shape is not None and shape.kind == "missing_column":
        named = f" `{shape.columns[0]}`" if shape.columns else ""
        return f"{what} fails: missing column{named}"
    if shape is not None and shape.kind == "missing_relation":
        return f"{what} fails: missing relation" + (f" `{shape.relations[0]}`" if shape.relations else "")
    if shape is not None and shape.kind not in ("other", "empty"):
        return f"{what} fails ({shape.kind.replace('_', ' ')})"
    return f"{what} is {symptom.status}"


def _silent_text(symptom: Symptom, top: dict[str, Any]) -> str:
    """The symptom of a silent incident: green, but its values moved (the start's own change, with numbers)."""
    what = f"{symptom.kind} '{symptom.name or symptom.node}'"
    seen = (top["evidence"].get("at_start") or [])[:1]
    if not seen:
        return f"{what} looks healthy, but values upstream of it changed"
    return f"{what} builds green, but its values changed ({seen[0]['detail']})"


def verdict(symptom: Symptom, ranked: list[dict[str, Any]]) -> tuple[str, str]:
    """(verdict, confidence)."""
    head = _symptom_text(symptom)
    top = ranked[0] if ranked else None
    if top is None:
        tail = "no failing, stale or changed hop upstream"
        return f"{head}; {tail}.", "none"
    if top["background"]:
        shown = "; ".join(f"{c['object']} {c['change']}" for c in ranked[:2])
        since = iso(symptom.healthy_at)
        return (
            f"{head}; nothing upstream changed since it was last healthy ({since}). Background: {shown}.",
            "low",
        )
    said = VOCABULARY[top["cause"]]
    if top["cause"] in VALUE_CAUSES and not symptom.failing:
        head = _silent_text(symptom, top)
    when = _when(top["onset"])
    cause = said.verdict.format(
        object=top["object"], name=top["name"], change=top["change"], when=when
    ).strip()
    if top["_strength"] >= 2:
        return f"{head}. Cause: {cause}.", "high"
    if top["cause"] in VALUE_CAUSES:  # values moved upstream, not at the start: worth a look, not a verdict
        return f"{head}. Possible cause (the start's own values did not change): {cause}.", "low"
    if not said.alone and top["_strength"] == 0:
        return f"{head}. Possible cause (it does not name what failed): {cause}.", "low"
    if top["onset"]["last_absent_at"] is not None:  # a change: the records show a time before it held
        return f"{head}. Likely cause: {cause}.", "medium"
    return f"{head}. Possible cause (no record shows it began recently): {cause}.", "low"


def _value_conditions(
    v: dict[str, Any],
    chain: Any,
    records: Records,
    live: LiveFindings,
    symptom: Symptom,
    blame: Blame | None,
    dialect: str | None,
) -> list[Condition]:
    """Where the chain's values changed (live profiles against their baselines), joined with the code changes
    between the two; with a failing symptom they are context (the failure has causes of its own)."""
    compared: list[Compared] = [c for c in live.values.values() if c.hop.node in chain.nodes]
    if not any(c.changes for c in compared):
        return []
    base_at = min((c.before_at for c in compared if c.changes and c.before_at), default=None)
    code = code_between(v, chain, records, base_at, blame, dialect) if base_at is not None else {}
    found = value_conditions(v, compared, code)
    if symptom.failing:
        for cond in found:
            cond.extra["value_strength"] = 0
    return found


def explain(
    v: dict[str, Any],
    start: str,
    records: Records,
    live: LiveFindings,
    dialect: str | None = None,
    max_nodes: int = 500,
    blame: Blame | None = None,
    feedback: Feedback | None = None,
) -> dict[str, Any]:
    """The symptom at `start`, the ranked causes upstream of it, and the verdict.

    `blame` tells who changed the project's files (git, from the MCP layer); without it code changes are named
    without an author. `feedback`: what people said of earlier verdicts (Feedback; None: no change)."""
    chain = walk(v, start, "upstream", None, max_nodes)
    symptom = symptom_of(start, v, records, live)
    gatherer = Gatherer(v, records, live, dialect)
    conditions = gatherer.chain(chain, start)
    conditions += code_conditions(v, chain, records, symptom, conditions, blame, dialect)
    for node, depth in gatherer.failed_in_logs:  # a job's log named the dbt node that failed: go on from it
        further = walk(v, node, "upstream", None, max_nodes)
        further.nodes = {
            n: {**w, "depth": w["depth"] + depth} for n, w in further.nodes.items() if n not in chain.nodes
        }
        found = Gatherer(v, records, live, dialect).chain(further, node)
        conditions += found
        conditions += code_conditions(v, further, records, symptom, conditions, blame, dialect)
    conditions += _value_conditions(v, chain, records, live, symptom, blame, dialect)
    ranked = rank(symptom, absorb_table_changes(v, conditions), feedback)
    text, confidence = verdict(symptom, ranked)
    for entry in ranked:
        del entry["_strength"]
    return {
        "symptom": symptom.as_dict(),
        "causes": ranked,
        "verdict": text,
        "confidence": confidence,
        "confident": confidence in ("high", "medium"),
        "chain_nodes": len(chain.nodes),
        "truncated": chain.truncated,
        "live": {
            "elapsed_ms": round(live.elapsed_ms, 1),
            "probes": len(live.probes),
            "slowest": sorted(live.probes, key=lambda p: -p["ms"])[:3],
            "not_reached": live.not_reached,
            "failed": live.failed,
        },
    }
