"""New warehouse columns that look like personal data and that dbt does not tag (names only, never values).

"New" means absent from the previous schema snapshot of the same table (a new table's columns are all
new). The name patterns and tag terms are the platform's PII rules (ade_platform.lib.dbt.pii, extended by
the `pii` settings), so the sensor and dbt_scan_pii_risk agree on what personal data looks like.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ade_platform.lib.dbt import pii as rules
from ade_platform.lib.warehouse.manifest import Relation


def patterns_from(
    settings_patterns: Sequence[Any] = (), ignore: Sequence[str] = ()
) -> tuple[rules.PiiPattern, ...]:
    """Configured names to ignore and patterns (objects with name, regex, risk_level) first, then the built-in ones."""
    return rules.configured_patterns(settings_patterns, ignore) + rules.BUILTIN_PATTERNS


def is_tagged(relation: Relation | None, column: str, terms: Sequence[str] = rules.DEFAULT_TAGS) -> bool:
    """The manifest tags the column (or its whole relation) as personal data."""
    if relation is None:
        return False
    terms = tuple(t.lower() for t in terms)
    if rules.has_pii_tag({"tags": list(relation.tags)}, terms):
        return True
    lowered = column.lower()
    for col in relation.columns:
        if relation.columns_source == "manifest" and col.name.lower() == lowered:
            return rules.has_pii_tag({"tags": list(col.tags), "meta": col.meta}, terms)
    return False


def _columns_by_table(data: dict[str, Any] | None) -> dict[tuple[str, str], set[str]]:
    result: dict[tuple[str, str], set[str]] = {}
    for table in (data or {}).get("tables", []):
        result[(table["schema"].lower(), table["name"].lower())] = {
            c["name"].lower() for c in table["columns"]
        }
    return result


def new_untagged_pii(
    previous: dict[str, Any] | None,
    current: dict[str, Any],
    relations_by_table: dict[tuple[str, str], list[Relation]],
    patterns: tuple[rules.PiiPattern, ...] = rules.BUILTIN_PATTERNS,
    terms: Sequence[str] = rules.DEFAULT_TAGS,
) -> list[dict[str, Any]]:
    """Columns new in `current` (vs `previous`) whose names match a PII pattern and that dbt does not tag.

    With no previous snapshot there is no baseline and nothing is new.
    """
    if previous is None:
        return []
    before = _columns_by_table(previous)
    findings = []
    for table in current.get("tables", []):
        key = (table["schema"].lower(), table["name"].lower())
        known = before.get(key, set())
        rels = relations_by_table.get(key, [])
        relation = rels[0] if rels else None
        for col in table["columns"]:
            if col["name"].lower() in known:
                continue
            found = rules.match(col["name"], patterns)
            if found is None or is_tagged(relation, col["name"], terms):
                continue
            findings.append(
                {
                    "table": f"{table['schema']}.{table['name']}",
                    "column": col["name"],
                    "data_type": col["type"],
                    "pii_pattern_matched": found.name,
                    "risk_level": found.risk_level,
                    "dbt_node": relation.unique_id if relation else None,
                    "new_table": key not in before,
                }
            )
    findings.sort(key=lambda f: (rules.RISK_ORDER[f["risk_level"]], f["table"], f["column"]))
    return findings
