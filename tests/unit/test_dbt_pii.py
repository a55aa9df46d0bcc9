"""PII risk from column names, tags, meta and masking policies (lib.dbt.pii): positives need our own fixtures,
since no public artifact marks PII."""

from __future__ import annotations

import pytest

from ade_platform.lib.dbt import pii
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.dbt.schema import catalog_index
from tests.mcp.dbt_support import PROJECT, catalog, manifest, model, source

CUSTOMERS = f"model.{PROJECT}.customers"


@pytest.mark.parametrize(
    "column,pattern,risk",
    [
        ("email", "email", "high"),
        ("customerEmail", "email", "high"),
        ("email_address", "email", "high"),
        ("SSN", "ssn", "high"),
        ("social_security_number", "ssn", "high"),
        ("phone_number", "phone", "high"),
        ("mobile_no", "phone", "high"),
        ("credit_card_number", "payment_card", "high"),
        ("card_number", "payment_card", "high"),
        ("card_last_four", "payment_card", "medium"),
        ("passport_no", "passport", "high"),
        ("drivers_license", "driver_license", "high"),
        ("date_of_birth", "date_of_birth", "medium"),
        ("DOB", "date_of_birth", "medium"),
        ("first_name", "name", "medium"),
        ("FullName", "name", "medium"),
        ("ip_address", "ip_address", "medium"),
        ("client_ip", "ip_address", "medium"),
        ("billing_address", "address", "medium"),
        ("zip", "postal_code", "low"),
        ("postal_code", "postal_code", "low"),
    ],
)
def test_builtin_patterns_match(column: str, pattern: str, risk: str) -> None:
    found = pii.match(column, pii.BUILTIN_PATTERNS)
    assert found is not None and (found.name, found.risk_level) == (pattern, risk)


@pytest.mark.parametrize(
    "column",
    ["lessons", "unzipped", "adobe_id", "username", "name", "shipping_fee", "credit_card_amount", "order_id"],
)
def test_builtin_patterns_do_not_misfire(column: str) -> None:
    assert pii.match(column, pii.BUILTIN_PATTERNS) is None


def test_tags_meta_and_masking() -> None:
    assert pii.has_pii_tag({"tags": ["PII"]})
    assert pii.has_pii_tag({"tags": ["contains_pii"]})
    assert pii.has_pii_tag({"meta": {"sensitive": True}})
    assert pii.has_pii_tag({"meta": {"classification": "PII-direct"}})
    assert not pii.has_pii_tag({"meta": {"pii": False}, "tags": ["finance"]})
    assert pii.has_masking_policy({"meta": {"masking_policy": "email_mask"}})
    assert pii.has_masking_policy({"meta": {"snowflake": {"masking_policy": "m"}}})
    assert pii.has_masking_policy({"policy_tags": ["projects/p/taxonomies/1/policyTags/2"]})
    assert not pii.has_masking_policy({"meta": {"owner": "data"}})


def test_scan_merges_manifest_and_catalog_and_ranks() -> None:
    graph = manifest(
        source("customers"),
        model(
            "customers",
            [f"source.{PROJECT}.raw.customers"],
            columns={
                "email": {"tags": ["pii"]},
                "phone": {"meta": {"masking_policy": "phone_mask"}},
                "first_name": {},
                "zip": {},
                "order_count": {},
            },
            materialized="table",
        ),
        model("tests_only", []),
    )
    cat = catalog(
        {
            CUSTOMERS: [
                ("email", "VARCHAR"),
                ("phone", "VARCHAR"),
                ("first_name", "VARCHAR"),
                ("ssn", "VARCHAR"),
            ],
            f"source.{PROJECT}.raw.customers": [("EMAIL", "TEXT"), ("ID", "NUMBER")],
        }
    )
    report = pii.scan(build_lineage_index(graph), catalog_index(cat), pii.BUILTIN_PATTERNS)
    rows = {(f["node_id"].rsplit(".", 1)[-1], f["column_name"]): f for f in report["findings"]}
    assert set(rows) == {
        ("customers", "email"),
        ("customers", "phone"),
        ("customers", "first_name"),
        ("customers", "zip"),
        ("customers", "ssn"),
        ("customers", "EMAIL"),
    }
    assert (
        rows[("customers", "email")]["has_pii_tag"] and rows[("customers", "email")]["risk_level"] == "high"
    )
    assert (
        rows[("customers", "phone")]["has_masking_policy"]
        and rows[("customers", "phone")]["risk_level"] == "low"
    )
    assert rows[("customers", "ssn")]["declared_in"] == "catalog"
    assert rows[("customers", "email")]["declared_in"] == "manifest+catalog"
    assert rows[("customers", "EMAIL")]["model_name"] == "raw.customers"
    assert rows[("customers", "EMAIL")]["materialization"] is None
    assert rows[("customers", "email")]["materialization"] == "table"
    risks = [f["risk_level"] for f in report["findings"]]
    assert risks == sorted(risks, key=pii.RISK_ORDER.__getitem__)
    high = [f for f in report["findings"] if f["risk_level"] == "high"]
    assert [f["has_pii_tag"] for f in high] == sorted(f["has_pii_tag"] for f in high)  # untagged first
    assert report["untagged"] == len(report["findings"]) - 1


def test_configured_patterns_come_first() -> None:
    graph = manifest(model("people", [], columns={"national_id": {}, "tax_number": {}}))
    patterns = (pii.pattern("national_id", r"national_?id|tax_?number", "high"), *pii.BUILTIN_PATTERNS)
    report = pii.scan(build_lineage_index(graph), None, patterns)
    assert {f["pii_pattern_matched"] for f in report["findings"]} == {"national_id"}
    assert report["catalog_used"] is False
    with pytest.raises(ValueError):
        pii.pattern("x", "a", "extreme")


def test_ignored_names_are_never_flagged_and_the_rest_still_are() -> None:
    graph = manifest(
        model("transfers", [], columns={"contract_address": {}, "billing_address": {}, "sender_email": {}})
    )
    patterns = (*pii.configured_patterns(ignore=[r"^contract_address$"]), *pii.BUILTIN_PATTERNS)
    found = {
        f["column_name"]: f["pii_pattern_matched"]
        for f in pii.scan(build_lineage_index(graph), None, patterns)["findings"]
    }
    assert found == {"billing_address": "address", "sender_email": "email"}
    unconfigured = pii.scan(build_lineage_index(graph), None, pii.BUILTIN_PATTERNS)["findings"]
    assert "contract_address" in {f["column_name"] for f in unconfigured}
