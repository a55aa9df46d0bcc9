"""PII risk from column names, tags and meta (manifest) and observed columns (catalog). Never reads values.

Column names are normalized (camelCase and spaces to snake_case, lowercase) and matched against patterns
that respect word boundaries where a bare substring would misfire (`ssn` in `lessons`, `zip` in `unzipped`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RISK_ORDER = {"high": 0, "medium": 1, "low": 2}
SCANNED_TYPES = ("model", "snapshot", "seed", "source")
DEFAULT_TAGS = ("pii", "sensitive")


@dataclass(frozen=True)
class PiiPattern:
    name: str  # reported as pii_pattern_matched
    regex: re.Pattern[str]
    risk_level: str  # high | medium | low
    ignore: bool = False  # a name known not to be personal (`contract_address`): matching it ends the search


def pattern(name: str, regex: str, risk_level: str) -> PiiPattern:
    """Compile one pattern; raises re.error for a bad regex and ValueError for a bad risk level."""
    if risk_level not in RISK_ORDER:
        raise ValueError(f"risk_level must be one of {list(RISK_ORDER)}")
    return PiiPattern(name, re.compile(regex, re.IGNORECASE), risk_level)


def configured_patterns(patterns: Sequence[Any] = (), ignore: Sequence[str] = ()) -> tuple[PiiPattern, ...]:
    """What a configuration puts before the built-in patterns: the names never to flag, then its own patterns
    (objects with name, regex and risk_level)."""
    ignored = tuple(PiiPattern("ignored", re.compile(r, re.IGNORECASE), "low", ignore=True) for r in ignore)
    return ignored + tuple(pattern(p.name, p.regex, p.risk_level) for p in patterns)


_B = r"(?:^|_)"  # start of a name token
_E = r"(?:_|$)"  # end of a name token
# Order matters: the first match wins, so the specific patterns come before the generic ones.
BUILTIN_PATTERNS: tuple[PiiPattern, ...] = (
    pattern("ssn", rf"{_B}ssn{_E}|social_?security", "high"),
    pattern("email", r"e_?mail", "high"),
    pattern("phone", rf"phone|{_B}(?:mobile|cell|fax)_?(?:number|no|num){_E}", "high"),
    pattern("payment_card", r"card_?last_?(?:four|4)|last_?four", "medium"),
    # credit_card_amount (a payment-method total) is not a card number: credit_card must end the name or
    # be followed by number/no/num.
    pattern(
        "payment_card",
        rf"credit_?card(?:_?(?:number|num|no|nbr))?$|card_?(?:number|num|no|nbr){_E}|{_B}(?:cc_?number|pan){_E}",
        "high",
    ),
    pattern("passport", r"passport", "high"),
    pattern("driver_license", r"driv(?:er|ers|ing)_?licen[cs]e", "high"),
    pattern("date_of_birth", rf"{_B}dob{_E}|date_of_birth|birth_?date|birthday", "medium"),
    pattern("name", rf"{_B}(?:first|last|full|middle|given|family|sur)_?name{_E}", "medium"),
    pattern("ip_address", rf"ip_?address|{_B}ip(?:_addr)?{_E}", "medium"),
    pattern("address", r"address", "medium"),
    pattern("postal_code", rf"{_B}zip(?:_?code)?{_E}|postal_?code|{_B}post_?code{_E}", "low"),
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s\-.]+")


def normalize(column: str) -> str:
    return _SEPARATORS.sub("_", _CAMEL.sub("_", column)).lower()


def match(column: str, patterns: tuple[PiiPattern, ...]) -> PiiPattern | None:
    name = normalize(column)
    for candidate in patterns:
        if candidate.regex.search(name):
            return None if candidate.ignore else candidate
    return None


def _contains_term(value: Any, terms: tuple[str, ...]) -> bool:
    return isinstance(value, str) and any(term in value.lower() for term in terms)


def has_pii_tag(column: dict[str, Any], terms: tuple[str, ...] = DEFAULT_TAGS) -> bool:
    """A tag, or a meta key (with a truthy value) or meta value, naming one of the terms (pii, sensitive)."""
    if any(_contains_term(tag, terms) for tag in column.get("tags") or ()):
        return True
    for key, value in (column.get("meta") or {}).items():
        if _contains_term(key, terms) and value not in (False, None, "", 0, "false", "no"):
            return True
        if _contains_term(value, terms):
            return True
        if isinstance(value, list) and any(_contains_term(v, terms) for v in value):
            return True
    return False


def has_masking_policy(column: dict[str, Any]) -> bool:
    """Snowflake-style masking policy references in meta, or BigQuery policy tags."""
    if column.get("policy_tags"):
        return True
    for key, value in (column.get("meta") or {}).items():
        if "mask" in str(key).lower() and value not in (False, None, ""):
            return True
        if _contains_term(value, ("masking_policy", "masking policy")):
            return True
        if isinstance(value, dict) and any("mask" in str(k).lower() for k in value):
            return True
    return False


def scan(
    index: dict[str, Any],
    catalog: dict[str, Any] | None,
    patterns: tuple[PiiPattern, ...],
    tag_terms: tuple[str, ...] = DEFAULT_TAGS,
) -> dict[str, Any]:
    """Every column of a model, snapshot, seed or source whose name looks personal, riskiest first."""
    records = index["nodes"]
    observed = (catalog or {}).get("entries") or {}
    findings = []
    for uid in sorted(set(index["columns"]) | set(observed)):
        rec = records.get(uid)
        rtype = (rec or {}).get("resource_type") or uid.split(".", 1)[0]
        if rtype not in SCANNED_TYPES:
            continue
        declared = {c["name"].lower(): c for c in index["columns"].get(uid, ()) if c.get("name")}
        seen_cols = {
            c["column_name"].lower(): c
            for c in (observed.get(uid) or {}).get("columns", ())
            if c.get("column_name")
        }
        for key in sorted(set(declared) | set(seen_cols)):
            col_decl = declared.get(key) or {}
            col_obs = seen_cols.get(key) or {}
            column_name = col_decl.get("name") or col_obs.get("column_name")
            found = match(column_name, patterns)
            if found is None:
                continue
            masked = has_masking_policy(col_decl)
            findings.append(
                {
                    "model_name": _display_name(uid, rec),
                    "node_id": uid,
                    "resource_type": rtype,
                    "column_name": column_name,
                    "pii_pattern_matched": found.name,
                    "has_pii_tag": has_pii_tag(col_decl, tag_terms),
                    "has_masking_policy": masked,
                    "materialization": (rec or {}).get("materialization") if rtype != "source" else None,
                    "data_type": col_obs.get("data_type") or col_decl.get("data_type"),
                    "declared_in": "+".join(
                        s for s, c in (("manifest", col_decl), ("catalog", col_obs)) if c
                    ),
                    # a masking policy mitigates the risk; a tag documents it but does not protect it
                    "risk_level": "low" if masked else found.risk_level,
                }
            )
    findings.sort(
        key=lambda f: (RISK_ORDER[f["risk_level"]], f["has_pii_tag"], f["node_id"], f["column_name"].lower())
    )
    return {
        "findings": findings,
        "total": len(findings),
        "count_by_risk": dict(Counter(f["risk_level"] for f in findings)),
        "untagged": sum(1 for f in findings if not f["has_pii_tag"]),
        "catalog_used": catalog is not None,
    }


def _display_name(uid: str, rec: dict[str, Any] | None) -> str:
    if rec and rec.get("resource_type") == "source" and rec.get("source_name"):
        return f"{rec['source_name']}.{rec.get('name')}"
    if rec and rec.get("name"):
        return rec["name"]
    return uid.split(".", 2)[-1]
