"""Per-user access to incidents (auth: oidc, tokens signed by a local issuer, the gateway's HTTP app): a caller
hears of, lists and reads only the incidents whose symptoms reach a toolset its roles read; an id of another's is
`incident_not_found`; only a role with the `incident` effect may change one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.config import Settings
from tests.auth.support import LocalIssuer, acall, oidc_settings, threaded_gateway
from tests.mcp.test_incident_tools import detect, finding

ACCESS = (
    "  access:\n"
    "    roles:\n"
    "      dbt-reader: {effects: [read], toolsets: [dbt-artifacts, incidents]}\n"
    "      jobs-operator: {effects: [read, incident], toolsets: [orchestrator, incidents]}\n"
    "    groups: {dbt: [dbt-reader], jobs: [jobs-operator]}\n"
)
OPEN = "ade://incidents/open"


@pytest.fixture(scope="module")
def setup(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, LocalIssuer, Settings, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("incident-access")
    with LocalIssuer() as issuer:
        settings = oidc_settings(
            tmp, issuer.url, toolsets="dbt-artifacts, orchestrator, incidents", access=ACCESS
        )
        journal = detect(
            settings,
            [
                finding("dbt:model.shop.orders", "failed_model", "orders", system="dbt"),
                finding("airflow:dag:nightly", "failed_builder_run", "nightly", system="airflow"),
            ],
        )
        ids = {inc["key"]["cause"]: ident for ident, inc in journal.state().incidents.items()}
        with threaded_gateway(settings) as url:
            yield url, issuer, settings, ids


def _listed(url: str, token: str) -> set[str]:
    ok, body = asyncio.run(acall(url, token, "incident_list", {}))
    assert ok, body
    return {i["id"] for i in body["incidents"]}


def test_each_caller_lists_and_reads_only_incidents_it_may_read(setup: Any) -> None:
    url, issuer, _, ids = setup
    dbt = issuer.token("ann", audience=url, groups=["dbt"])
    jobs = issuer.token("bob", audience=url, groups=["jobs"])
    assert _listed(url, dbt) == {ids["failed_model"]}
    assert _listed(url, jobs) == {ids["failed_builder_run"]}
    ok, other = asyncio.run(acall(url, dbt, "incident_get", {"incident_id": ids["failed_builder_run"]}))
    assert not ok and other["error"] == "incident_not_found", other
    ok, refused = asyncio.run(
        acall(url, dbt, "incident_update", {"incident_id": ids["failed_model"], "action": "acknowledge"})
    )
    assert not ok and refused["error"] == "forbidden", refused
    args = {"incident_id": ids["failed_model"], "action": "acknowledge"}
    ok, hidden = asyncio.run(acall(url, jobs, "incident_update", args))
    assert not ok and hidden["error"] == "incident_not_found", hidden


async def _hears(url: str, token: str, act: Any) -> list[str]:
    from mcp.client.subscriptions import listen

    got: list[str] = []
    async with (
        Client(url, auth=token) as client,
        listen(client.session, resource_subscriptions=[OPEN]) as sub,
    ):
        events = aiter(sub)
        await asyncio.sleep(1.5)  # the watcher's baseline
        await asyncio.to_thread(act)
        try:
            while True:
                got.append(str((await asyncio.wait_for(anext(events), 4)).uri))
        except TimeoutError:
            return got


def test_a_listener_hears_only_of_incidents_it_may_read(setup: Any) -> None:
    url, issuer, _, ids = setup
    dbt = issuer.token("ann", audience=url, groups=["dbt"])
    jobs = issuer.token("bob", audience=url, groups=["jobs"])
    change = {"incident_id": ids["failed_builder_run"], "action": "acknowledge", "note": "mine"}

    def act() -> None:
        ok, body = asyncio.run(acall(url, jobs, "incident_update", change))
        assert ok, body

    assert asyncio.run(_hears(url, dbt, act)) == []  # the airflow incident does not reach a dbt reader
    change["action"] = "resolve"
    assert asyncio.run(_hears(url, jobs, act)) == [OPEN]
