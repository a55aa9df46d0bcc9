"""The conditions along a chain that may explain a symptom: what they are, where their evidence came from, when
they began.

A condition is one fact about one hop (a table's column renamed, a model failed, a source stopped loading, a
job's last run failed, a dbt invocation died at parse). It says which object changed and how (for the verdict),
the names it involves (to match against the symptom's error), the origin of its evidence (`live`, or the
snapshot asset, version and age) and its onset: when it was first seen in the current run of records, and when
it was last seen absent. Ranking (incident.py) reads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Cause:
    """How one kind of condition is said: its base weight (how often it is THE cause when present upstream of a
    symptom), the templates of its change and summary (filled from the hop and the gatherer's facts), and the
    tool an agent calls next to see it for itself."""

    weight: float
    change: str
    summary: str
    tool: str
    # how the verdict names it ({object}, {name}, {change}, {when}: when its onset says it began)
    verdict: str = "`{object}` {change} {when}"
    # whether it may lead a confident verdict without explaining the symptom's error: a code change happens on
    # every working day, and only one that names what failed is more than context
    alone: bool = True


# the cause vocabulary, heaviest first
VOCABULARY: dict[str, Cause] = {
    # silent incidents (gather_values.py): the first node upstream whose values changed the way the start's did;
    # its SQL changed between the two profiles (the team's logic), or it is a source (the loader's data), or
    # neither (a model whose inputs did not change in that way, with no code change: its data changed)
    "logic_change": Cause(
        0.99,
        "{change}",
        "the values of {kind} {name} changed and its code changed in the same window: {change}",
        "lineage_what_changed",
        verdict="`{object}`: {change}",
    ),
    "source_data_change": Cause(
        0.985,
        "{change}",
        "the data of {kind} {name} changed: {change}",
        "warehouse_get_table_profile",
        verdict="`{object}`: {change}",
    ),
    "value_change": Cause(
        0.98,
        "{change}",
        "the values of {kind} {name} changed with no code change: {change}",
        "lineage_what_changed",
        verdict="`{object}`: {change}",
    ),
    # a node's code changed between the last healthy build and now, taking away or retyping what the failure
    # names: heavier than the table change it causes (the code is the root, the table its consequence)
    "code_change": Cause(
        0.97,
        "{change}",
        "{kind} {name} changed between builds: {change}",
        "lineage_what_changed",
        verdict="`{name}`: {change}",
        alone=False,
    ),
    "declared_type_change": Cause(
        0.96,
        "{change}",
        "the declared column types of {kind} {name} changed: {change}",
        "lineage_what_changed",
        verdict="`{name}`: {change}",
        alone=False,
    ),
    "schema_change": Cause(0.95, "{change}", "{subject} {change}", "warehouse_get_schema"),
    "tile_references_missing_column": Cause(
        0.9,
        "names {missing}, which {tables} does not have",
        "the tile's SQL names {missing}, which {tables} does not have",
        "warehouse_get_schema",
    ),
    "failed_invocation": Cause(0.9, "failed {stage}", "dbt {name} failed{at_parse}", "dbt_get_failed_models"),
    "failed_model": Cause(
        0.9, "failed", "dbt {kind} {name} failed in the newest run", "dbt_get_failed_models"
    ),
    "schema_drift": Cause(
        0.8,
        "differs from what dbt declares",
        "the warehouse relation of {name} drifted from what dbt declares",
        "warehouse_detect_schema_drift",
    ),
    "stale_source": Cause(
        0.75,
        "{how} ({detail}; freshness {status})",
        "source {name} is {status} on freshness ({detail})",
        "dbt_get_source_freshness",
    ),
    "failed_builder_run": Cause(
        0.65,
        "run {run_id} failed",
        "the last run of {name}, which builds {builds}, failed",
        "orchestrator_get_last_run",
    ),
    "failing_tests": Cause(
        0.5, "{count} test(s) failing", "{count} test(s) on {name} did not pass", "dbt_get_model_tests"
    ),
    "skipped_model": Cause(
        0.4,
        "skipped",
        "{name} was skipped in the newest run (an upstream node failed), so its table is old",
        "dbt_get_failed_models",
    ),
    # a node's SQL edited with the columns it outputs unchanged (a refactor): context, never the verdict
    "code_edit": Cause(
        0.3,
        "{change}",
        "{kind} {name} was edited between builds: {change}",
        "lineage_what_changed",
        verdict="`{name}`: {change}",
        alone=False,
    ),
}
WEIGHT = {cause: said.weight for cause, said in VOCABULARY.items()}
CAUSES = tuple(VOCABULARY)


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def epoch_of(value: Any) -> float | None:
    """An ISO time (or epoch) as epoch seconds; naive times are UTC."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    text = str(value).strip().replace("Z", "+00:00")
    if " " in text and "T" not in text:
        text = text.replace(" ", "T", 1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


@dataclass
class Onset:
    """When a condition (or the symptom) began, as far as the records tell."""

    at: float | None  # first record of the current run that shows it
    after: float | None = None  # the newest record before it where it did not hold (None: never seen absent)
    at_or_before: bool = False  # the oldest retained record already shows it: it began there or earlier
    origin: str = "live"  # "live", or the asset whose history dated it

    def as_dict(self) -> dict[str, Any]:
        return {
            "first_seen_at": iso(self.at),
            "last_absent_at": iso(self.after),
            "at_or_before": self.at_or_before,
            "from": self.origin,
        }


def live_source(observed_at: float) -> dict[str, Any]:
    return {"source": "live", "observed_at": iso(observed_at)}


def cache_source(asset: str, version: str, at: float, now: float) -> dict[str, Any]:
    return {
        "source": "cache",
        "asset": asset,
        "version": version,
        "materialized_at": iso(at),
        "age_seconds": round(max(0.0, now - at), 1),
    }


@dataclass
class Condition:
    cause: str
    node: str
    depth: int
    object: str  # what the verdict names: "main.orders.status", "model orders", "source raw.customers"
    change: str  # how it changed: "renamed to order_status", "failed", "stopped loading"
    summary: str
    evidence: dict[str, Any]
    source: dict[str, Any]  # live_source(...) or cache_source(...)
    onset: Onset
    next_tool: dict[str, Any]
    columns: frozenset[str] = frozenset()  # columns it took away (dropped, or renamed from)
    retyped: frozenset[str] = frozenset()
    relations: frozenset[str] = frozenset()  # relations it concerns (missing, or the model's table)
    message: str | None = None  # its own error message (a failed model's), for matching
    name: str | None = None
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def next_tool(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def short_relation(dotted: str) -> str:
    """schema.name of a db.schema.name (the verdict's spelling of a table)."""
    parts = dotted.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else dotted


def table_changes(report: dict[str, Any]) -> list[tuple[str, str]]:
    """What a drift-shaped report (an older table against the newer) says changed: (column, what) pairs."""
    renamed = {r["from"].lower(): r["to"] for r in report.get("likely_renames") or []}
    changes = [(r["from"], f"renamed to `{r['to']}`") for r in report.get("likely_renames") or []]
    changes += [
        (c["column_name"], "dropped")
        for c in report.get("removed_from_warehouse") or []
        if c["column_name"].lower() not in renamed
    ]
    changes += [
        (c["column_name"], f"retyped from {c.get('manifest_type') or '?'} to {c.get('warehouse_type')}")
        for c in report.get("type_changed") or []
    ]
    return changes


Hop = tuple[str, dict[str, Any], int]  # a node on a chain: (its id, the node, its depth)


def condition_on(
    cause: str,
    hop: Hop,
    *,
    evidence: dict[str, Any],
    source: dict[str, Any],
    onset: Onset,
    facts: dict[str, Any] | None = None,
    tool: str | None = None,
    tool_args: dict[str, Any] | None = None,
    **details: Any,
) -> Condition:
    """A condition on one hop, said in the cause's words (VOCABULARY).

    Name, object ("<kind> <name>") and system come from the node unless `details` name them; `facts` fill the
    cause's templates; a condition with its own message ends its summary with it. `details` are the Condition's
    other fields (columns, relations, message, extra, ...); `tool` replaces the cause's usual next tool.
    """
    said = VOCABULARY[cause]
    node_id, node, depth = hop
    details.setdefault("name", node.get("name"))
    details.setdefault("system", node.get("system"))
    name = details["name"]
    obj = details.pop("object", f"{node.get('kind')} {name}")
    words = {"name": name, "kind": node.get("kind"), "object": obj, **(facts or {})}
    change = said.change.format(**words)
    summary = said.summary.format(**{**words, "change": change})
    if details.get("message"):
        summary += f": {details['message']}"
    look = next_tool(tool or said.tool, **(tool_args or {}))
    return Condition(cause, node_id, depth, obj, change, summary, evidence, source, onset, look, **details)
