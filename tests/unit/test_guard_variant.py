"""VARIANT structure inference: keys and types only, bounded sample, maps keyed by values collapse."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ade_platform.lib.guard import infer_variant_interface


def _body(ts: str) -> str:
    return "\n".join(line for line in ts.splitlines() if not line.startswith("//"))


def test_nested_objects_optional_keys_unions_and_arrays() -> None:
    values = [
        '{"order_id": "A-1", "total": 12.5, "paid": true, "items": [{"sku": "X", "qty": 2}], "meta": {"src": "web"}}',
        '{"order_id": "A-2", "total": 3, "paid": false, "items": [], "coupon": null}',
        {
            "order_id": 7,
            "total": 1,
            "paid": True,
            "items": [{"sku": "Y", "qty": 1, "gift": True}],
            "meta": {"src": "app"},
        },
    ]
    ts = _body(infer_variant_interface(values, "order payload", 100))
    assert ts == (
        "interface OrderPayload {\n"
        "  coupon?: null;\n"
        "  items: {\n"
        "    gift?: boolean;\n"
        "    qty: number;\n"
        "    sku: string;\n"
        "  }[];\n"
        "  meta?: {\n"
        "    src: string;\n"
        "  };\n"
        "  order_id: string | number;\n"
        "  paid: boolean;\n"
        "  total: number;\n"
        "}"
    )


def test_no_value_ever_appears() -> None:
    secrets = ["123-45-6789", "jane@example.com", "Sekr3t", 8675309, 2.718281]
    values = [
        json.dumps(
            {"ssn": secrets[0], "email": secrets[1], "pw": secrets[2], "n": secrets[3], "f": secrets[4]}
        )
    ]
    values += ['"just-a-string-value"', "not json at all 99999", '["tag-one", 55555]']
    ts = infer_variant_interface(values, "p", 10)
    for secret in [*map(str, secrets), "just-a-string-value", "not json", "99999", "tag-one", "55555"]:
        assert secret not in ts


def test_maps_keyed_by_values_become_records() -> None:
    by_ssn = ['{"123-45-6789": {"score": 1}}', '{"987-65-4321": {"score": 2}}']
    ts = infer_variant_interface(by_ssn, "scores", 10)
    assert "Record<string, {" in ts and "123-45-6789" not in ts and "score: number;" in ts
    by_email = infer_variant_interface(['{"a@b.com": 1, "c@d.org": 2}'], "m", 10)
    assert "Record<string, number>" in by_email and "@" not in _body(by_email)
    by_id = infer_variant_interface(['{"user_10482": true}'], "m", 10)
    assert "Record<string, boolean>" in by_id and "10482" not in by_id
    by_name = infer_variant_interface(['{"Jane Doe": 1}'], "m", 10)
    assert "Jane" not in by_name
    growing = [json.dumps({f"k{chr(97 + i % 26)}{chr(97 + i // 26)}": i}) for i in range(60)]
    ts = infer_variant_interface(growing, "m", 100)
    assert "Record<string, number>" in ts


def test_sample_is_bounded() -> None:
    consumed = 0

    def values() -> Iterator[Any]:
        nonlocal consumed
        while True:
            consumed += 1
            yield {"a": 1}

    ts = infer_variant_interface(values(), "bounded", 5)
    assert consumed <= 6 and "from 5 sampled" in ts


def test_non_object_roots_and_edge_cases() -> None:
    assert _body(infer_variant_interface(["[1, 2]", "[]"], "nums", 10)) == "type Nums = number[];"
    assert _body(infer_variant_interface(['[1, "a"]', "5", "null"], "mixed", 10)) == (
        "type Mixed = (string | number)[] | number | null;"
    )
    assert _body(infer_variant_interface(["[]"], "empty_list", 10)) == "type EmptyList = unknown[];"
    assert _body(infer_variant_interface([], "nothing", 10)) == "type Nothing = unknown;"
    assert (
        _body(infer_variant_interface(['{"a": 1}', "null"], "maybe", 10))
        == "type Maybe = {\n  a: number;\n} | null;"
    )
    assert _body(infer_variant_interface(["{}"], "e", 10)) == "type E = Record<string, never>;"
    assert (
        infer_variant_interface([{"a": 1}], "123 bad name!", 10)
        .splitlines()[1]
        .startswith("interface Variant123BadName")
    )


def test_quoted_keys_and_depth_limit() -> None:
    ts = infer_variant_interface(['{"content-type": "x", "$ref": "y"}'], "h", 10)
    assert '"content-type": string;' in ts and "$ref: string;" in ts
    deep: Any = 1
    for _ in range(30):
        deep = {"n": deep}
    ts = infer_variant_interface([deep], "deep", 1)
    assert "unknown" in ts
    # JSON text nested beyond the parser's recursion limit is "unknown", not a crash.
    assert (
        _body(infer_variant_interface(["[" * 100_000 + "]" * 100_000], "deeper", 1))
        == "type Deeper = unknown;"
    )
