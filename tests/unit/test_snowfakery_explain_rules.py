"""The explain rules on their own: messages in, located construct, rule and edit out (no sandbox)."""

from __future__ import annotations

from ade_platform.lib.snowfakery.explain import RecipeFacts, explain, standard_plugins

RECIPE = "- object: Account\n  nickname: acme\n- object: Contact\n  count: lots\n  fields:\n    name: x\n"


def _explain(message: str, line: int | None, facts: RecipeFacts | None = None, kind: str = "Error") -> dict:
    problem = {"kind": kind, "message": message, "filename": "r.yml", "line": line}
    return explain(
        problem, lambda name: RECIPE.splitlines() if name == "r.yml" else None, facts or RecipeFacts()
    )


def test_location_parsed_from_a_run_error_detail() -> None:
    out = _explain("Cannot evaluate lots as number (r.yml:4)", None)
    assert out["location"] == {"filename": "r.yml", "line": 4}
    assert out["message"] == "Cannot evaluate lots as number"
    assert (out["fix"]["before"], out["fix"]["after"]) == ("  count: lots", "  count: 1")


def test_count_from_a_declared_option_uses_the_option() -> None:
    out = _explain("Cannot evaluate lots as number", 4, RecipeFacts(options=["lots_of"]))
    assert out["fix"]["after"] == "  count: ${{lots_of}}"


def test_reference_without_a_close_name_asks_for_a_declaration() -> None:
    facts = RecipeFacts(tables=["Account", "Contact"], nicknames=["acme"])
    out = _explain("reference: Unknown object/nickname 'Zebra'", 6, facts)
    assert out["fix"]["before"] is None and out["fix"]["line"] is None
    assert "- object: Zebra" in out["fix"]["description"]
    assert "Account, Contact, acme" in out["rule"]


def test_unknown_message_is_located_with_no_edit() -> None:
    out = _explain("something new went wrong", 6)
    assert out["source_line"] == "    name: x"
    assert out["fix"] == {
        "description": out["fix"]["description"],
        "line": None,
        "before": None,
        "after": None,
    }


def test_standard_plugins_are_read_from_the_installed_package() -> None:
    plugins = standard_plugins()
    assert "snowfakery.standard_plugins.Counters" in plugins
    assert "snowfakery.standard_plugins.datasets.Dataset" in plugins
