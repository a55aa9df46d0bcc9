"""Webhooks to people: an incident opened, reopened or resolved (the events each webhook lists) is POSTed to its
URL, signed, by one background sender per process, retried with backoff. Whoever writes a transition sends it
(the sensor for what detection found, the gateway for what an agent did), so nothing is sent twice and the
sensor never waits on a receiver.

Signature: `X-ADE-Signature: sha256=<hex HMAC-SHA256 of "<X-ADE-Timestamp>.<body>" with the webhook's secret>`
(a receiver recomputes it and rejects a timestamp too old: no replay). `format: slack` posts `{text, blocks}`,
which Slack's incoming webhooks take as they are. The URL's path and query (Slack's carry the secret) never reach
a log: it is named by scheme and host only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ade_platform.lib.incidents.model import IncidentState, public

log = logging.getLogger("ade.incidents")
QUEUE_BOUND = 1000
_BACKOFF_START = 0.5
_BACKOFF_MAX = 30.0


def redacted(url: str) -> str:
    """A URL as logs may show it: scheme and host, never the path or query (where webhook secrets live)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}{':' + str(parts.port) if parts.port else ''}/…"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def body_of(event: dict[str, Any], inc: dict[str, Any], fmt: str) -> bytes:
    shown = public(inc)
    if fmt == "slack":
        who = f" by {event.get('by')}" if event.get("by") and event.get("by") != "ade" else ""
        head = f"*Incident {event['type'].replace('_', ' ')}*{who}: `{inc['id']}` ({inc['status']})"
        symptoms = ", ".join(str(s.get("name") or s.get("node")) for s in inc["symptoms"][:10])
        text = f"{head}\n{inc['verdict']}\nSymptoms ({inc['symptoms_total']}): {symptoms}"
        payload: dict[str, Any] = {
            "text": text,
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}],
        }
    else:
        shown.pop("chain", None)
        payload = {"event": event["type"], "by": event.get("by"), "at": event["at"], "incident": shown}
    return json.dumps(payload, default=str).encode()


class Sender:
    """One daemon thread per process; a bounded queue (past it a delivery is dropped, with a log line)."""

    def __init__(self, bound: int = QUEUE_BOUND):
        self.queue: queue.Queue[tuple[Any, dict[str, Any], bytes] | None] = queue.Queue(bound)
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.delivered = 0
        self.failed = 0

    def put(self, hook: Any, event: dict[str, Any], body: bytes) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="ade-incident-webhooks", daemon=True)
                self.thread.start()
        try:
            self.queue.put_nowait((hook, event, body))
        except queue.Full:
            log.warning("incident_webhook_dropped: %d deliveries already waiting", self.queue.qsize())

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued delivery is done (tests, a graceful stop)."""
        deadline = time.monotonic() + timeout
        while self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.queue.unfinished_tasks

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is not None:
                    self._deliver(*item)
            finally:
                self.queue.task_done()

    def _deliver(self, hook: Any, event: dict[str, Any], body: bytes) -> None:
        url = hook.url.get_secret_value()
        wait = _BACKOFF_START
        for attempt in range(hook.retries + 1):
            stamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "ade-platform-incidents",
                "X-ADE-Event": event["type"],
                "X-ADE-Incident": event["incident"],
                "X-ADE-Timestamp": stamp,
            }
            if hook.secret is not None:
                headers["X-ADE-Signature"] = signature(hook.secret.get_secret_value(), stamp, body)
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with _OPENER.open(request, timeout=hook.timeout_seconds) as answer:
                    answer.read(1 << 16)
                self.delivered += 1
                return
            except urllib.error.HTTPError as exc:
                retry = exc.code == 429 or exc.code >= 500
                why = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                retry, why = True, type(exc).__name__
            if not retry or attempt == hook.retries:
                break
            time.sleep(wait)
            wait = min(wait * 2, _BACKOFF_MAX)
        self.failed += 1
        log.warning(
            "incident_webhook_failed: %s of %s to %s: %s after %d attempt(s)",
            event["type"], event["incident"], redacted(url), why, attempt + 1,
        )  # fmt: skip


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook is POSTed where it is configured, never where an answer points (the body names incidents)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)
SENDER = Sender()


def notify(webhooks: Sequence[Any], events: Iterable[dict[str, Any]], state: IncidentState) -> int:
    """Queue a delivery of each event a webhook listens to (flaps are never sent); returns how many."""
    if not webhooks:
        return 0
    queued = 0
    for event in events:
        kind = event["type"]
        inc = state.incidents.get(event["incident"])
        if inc is None or (event.get("data") or {}).get("flap"):
            continue
        for hook in webhooks:
            if kind in hook.events:
                SENDER.put(hook, event, body_of(event, inc, hook.format))
                queued += 1
    return queued
