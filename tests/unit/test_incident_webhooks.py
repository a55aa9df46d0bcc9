"""Webhooks to people, against a real local HTTP receiver: signed, retried with backoff after a failure, Slack's
body on request, flaps never sent, and the URL's secret path never in a log line."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ade_platform.config import IncidentWebhook
from ade_platform.lib.incidents import webhooks
from ade_platform.lib.incidents.grouping import Policy, reconcile
from ade_platform.lib.incidents.model import IncidentState, fold
from tests.unit.test_incidents_core import finding


class Receiver(BaseHTTPRequestHandler):
    answers: list[int] = []
    got: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(Receiver.answers.pop(0) if Receiver.answers else 204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.answers, Receiver.got = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def opened() -> tuple[list[dict], IncidentState]:
    events = reconcile(IncidentState.empty(), [finding()], 1.0, Policy()).events
    numbered = [{**e, "seq": i + 1} for i, e in enumerate(events)]
    return numbered, fold(IncidentState.empty(), numbered)


def test_signed_and_retried_after_a_server_error(receiver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhooks, "_BACKOFF_START", 0.05)
    Receiver.answers = [503, 500]
    hook = IncidentWebhook(url=f"{receiver}/hook", secret="s3cret", retries=3)
    events, state = opened()
    assert webhooks.notify([hook], events, state) == 1
    assert webhooks.SENDER.flush(30)
    assert len(Receiver.got) == 3  # two failures, then delivered
    headers, body = Receiver.got[-1]
    mac = hmac.new(b"s3cret", headers["x-ade-timestamp"].encode() + b"." + body, hashlib.sha256).hexdigest()
    assert headers["x-ade-signature"] == f"sha256={mac}" and headers["x-ade-event"] == "opened"
    payload = json.loads(body)
    assert payload["event"] == "opened" and payload["incident"]["status"] == "open"


def test_slack_body_and_only_the_events_asked_for(receiver: str) -> None:
    hook = IncidentWebhook(url=f"{receiver}/services/T0/B0/XYZ", format="slack", events=["resolved"])
    events, state = opened()
    assert webhooks.notify([hook], events, state) == 0
    hook = IncidentWebhook(url=f"{receiver}/services/T0/B0/XYZ", format="slack")
    assert webhooks.notify([hook], events, state) == 1
    assert webhooks.SENDER.flush(30)
    payload = json.loads(Receiver.got[-1][1])
    assert payload["text"].startswith("*Incident opened*") and payload["blocks"][0]["type"] == "section"
    flap = [{**events[0], "type": "cause_returned", "data": {"flap": True}}]
    assert webhooks.notify([hook], flap, state) == 0


def test_a_failing_url_is_logged_without_its_secret_path(
    receiver: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhooks, "_BACKOFF_START", 0.01)
    Receiver.answers = [500, 500, 500]
    hook = IncidentWebhook(url=f"{receiver}/services/T0/B0/TOPSECRET?token=abc", retries=2)
    events, state = opened()
    with caplog.at_level(logging.WARNING, logger="ade.incidents"):
        webhooks.notify([hook], events, state)
        assert webhooks.SENDER.flush(30)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "incident_webhook_failed" in said and "after 3 attempt(s)" in said
    assert "TOPSECRET" not in said and "token" not in said and "127.0.0.1" in said
