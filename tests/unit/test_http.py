"""The HTTP helper every API client uses (ade_platform/clients/http.py): the retry policy, Retry-After, redirects,
and the errors it raises. The server side is an httpx MockTransport counting what reaches it; the helper and the
clients run as they do in production."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from ade_platform.clients.http import HttpClient, retry_after_seconds, retry_delay, should_retry
from ade_platform.clients.orchestrators import OrchestratorError
from ade_platform.clients.orchestrators.airflow import AirflowClient
from ade_platform.lib.errors import CodedError


class Failure(CodedError):
    pass


def _server(
    answer: Callable[[httpx.Request], httpx.Response],
) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    return httpx.MockTransport(handle), seen


def _client(transport: httpx.MockTransport, base_url: str = "http://api.test/v1", **options) -> HttpClient:
    return HttpClient(base_url, name="The API", error=Failure, timeout=5, transport=transport, **options)


def test_retry_after_is_seconds_or_an_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=10), usegmt=True), now) == 10.0
    assert retry_after_seconds(format_datetime(now - timedelta(seconds=10), usegmt=True), now) == 0.0
    assert [retry_after_seconds(v) for v in (None, "", "soon", "nan", "inf")] == [None] * 5


def test_retry_delay_honours_retry_after_within_a_cap_else_backs_off() -> None:
    assert retry_delay(0, httpx.Response(429, headers={"Retry-After": "2"})) == 2.0
    assert retry_delay(0, httpx.Response(429, headers={"Retry-After": "3600"})) == 30.0
    assert [retry_delay(n) for n in (0, 1, 2, 10)] == [0.25, 0.5, 1.0, 8.0]


def test_what_is_sent_again() -> None:
    assert should_retry("GET", 0, status=503) and should_retry("GET", 0)  # a 5xx, a transport failure
    assert not should_retry("POST", 0, status=503) and not should_retry("POST", 0)  # it may have been done
    assert should_retry("POST", 0, status=429)  # refused unprocessed
    assert should_retry("POST", 0, status=502, repeatable=True)  # a read sent as POST
    assert not should_retry("GET", 0, status=404) and not should_retry("GET", 3, status=503)  # 4 attempts


def test_a_read_is_retried_through_429s_then_answers() -> None:
    answers = iter([429, 429, 200])
    transport, seen = _server(lambda r: httpx.Response(next(answers), headers={"Retry-After": "0"}, json={}))
    assert _client(transport).request("GET", "/things").status_code == 200
    assert len(seen) == 3


def test_a_trigger_is_sent_once_even_when_the_server_answers_5xx() -> None:
    """On main every orchestrator request was repeated on a 5xx: a trigger could start its DAG up to four times."""

    def airflow(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            return httpx.Response(201, json={"access_token": "jwt"})
        return httpx.Response(503, json={"detail": "busy"})

    transport, seen = _server(airflow)
    client = AirflowClient("http://airflow.test", "ade", "pw", api_version="v2", transport=transport)
    with pytest.raises(OrchestratorError) as refused:
        client.trigger("nightly", {"reason": "test"})
    triggers = [r for r in seen if r.url.path == "/api/v2/dags/nightly/dagRuns"]
    assert refused.value.code == "upstream_error" and len(triggers) == 1


def _raising(error: type[httpx.TransportError]) -> Callable[[httpx.Request], httpx.Response]:
    def fail(request: httpx.Request) -> httpx.Response:
        raise error("no answer", request=request)

    return fail


def test_a_timeout_is_not_repeated_and_an_unreachable_server_names_no_credentials() -> None:
    transport, seen = _server(_raising(httpx.ReadTimeout))
    with pytest.raises(Failure) as failed:
        _client(transport).request("GET", "/things")
    assert failed.value.code == "connection_failed" and len(seen) == 1
    transport, seen = _server(_raising(httpx.ConnectError))
    with pytest.raises(Failure) as failed:
        _client(transport, "http://ade:s3cret-pw@api.test:8080/v1").request("POST", "/run")
    assert failed.value.code == "connection_failed" and len(seen) == 1  # a POST is not repeated
    assert "s3cret" not in failed.value.detail and "api.test:8080/v1" in failed.value.detail


def test_a_redirect_is_not_followed_unless_asked_and_never_off_its_origin() -> None:
    elsewhere = "http://user:s3cret@elsewhere.test:9000/capture"
    transport, seen = _server(
        lambda r: (
            httpx.Response(200, json={})
            if r.url.path == "/v1/moved"
            else httpx.Response(307, headers={"location": elsewhere if "away" in r.url.path else "/v1/moved"})
        )
    )
    for path in ("/here", "/away"):
        with pytest.raises(Failure) as refused:
            _client(transport).request("GET", path)
        assert refused.value.code == "upstream_error" and "not followed" in refused.value.detail
        assert "s3cret" not in refused.value.detail
    following = _client(transport, follow_redirects=True)
    assert following.request("GET", "/here").status_code == 200  # within the origin
    with pytest.raises(Failure) as refused:
        following.request("GET", "/away")
    assert "elsewhere.test:9000" in refused.value.detail and "s3cret" not in refused.value.detail
    assert not any(r.url.host == "elsewhere.test" for r in seen)
