"""The published tool surface is a contract: any change must be deliberate (`make snapshot`)."""

from __future__ import annotations

import json

from tests.contract.surface import SNAPSHOT, current_surface


def test_published_surface_matches_the_committed_snapshot() -> None:
    expected = json.loads(SNAPSHOT.read_text())
    actual = current_surface()
    added = sorted(set(actual["tools"]) - set(expected["tools"]))
    removed = sorted(set(expected["tools"]) - set(actual["tools"]))
    assert not added and not removed, f"tools added {added}, removed {removed}: run `make snapshot`"
    for name, spec in expected["tools"].items():
        assert actual["tools"][name] == spec, f"tool {name} changed: run `make snapshot` and review the diff"
    assert actual == expected, "resources, templates or prompts changed: run `make snapshot`"


def test_snapshot_has_no_machine_paths() -> None:
    text = SNAPSHOT.read_text()
    from tests.conftest import REPO_ROOT

    assert str(REPO_ROOT) not in text and str(REPO_ROOT.parent) + "/" not in text
