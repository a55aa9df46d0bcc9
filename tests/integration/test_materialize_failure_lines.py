"""`ade materialize` on a configured service nothing answers at: the failed step's line says which service (its
section of ade.yaml), where (the URL without credentials or query) and what to do (issue 26)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from ade_platform.cli import main
from ade_platform.emulators.demo import free_port
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration


def test_unreachable_dbt_cloud_fails_its_step_with_section_url_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()  # bound and released: nothing listens there
    monkeypatch.setenv("ADE_HOME", str(tmp_path / "ade"))
    monkeypatch.setenv("ADE_DBT_CLOUD_URL", f"http://ops:hunter2-secret@127.0.0.1:{port}/api/v2?sig=tok3n")
    monkeypatch.setenv("DBT_CLOUD_API_TOKEN", "dbtc_test_token_value")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--config", str(REPO_ROOT / "ade.yaml"), "materialize", "--select", "dbt_cloud_jobs"])
    text = out.getvalue()
    assert code == 1, text
    (line,) = [line for line in text.splitlines() if "✗ dbt_cloud_jobs failed" in line]
    assert "dbt Cloud (ade.yaml `dbt_cloud:`)" in line, line  # which service, by its section
    assert f"http://127.0.0.1:{port}/api/v2" in line, line  # where
    assert "connection_failed" in line and "did not answer" in line, line
    assert "Start it" in line and "remove the `dbt_cloud:` section" in line, line  # what to do
    for secret in ("hunter2", "ops:", "sig=", "tok3n", "dbtc_test_token_value"):
        assert secret not in text, text
