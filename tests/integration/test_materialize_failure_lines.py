"""`ade materialize` on a configured service nothing answers at: the failed step's line says which service (its
section of ade.yaml), where (the URL without credentials or query) and what to do (issue 26)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from ade_platform.cli import main
from ade_platform.clients.dbt_cloud import DbtCloudError
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.step_failure import step_failure
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


def test_a_refusal_keeps_its_code_detail_and_hint_and_the_address_loses_its_secrets() -> None:
    system = Polled(
        "dbt Cloud",
        "https://svc:pw-9f@cloud.example.com/api/v2?token=abc#frag",
        lambda: None,
        (DbtCloudError,),
        "dbt_cloud",
    )
    refused = step_failure(
        system, DbtCloudError("auth_failed", "dbt Cloud refused the token", hint="Renew it.")
    )
    assert refused.description == (
        "dbt Cloud (ade.yaml `dbt_cloud:`) at https://cloud.example.com/api/v2 refused: auth_failed: "
        "dbt Cloud refused the token. Renew it."
    )
    plain = step_failure(system, DbtCloudError("not_found", "job 9 does not exist"))
    assert plain.description.endswith(
        "not_found: job 9 does not exist. Check the `dbt_cloud:` section of ade.yaml."
    )
