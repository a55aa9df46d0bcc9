"""The OpenLineage endpoint refuses what it must before anything is journaled: no or a wrong token (401), a
foreign Host or Origin (403, the gateway's guard), an oversized body (413, declared or streamed), a malformed
event (400 naming the field, never its value, in the answer or the log), another method (405)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from ade_platform.lib.openlineage.journal import JOURNAL_DIR
from tests.auth.support import threaded_gateway
from tests.openlineage.support import TOKEN, shop_settings

GATEWAY_TOKEN = "g" * 40
SECRET = "hunter2-SECRET-VALUE"


def _event(**changes: Any) -> dict[str, Any]:
    event = {
        "eventTime": datetime.now(UTC).isoformat(),
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "eventType": "COMPLETE",
        "run": {"runId": str(uuid.uuid4())},
        "job": {"namespace": "ns", "name": "job"},
        "inputs": [],
        "outputs": [],
    }
    event.update(changes)
    return event


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    settings = shop_settings(tmp_path, "    max_event_bytes: 2048\n")
    with threaded_gateway(settings) as url:
        yield url.removesuffix("/mcp") + "/api/v1/lineage", settings.home / "store" / JOURNAL_DIR


def _journaled(journal: Path) -> int:
    return len(list(journal.glob("*.json"))) if journal.exists() else 0


def _post(
    url: str, body: bytes | Iterator[bytes], token: str | None = TOKEN, **headers: str
) -> httpx.Response:
    auth = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.post(
        url, content=body, headers={"content-type": "application/json", **auth, **headers}, timeout=10
    )


def test_refusals_journal_nothing_and_say_a_stable_code(
    gateway: tuple[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    url, journal = gateway
    port = url.split(":")[2].split("/")[0]
    good = json.dumps(_event()).encode()
    caplog.set_level(logging.INFO)
    cases = {
        "no token": (_post(url, good, token=None), 401, "openlineage_unauthorized"),
        "wrong token": (_post(url, good, token="x" * 40), 401, "openlineage_unauthorized"),
        "rebinding host": (_post(url, good, host=f"attacker.example:{port}"), 403, None),
        "cross-site origin": (_post(url, good, origin="http://attacker.example"), 403, None),
        "declared too large": (_post(url, b"{" + b" " * 4096 + b"}"), 413, "openlineage_too_large"),
        "streamed too large": (_post(url, iter([b"{", b" " * 4096, b"}"])), 413, "openlineage_too_large"),
        "not JSON": (_post(url, b"{not json"), 400, "openlineage_invalid_event"),
        "not an object": (_post(url, b"[1, 2]"), 400, "openlineage_invalid_event"),
        "bad run id": (
            _post(url, json.dumps(_event(run={"runId": SECRET})).encode()),
            400,
            "openlineage_invalid_event",
        ),
        "no event time": (
            _post(url, json.dumps(_event(eventTime=SECRET)).encode()),
            400,
            "openlineage_invalid_event",
        ),
        "dataset without name": (
            _post(url, json.dumps(_event(inputs=[{"namespace": SECRET}])).encode()),
            400,
            "openlineage_invalid_event",
        ),
    }
    for case, (reply, status, code) in cases.items():
        assert reply.status_code == status, (case, reply.status_code, reply.text)
        if code is not None:
            body = reply.json()
            assert body["error"] == code and body["hint"] and SECRET not in reply.text, (case, body)
    assert "run.runId" in cases["bad run id"][0].json()["detail"]
    assert "inputs[0].name" in cases["dataset without name"][0].json()["detail"]
    assert httpx.get(url, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 405
    assert _journaled(journal) == 0
    assert SECRET not in caplog.text
    assert _post(url, good).status_code == 201 and _journaled(journal) == 1


def test_the_gateways_own_token_is_accepted_too(tmp_path: Path) -> None:
    settings = shop_settings(tmp_path)
    http = settings.mcp.http.model_copy(update={"token": SecretStr(GATEWAY_TOKEN)})
    settings = settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"http": http})})
    with threaded_gateway(settings) as mcp_url:
        url = mcp_url.removesuffix("/mcp") + "/api/v1/lineage"
        body = json.dumps(_event()).encode()
        assert _post(url, body, token=GATEWAY_TOKEN).status_code == 201
        assert _post(url, body, token=TOKEN).status_code == 201
        assert _post(url, body, token="y" * 40).status_code == 401
