"""The bi-api inventory tools never answer silently old (issue 27): one listing of the tool's dashboards checks for a
change since the inventory snapshot first. A Looker emulator of its own (the demo's inventory describes its content
exactly as the demo's does), so creating a dashboard here leaves the shared demo emulator as the other tests know it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ade_platform.config import Settings
from ade_platform.emulators.demo import free_port
from ade_platform.emulators.looker import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from tests.helpers import call_tool
from tests.mcp.test_bi_api import server_for
from tests.processes import stop, wait_for_http

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def looker_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("looker-own")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ade_platform.emulators.looker", "--port", str(port)],
        env={**os.environ, "ADE_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/api/versions", proc)
        yield url
    finally:
        stop(proc)


def _pointed_at(settings: Settings, url: str) -> Settings:
    looker = settings.bi.looker.model_copy(update={"base_url": url})  # type: ignore[union-attr]
    return settings.model_copy(update={"bi": settings.bi.model_copy(update={"looker": looker})})


def _create_dashboard(url: str, title: str) -> str:
    login = httpx.post(
        f"{url}/api/4.0/login", data={"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
    )
    token = login.json()["access_token"]
    created = httpx.post(
        f"{url}/api/4.0/dashboards",
        json={"title": title, "folder_id": "5"},
        headers={"Authorization": f"Bearer {token}"},
    )
    created.raise_for_status()
    return str(created.json()["id"])


def test_a_dashboard_created_after_the_inventory_is_listed(
    demo_settings: Settings, looker_url: str, tmp_path: Path
) -> None:
    server, _ = server_for(_pointed_at(demo_settings, looker_url), tmp_path / "dagster")
    ok, before = call_tool(server, "bi_list_dashboards", {"tool": "looker"})
    assert ok and before["provenance"]["source"] == "cache" and before["provenance"]["stale"] is False, before
    ok, elements = call_tool(server, "bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": "1"})
    assert ok and elements["provenance"]["source"] == "cache" and elements["errors_stale"] is False, elements

    new_id = _create_dashboard(looker_url, "Weekly Refunds")
    ok, after = call_tool(server, "bi_list_dashboards", {"tool": "looker"})
    assert ok, after
    assert after["provenance"]["source"] == "live", after["provenance"]
    titles: dict[str, Any] = {d["dashboard_id"]: d["title"] for d in after["dashboards"]}
    assert titles[new_id] == "Weekly Refunds" and after["total"] == before["total"] + 1
    ok, fresh = call_tool(server, "bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": new_id})
    assert ok and fresh["provenance"]["source"] == "live" and fresh["element_count"] == 0, fresh


def test_an_unreachable_tool_answers_from_the_snapshot_flagged_stale(
    demo_settings: Settings, tmp_path: Path
) -> None:
    server, _ = server_for(
        _pointed_at(demo_settings, f"http://127.0.0.1:{free_port()}"), tmp_path / "dagster"
    )
    ok, body = call_tool(server, "bi_list_dashboards", {"tool": "looker"})
    assert ok and body["provenance"]["source"] == "cache", body
    assert body["provenance"]["stale"] is True and "connection_failed" in body["provenance"]["stale_reason"]
    ok, elements = call_tool(server, "bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": "1"})
    assert ok and elements["provenance"]["stale"] is True, elements
