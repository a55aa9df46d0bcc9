"""The gateway through the MCP protocol: mounting, toolset selection, provenance, structured errors.

These tests publish real dbt artifacts from the shared corpus into a temporary store: no Dagster involved.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ade_platform.config import Settings, load_settings
from ade_platform.lib.dbt.publish import publish_target_dir
from ade_platform.store import StoreWriter
from mcp_bridge.errors import ERROR_CODES
from mcp_bridge.server import build_server
from tests.conftest import REPO_ROOT
from tests.helpers import call_tool, call_tools, list_tools


def _settings(tmp_path: Path, extra: str = "") -> Settings:
    cfg = tmp_path / "ade.yaml"
    cfg.write_text(f"home: {tmp_path / 'home'}\n{extra}")
    return load_settings(cfg, env={})


@pytest.fixture
def corpus_server(corpus_set, tmp_path: Path):
    set_dir, facts = corpus_set
    settings = _settings(tmp_path)
    publish_target_dir(StoreWriter(settings.store_root), set_dir)
    return build_server(settings), facts


def test_lineage_matches_corpus_facts(corpus_server) -> None:
    server, facts = corpus_server
    model = facts["chosen_model"]
    uid = model["unique_id"]
    (ok_up, up), (ok_down, down) = call_tools(
        server,
        [
            ("dbt_get_lineage", {"node_id": uid, "direction": "upstream", "depth": 1}),
            ("dbt_get_lineage", {"node_id": uid, "direction": "downstream", "depth": 1}),
        ],
    )
    assert ok_up and ok_down
    assert sorted(n["node_id"] for n in up["nodes"] if n["depth"] == 1) == model["direct_parents"]
    assert sorted(n["node_id"] for n in down["nodes"] if n["depth"] == 1) == sorted(
        model["direct_children_non_test"]
    )
    assert up["root_node"] == uid and up["truncated"] is False
    assert all(e["to"] == uid for e in up["edges"] if e["from"] in model["direct_parents"])
    prov = up["provenance"]
    assert prov["asset"] == "dbt_lineage_index" and prov["source"] == "cache" and prov["age_seconds"] >= 0


def test_full_traversal_and_node_cap(corpus_set, tmp_path: Path) -> None:
    set_dir, facts = corpus_set
    settings = _settings(tmp_path, "limits:\n  max_lineage_nodes: 2\n")
    publish_target_dir(StoreWriter(settings.store_root), set_dir)
    uid = facts["chosen_model"]["unique_id"]
    ok, body = call_tool(build_server(settings), "dbt_get_lineage", {"node_id": uid, "direction": "upstream"})
    assert ok
    # The node limit is the page size (docs/PAGING.md): total_nodes counts the whole graph, the pages add up to it.
    assert len(body["nodes"]) <= 2
    assert body["truncated"] is (body["total_nodes"] > 2)
    if len(facts["chosen_model"]["direct_parents"]) >= 2:
        assert body["truncated"] is True
    seen = [n["node_id"] for n in body["nodes"]]
    while body["next_cursor"]:
        ok, body = call_tool(
            build_server(settings),
            "dbt_get_lineage",
            {"node_id": uid, "direction": "upstream", "cursor": body["next_cursor"]},
        )
        assert ok and len(body["nodes"]) <= 2
        seen += [n["node_id"] for n in body["nodes"]]
    assert len(seen) == len(set(seen)) == body["total_nodes"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"node_id": "model.nope.nothing", "direction": "upstream"}, "node_not_found"),
        ({"node_id": "x", "direction": "sideways"}, "invalid_argument"),
        ({"node_id": "x", "direction": "upstream", "depth": -1}, "invalid_argument"),
        ({"direction": "upstream"}, "invalid_argument"),
        ({"node_id": "", "direction": "upstream"}, "invalid_argument"),
        ({"node_id": "x", "direction": "upstream", "surprise": 1}, "invalid_argument"),
    ],
)
def test_bad_input_is_a_structured_error(corpus_server, args: dict, code: str) -> None:
    server, _ = corpus_server
    ok, err = call_tool(server, "dbt_get_lineage", args)
    assert not ok
    assert err["error"] == code and err["detail"] and err["hint"]
    assert "Traceback" not in json.dumps(err)


def test_not_materialized_says_how_to_materialize(tmp_path: Path) -> None:
    ok, err = call_tool(
        build_server(_settings(tmp_path)), "dbt_get_lineage", {"node_id": "a", "direction": "upstream"}
    )
    assert not ok and err["error"] == "asset_not_materialized"
    assert "ade materialize --select dbt_lineage_index" in err["hint"]


def test_corrupt_snapshot_is_a_structured_error_without_paths(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    StoreWriter(settings.store_root).publish("dbt_lineage_index", {"nodes": {}})
    (Path(settings.store_root.url) / "dbt_lineage_index" / "LATEST").write_text("garbage")
    ok, err = call_tool(build_server(settings), "dbt_get_lineage", {"node_id": "a", "direction": "upstream"})
    assert not ok and err["error"] == "snapshot_corrupt"
    assert str(tmp_path) not in json.dumps(err)


def test_toolset_selection_and_single_toolset_servers(tmp_path: Path) -> None:
    only_project = _settings(tmp_path, "mcp:\n  toolsets: [dbt-project]\n")
    names = {t.name for t in list_tools(build_server(only_project))}
    assert "dbt_get_lineage" not in names
    alone = {t.name for t in list_tools(build_server(_settings(tmp_path), only="dbt-artifacts"))}
    assert "dbt_get_lineage" in alone


def test_every_tool_has_annotations_and_a_description() -> None:
    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": "/nonexistent-ade-home"})
    for tool in list_tools(build_server(settings)):
        ann = tool.annotations
        assert ann is not None, tool.name
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert getattr(ann, hint) is not None, f"{tool.name} lacks {hint}"
        assert tool.description and len(tool.description) > 20, tool.name
        assert tool.output_schema is not None, tool.name


def test_error_codes_have_hints() -> None:
    assert all(isinstance(h, str) and h for h in ERROR_CODES.values())


def test_portable_tool_names_have_no_dots(tmp_path: Path) -> None:
    spec_names = {t.name for t in list_tools(build_server(_settings(tmp_path)))}
    portable = {
        t.name for t in list_tools(build_server(_settings(tmp_path, "mcp:\n  tool_names: portable\n")))
    }
    assert any("." in name for name in spec_names), "the snowfakery spec names its tools with dots"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in portable), sorted(portable)
    assert len(portable) == len(spec_names)


@pytest.mark.parametrize("only", [None, "warehouse"])
def test_server_info_names_ade_and_its_version(tmp_path: Path, only: str | None) -> None:
    import asyncio

    from fastmcp import Client

    from ade_platform import __version__

    async def server_info() -> tuple[str, str]:
        async with Client(build_server(_settings(tmp_path), only=only)) as client:
            info = client.server_info
            assert info is not None
            return info.name, info.version

    name, version = asyncio.run(server_info())
    assert version == __version__
    assert name == ("ade-platform" if only is None else only)
