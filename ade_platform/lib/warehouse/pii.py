"""New columns that look like personal data and that dbt does not tag as such (names only, never values).

"New" means absent from the previous schema snapshot of the same table (a new table's columns are all
new). A column is covered when the manifest tags it (or its whole relation) `pii`.
"""

from __future__ import annotations

import re
from typing import Any

from ade_platform.lib.warehouse.manifest import Relation, is_pii_tagged

# category -> pattern over a column name (case-insensitive, matched against the whole name or a
# word of it, so `customer_email` and `email_address` match but `emailed_flag` does not).
PII_PATTERNS: dict[str, str] = {
    "email": r"e_?mail(_?address)?",
    "phone": r"(phone|mobile|cell|fax)(_?(number|no))?",
    "name": r"(first|last|full|middle|maiden|sur|given|family)_?name|surname",
    "birth_date": r"(date_?of_?birth|dob|birth_?date|birthday)",
    "address": r"(street|postal|home|billing|shipping|mailing)?_?address(_?line_?\d)?|street|post_?code|zip_?code|zip",
    "government_id": r"ssn|social_?security(_?number)?|passport(_?(number|no))?|national_?id|tax_?id|driver_?licen[cs]e",
    "financial": r"(credit_?)?card_?(number|no|last_?four)|iban|account_?number|routing_?number|cvv",
    "network": r"ip_?address|ip|mac_?address",
}
_COMPILED = {
    category: re.compile(rf"(^|_)({pattern})($|_)", re.IGNORECASE) for category, pattern in PII_PATTERNS.items()
}


def pii_category(column: str) -> str | None:
    """The PII category a column name suggests, or None."""
    for category, pattern in _COMPILED.items():
        if pattern.search(column):
            return category
    return None


def _columns_by_table(data: dict[str, Any] | None) -> dict[tuple[str, str], set[str]]:
    result: dict[tuple[str, str], set[str]] = {}
    for table in (data or {}).get("tables", []):
        result[(table["schema"].lower(), table["name"].lower())] = {c["name"].lower() for c in table["columns"]}
    return result


def new_untagged_pii(
    previous: dict[str, Any] | None,
    current: dict[str, Any],
    relations_by_table: dict[tuple[str, str], list[Relation]],
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
            category = pii_category(col["name"])
            if category is None or is_pii_tagged(relation, col["name"]):
                continue
            findings.append(
                {
                    "table": f"{table['schema']}.{table['name']}",
                    "column": col["name"],
                    "data_type": col["type"],
                    "category": category,
                    "dbt_node": relation.unique_id if relation else None,
                    "new_table": key not in before,
                    "reason": "new column whose name suggests personal data; no `pii` tag in the manifest",
                }
            )
    return findings
