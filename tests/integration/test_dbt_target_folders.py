"""Where the team's dbt runs write and where ADE's own go (issue 26): `dbt.target_path` defaults to the project's
`target/`, which ADE watches; ADE's own parse and builds write under <home>/dbt/, so neither overwrites the
other's artifacts; `ade status` says which folder is watched. On the demo and on a second generated project."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from ade_platform.cli import main
from ade_platform.defs.dbt.sensors import publish_external_artifacts
from ade_platform.ops import dbt_folders_note
from ade_platform.store import StoreReader
from tests.conftest import REPO_ROOT, settings_for
from tests.mcp.shop_project import materialize, materialized_shop, run_dbt

pytestmark = pytest.mark.integration


def test_the_demo_watches_its_projects_target_and_keeps_its_own_output_apart(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "ade")
    assert settings.dbt_target_path == REPO_ROOT / "dbt_demo" / "target"
    assert settings.dbt_own_output == tmp_path / "ade" / "dbt"
    note = dbt_folders_note(settings)
    assert note is not None
    assert f"watched (the team's dbt runs): {REPO_ROOT / 'dbt_demo' / 'target'}" in note
    assert "default: the project's target/" in note and f"kept apart): {tmp_path / 'ade' / 'dbt'}" in note


@pytest.mark.slow  # materializes a project of its own and runs dbt twice: about a minute
def test_a_teams_build_in_the_project_folder_is_watched_and_never_overwritten(tmp_path: Path) -> None:
    with materialized_shop(tmp_path, "shop") as (config, settings):
        project = tmp_path / "shop"
        target = project / "target"
        # ADE's materialization (parse + build) wrote nothing into the team's folder.
        assert not (target / "run_results.json").exists() and not (target / "manifest.json").exists()
        assert (settings.dbt_own_output / "target" / "manifest.json").is_file()

        # The team's scheduler runs dbt in the project folder.
        team = run_dbt(project, settings.warehouses["shop"].path, "build")
        assert team.returncode == 0, team.stdout[-2000:]
        team_results = target / "run_results.json"
        written = team_results.stat().st_mtime_ns

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["--config", str(config), "status"]) == 0
        assert f"dbt target folder watched (the team's dbt runs): {target}" in out.getvalue(), out.getvalue()

        publish_external_artifacts(settings, settings.dbt_target_path)  # the watching sensor's tick
        source = StoreReader(settings.store_root).latest("dbt_run_results").provenance.source
        assert Path(source["path"]) == team_results, source

        # ADE builds again: the team's artifacts stay as the team's run wrote them.
        code, log = materialize(settings)
        assert code == 0, log[-2000:]
        assert team_results.stat().st_mtime_ns == written
