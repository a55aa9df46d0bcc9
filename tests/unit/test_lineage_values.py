"""Where a silent change began (lib/lineage/gather_values.py): the relations of a chain, the origin of the start's
value change (the most upstream node that changed the same way), and its cause (logic, source data, value)."""

from __future__ import annotations

from ade_platform.lib.lineage.gather_values import (
    Compared,
    explains,
    relation_hops,
    value_conditions,
    value_events,
)
from ade_platform.lib.lineage.trace import views, walk
from ade_platform.lib.profiles.compare import ValueChange

WH = "warehouse:wh:table:"


def _graph() -> dict:
    """raw.orders -> source -> stg_orders (view) -> fct_orders (table) -> tile; raw.customers -> source ->
    stg_customers -> fct_orders."""
    nodes = [
        {"id": "bi:mb:tile:1", "kind": "tile", "system": "mb", "name": "Orders"},
    ]
    edges = [{"from": f"{WH}db.main.fct_orders", "to": "bi:mb:tile:1", "kind": "reads"}]
    for entity in ("orders", "customers"):
        raw, src, stg = f"{WH}db.raw.{entity}", f"dbt:source.p.raw.{entity}", f"dbt:model.p.stg_{entity}"
        nodes += [
            {"id": raw, "kind": "table", "system": "warehouse", "warehouse": "wh", "name": f"db.raw.{entity}"},
            {"id": src, "kind": "source", "system": "dbt", "name": entity, "relation": f"db.raw.{entity}",
             "unique_id": f"source.p.raw.{entity}"},
            {"id": stg, "kind": "model", "system": "dbt", "name": f"stg_{entity}",
             "relation": f"db.main.stg_{entity}", "unique_id": f"model.p.stg_{entity}"},
            {"id": f"{WH}db.main.stg_{entity}", "kind": "view", "system": "warehouse", "warehouse": "wh",
             "name": f"db.main.stg_{entity}"},
        ]  # fmt: skip
        edges += [
            {"from": raw, "to": src, "kind": "feeds"},
            {"from": src, "to": stg, "kind": "feeds"},
            {"from": stg, "to": f"{WH}db.main.stg_{entity}", "kind": "materializes"},
            {"from": stg, "to": "dbt:model.p.fct_orders", "kind": "feeds"},
        ]
    nodes += [
        {"id": "dbt:model.p.fct_orders", "kind": "model", "system": "dbt", "name": "fct_orders",
         "relation": "db.main.fct_orders", "unique_id": "model.p.fct_orders"},
        {"id": f"{WH}db.main.fct_orders", "kind": "table", "system": "warehouse", "warehouse": "wh",
         "name": "db.main.fct_orders"},
    ]  # fmt: skip
    edges.append({"from": "dbt:model.p.fct_orders", "to": f"{WH}db.main.fct_orders", "kind": "materializes"})
    return views({"nodes": nodes, "edges": [{**e, "how": "test"} for e in edges]})


def _compared(v: dict, changes: dict[str, list[ValueChange]]) -> list[Compared]:
    hops = relation_hops(v, walk(v, "bi:mb:tile:1", "upstream", None, 100))
    return [Compared(h, 1000.0, 4600.0, changes.get(h.node, [])) for h in hops]


def _rows(relation: str, before: int, after: int) -> ValueChange:
    return ValueChange(relation, None, "row_count", before, after, f"rows {before} \u2192 {after}", 0.3)


def _mix(relation: str, column: str, value: str, before: int, after: int) -> ValueChange:
    detail = f"`{column}`: `{value}` {before} \u2192 {after} rows"
    return ValueChange(relation, column, "value_mix", None, None, detail, 0.2, (value,))


def test_the_chain_relations_are_one_per_relation_named_by_their_dbt_node() -> None:
    v = _graph()
    hops = {h.node: h for h in relation_hops(v, walk(v, "bi:mb:tile:1", "upstream", None, 100))}
    assert set(hops) == {
        "dbt:model.p.fct_orders",
        "dbt:model.p.stg_orders",
        "dbt:model.p.stg_customers",
        "dbt:source.p.raw.orders",
        "dbt:source.p.raw.customers",
    }
    fct = hops["dbt:model.p.fct_orders"]
    assert fct.depth == 1 and fct.relation == "db.main.fct_orders" and fct.warehouse == "wh"
    assert fct.inputs >= {"dbt:model.p.stg_orders", "dbt:source.p.raw.orders"}
    assert hops["dbt:source.p.raw.orders"].inputs == frozenset()


def test_a_source_change_travelling_down_is_named_at_the_source() -> None:
    v = _graph()
    compared = _compared(
        v,
        {
            "dbt:model.p.fct_orders": [_rows("db.main.fct_orders", 500, 250)],
            "dbt:model.p.stg_orders": [_rows("db.main.stg_orders", 500, 250)],
            "dbt:source.p.raw.orders": [_rows("db.raw.orders", 500, 250)],
            # an unrelated change on the other branch that is not the start's (a category's mix)
            "dbt:source.p.raw.customers": [_mix("db.raw.customers", "region", "eu", 10, 40)],
        },
    )
    (cond,) = value_conditions(v, compared, {})
    assert cond.cause == "source_data_change" and cond.node == "dbt:source.p.raw.orders"
    assert "rows 500 \u2192 250" in cond.change and cond.extra["value_strength"] == 2
    travelled = {t["name"] for t in cond.evidence["propagated_to"]}
    assert travelled == {"stg_orders", "fct_orders"}


def test_a_model_whose_inputs_did_not_change_is_the_origin_and_its_code_change_makes_it_logic() -> None:
    v = _graph()
    changes = {
        "dbt:model.p.fct_orders": [_mix("db.main.fct_orders", "status", "gift_card", 412, 0)],
        "dbt:model.p.stg_orders": [_mix("db.main.stg_orders", "status", "gift_card", 412, 0)],
    }
    code = {
        "dbt:model.p.stg_orders": {"change": "SQL edited", "who": "in commit 1a2b3c4 by Alice", "git": {}}
    }
    (cond,) = value_conditions(v, _compared(v, changes), code)
    assert cond.cause == "logic_change" and cond.name == "stg_orders" and cond.object == "stg_orders.status"
    assert "`gift_card` 412 \u2192 0 rows" in cond.change and "commit 1a2b3c4 by Alice" in cond.change
    assert cond.extra["value_strength"] == 3
    (plain,) = value_conditions(v, _compared(v, changes), {})
    assert plain.cause == "value_change" and "did not change" in plain.change
    assert plain.extra["value_strength"] == 0  # its inputs were read and did not change: no confident cause


def test_a_model_with_no_code_change_passes_on_what_its_inputs_changed_even_in_another_shape() -> None:
    v = _graph()
    pivoted = ValueChange(
        "db.main.fct_orders", "gift_card_amount", "range", {}, {}, "`gift_card_amount`: mean 3 \u2192 9", 1.0
    )
    changes = {
        "dbt:model.p.fct_orders": [pivoted],  # the category became a column below: no rule matches it
        "dbt:model.p.stg_orders": [_mix("db.main.stg_orders", "method", "gift_card", 40, 412)],
        "dbt:source.p.raw.orders": [_mix("db.raw.orders", "method", "gift_card", 40, 412)],
    }
    (cond,) = value_conditions(v, _compared(v, changes), {})
    assert cond.cause == "source_data_change" and cond.node == "dbt:source.p.raw.orders", cond.change
    assert cond.object == "orders.method" and cond.extra["value_strength"] == 2


def test_a_change_of_a_handful_of_rows_is_never_confident() -> None:
    v = _graph()
    few = ValueChange("db.main.fct_orders", "n", "value_mix", None, None, "`n`: `3` 0 \u2192 3 rows", 0.004)
    changes = {
        "dbt:model.p.fct_orders": [few],
        "dbt:source.p.raw.orders": [ValueChange("db.raw.orders", "n", "value_mix", None, None, "x", 0.004)],
    }
    (cond,) = value_conditions(v, _compared(v, changes), {})
    assert cond.extra["value_strength"] == 0


def test_nothing_changed_is_no_condition_and_an_upstream_change_the_start_does_not_show_is_weak() -> None:
    v = _graph()
    assert value_conditions(v, _compared(v, {}), {}) == []
    only_up = {"dbt:source.p.raw.customers": [_mix("db.raw.customers", "region", "eu", 10, 40)]}
    (cond,) = value_conditions(v, _compared(v, only_up), {})
    assert cond.extra["value_strength"] == 0  # the start's own values did not move: no confident verdict


def test_changes_are_matched_as_they_travel() -> None:
    assert explains(_rows("a", 10, 5), _rows("b", 10, 5))
    assert not explains(_mix("a", "status", "x", 5, 0), _rows("b", 10, 5))  # the filter shows where it is
    assert explains(_mix("a", "status", "x", 5, 0), _mix("b", "status", "x", 5, 0))
    assert not explains(_mix("a", "region", "x", 5, 0), _mix("b", "status", "y", 5, 0))


def test_value_changes_are_timeline_events() -> None:
    v = _graph()
    compared = _compared(v, {"dbt:source.p.raw.orders": [_rows("db.raw.orders", 500, 250)]})
    (event,) = value_events(compared)
    assert event["kind"] == "value_change" and event["node"] == "dbt:source.p.raw.orders"
    assert event["source"]["source"] == "live" and "rows 500 \u2192 250" in event["change"]


def test_only_a_change_the_start_shows_makes_a_confident_verdict() -> None:
    from ade_platform.lib.lineage.evidence import LiveFindings, Records
    from ade_platform.lib.lineage.history import History
    from ade_platform.lib.lineage.incident import explain
    from ade_platform.lib.lineage.trace import Health, HealthInputs

    v = _graph()
    empty = Records(Health(HealthInputs()), History(_NoVersions()), {}, {}, {})

    def answer(changes: dict[str, list[ValueChange]]) -> dict:
        live = LiveFindings(now=4600.0, values={c.hop.node: c for c in _compared(v, changes)})
        return explain(v, "bi:mb:tile:1", empty, live)

    quiet = answer({})
    assert not quiet["confident"] and "looks healthy" in quiet["verdict"]
    upstream = answer({"dbt:source.p.raw.customers": [_mix("db.raw.customers", "region", "eu", 10, 40)]})
    assert upstream["causes"][0]["cause"] == "source_data_change" and not upstream["confident"]
    start = answer(
        {
            "dbt:model.p.fct_orders": [_rows("db.main.fct_orders", 500, 250)],
            "dbt:source.p.raw.orders": [_rows("db.raw.orders", 500, 250)],
        }
    )
    top = start["causes"][0]
    assert top["cause"] == "source_data_change" and top["node"] == "dbt:source.p.raw.orders"
    assert start["confidence"] == "high" and "builds green, but its values changed" in start["verdict"]
    assert "`orders`: rows 500 \u2192 250" in start["verdict"], start["verdict"]


class _NoVersions:
    def versions(self, asset: str) -> list:
        return []

    def load(self, asset: str, version: str) -> None:
        return None
