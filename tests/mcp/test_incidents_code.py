"""Code changes as causes, through MCP, on a generated project under git (not the demo): the project is
materialized with `ade materialize`, then an analyst changes a model upstream (committed, or only saved) and runs
dbt from a terminal; the model below fails. lineage_explain_incident from the failed model must name the upstream
node whose code changed, the change and who made it, above the model that merely failed; a harmless refactor
gives no confident code-change verdict.

Before this, the failed model itself ranked first and the commit was not used.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.shop_project import materialized_shop, run_dbt

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

SEED_CSV = "payment_id,order_id,amount\n1,1,10.5\n2,2,20.0\n"
SEED_YML = """
version: 2
seeds:
  - name: raw_payments
    config:
      column_types:
        amount: decimal(6,2)
"""
EXTRA = {
    "seeds/raw_payments.csv": SEED_CSV,
    "seeds/schema.yml": SEED_YML,
    "models/payment_totals.sql": "select order_id, sum(amount) as paid from {{ ref('raw_payments') }} group by 1\n",
}
_ALICE = {"GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": "alice@example.com"}


def _git(project: Path, *args: str, author: dict[str, str] | None = None) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Builder",
        "GIT_AUTHOR_EMAIL": "builder@example.com",
        "GIT_COMMITTER_NAME": "Builder",
        "GIT_COMMITTER_EMAIL": "builder@example.com",
        **(author or {}),
    }
    subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    root = tmp_path_factory.mktemp("code_changes")
    with materialized_shop(root, "code_shop", EXTRA, ("dbt-artifacts", "warehouse", "lineage")) as (
        _,
        settings,
    ):
        project = settings.dbt.project_dir  # type: ignore[union-attr]
        (project / ".gitignore").write_text("target/\nlogs/\n*.duckdb\n")
        for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "Initial project")):
            _git(project, *args)
        yield settings


def _explain(settings: Settings, model: str) -> dict:
    ok, body = call_tool(
        build_server(settings), "lineage_explain_incident", {"start_kind": "dbt_node", "start": model}
    )
    assert ok, body
    return body


def _dbt(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return run_dbt(settings.dbt.project_dir, settings.warehouses["shop"].path, *args)  # type: ignore[union-attr,arg-type]


def _restore(settings: Settings, path: Path, text: str, committed: bool, *flags: str) -> None:
    path.write_text(text)
    if committed:
        _git(path.parents[1], "commit", "-qam", f"Revert {path.name}")
    result = _dbt(settings, "build", *flags)
    assert result.returncode == 0, result.stdout[-3000:]
    body = _explain(settings, "orders")  # the gateway publishes the green build before the next incident
    assert body["symptom"]["status"] == "ok", body["symptom"]


def _rename_status(settings: Settings) -> tuple[Path, str]:
    path = settings.dbt.project_dir / "models" / "stg_orders.sql"  # type: ignore[union-attr]
    original = path.read_text()
    path.write_text(original.replace("'placed'::varchar as status", "'placed'::varchar as order_status"))
    assert path.read_text() != original
    return path, original


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "uncommitted"])
def test_an_upstream_rename_is_the_cause_of_the_failure_below_it(shop: Settings, committed: bool) -> None:
    project = shop.dbt.project_dir  # type: ignore[union-attr]
    path, original = _rename_status(shop)
    if committed:
        _git(project, "commit", "-qam", "Rename status in stg_orders", author=_ALICE)
    try:
        result = _dbt(shop, "run")
        assert result.returncode == 1, result.stdout[-3000:]
        body = _explain(shop, "orders")
    finally:
        _restore(shop, path, original, committed)
    assert body["symptom"]["status"] == "failed" and body["symptom"]["columns"] == ["status"], body["symptom"]
    top = body["causes"][0]
    assert top["cause"] == "code_change" and top["name"] == "stg_orders", body["causes"][:3]
    assert "`status` renamed to `order_status`" in top["change"], top
    assert top["explains_symptom"] and body["confidence"] == "high", body["verdict"]
    git = top["evidence"]["git"]
    if committed:
        assert git["author"] == "Alice" and git["uncommitted"] is False, git
        assert f"in commit {git['sha'][:7]} by Alice" in body["verdict"], body["verdict"]
    else:
        assert git["uncommitted"] is True and git["files"] == ["models/stg_orders.sql"], git
        assert "uncommitted edit of models/stg_orders.sql" in body["verdict"], body["verdict"]
    # the model that merely failed is still listed, below its cause
    failed = next(c for c in body["causes"] if c["cause"] == "failed_model" and c["name"] == "orders")
    assert failed["rank"] > top["rank"]


def test_a_seed_column_retyped_is_ranked_above_the_type_error_it_causes(shop: Settings) -> None:
    project = shop.dbt.project_dir  # type: ignore[union-attr]
    path = project / "seeds" / "schema.yml"
    original = path.read_text()
    path.write_text(original.replace("amount: decimal(6,2)", "amount: varchar"))
    _git(project, "commit", "-qam", "Load payment amounts as text", author=_ALICE)
    try:
        # a seed's new column types take effect when it is loaded again from scratch
        result = _dbt(shop, "build", "--full-refresh")
        assert result.returncode == 1, result.stdout[-3000:]
        body = _explain(shop, "payment_totals")
    finally:
        _restore(shop, path, original, True, "--full-refresh")
    assert body["symptom"]["error_kind"] == "type_mismatch", body["symptom"]
    top = body["causes"][0]
    assert top["cause"] == "declared_type_change" and top["name"] == "raw_payments", body["causes"][:3]
    assert "`amount` retyped from decimal(6,2) to varchar" in top["change"], top
    assert top["evidence"]["git"]["author"] == "Alice" and body["confidence"] == "high", body["verdict"]


def test_a_refactor_that_keeps_the_names_is_no_confident_cause(shop: Settings) -> None:
    project = shop.dbt.project_dir  # type: ignore[union-attr]
    path = project / "models" / "stg_orders.sql"
    original = path.read_text()
    path.write_text(
        f"-- tidied up\nwith base as (\n{original}\n)\nselect order_id, status, amount\nfrom base\n"
    )
    _git(project, "commit", "-qam", "Tidy stg_orders", author=_ALICE)
    # and an unrelated failure below it, so the chain has a failing symptom to explain
    orders = project / "models" / "orders.sql"
    good = orders.read_text()
    orders.write_text("select order_id, status, amount, no_such_column from {{ ref('stg_orders') }}\n")
    try:
        result = _dbt(shop, "run")
        assert result.returncode == 1, result.stdout[-3000:]
        body = _explain(shop, "orders")
    finally:
        orders.write_text(good)
        _restore(shop, path, original, True)
    top = body["causes"][0]
    assert top["cause"] == "failed_model" and top["name"] == "orders", body["causes"][:3]
    edits = [c for c in body["causes"] if c["name"] == "stg_orders" and c["cause"].startswith("code")]
    assert edits and edits[0]["cause"] == "code_edit" and not edits[0]["explains_symptom"], body["causes"]
    assert "kept their names" in edits[0]["change"], edits
