"""The Host/Origin policy the gateway and the emulators share (ade_platform/lib/http_guard.py)."""

from __future__ import annotations

import pytest

from ade_platform.lib.http_guard import local_policy, normalize_origin, parse_host

POLICY = local_policy(8765, "127.0.0.1", ["mcp.example.com", "gw.internal:9000"], ["https://app.example.com"])


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("127.0.0.1:8765", True),
        ("localhost:8765", True),
        ("LocalHost:8765", True),
        ("[::1]:8765", True),
        ("[0:0:0:0:0:0:0:1]:8765", True),  # the same address, spelled out
        ("mcp.example.com", True),  # a configured name without a port: any port (behind a proxy)
        ("mcp.example.com:443", True),
        ("gw.internal:9000", True),
        ("gw.internal:9001", False),
        ("attacker.example:8765", False),  # DNS rebinding
        ("127.0.0.1:8766", False),  # another local server's port
        ("127.0.0.1", False),  # port 80 implied
        ("localhost.:8765", False),
        ("127.1:8765", False),
        ("user@localhost:8765", False),
        ("localhost:8765/path", False),
        ("", False),
    ],
)
def test_host_header(host: str, served: bool) -> None:
    assert POLICY.refusal([host], []) == (None if served else "host_not_allowed")


@pytest.mark.parametrize(
    ("origin", "served"),
    [
        ("http://127.0.0.1:8765", True),  # the gateway's own origin
        ("http://localhost:8765/", True),
        ("http://[::1]:8765", True),
        ("https://app.example.com", True),  # configured
        ("https://app.example.com:443", True),
        ("http://app.example.com", False),  # configured for https only
        ("http://attacker.example", False),
        ("http://localhost:3000", False),  # another local web app
        ("null", False),  # sandboxed frames, file:// pages
        ("http://user:pw@localhost:8765", False),
        ("ftp://localhost:8765", False),
    ],
)
def test_origin_header(origin: str, served: bool) -> None:
    assert POLICY.refusal(["127.0.0.1:8765"], [origin]) == (None if served else "origin_not_allowed")


def test_one_host_header_and_every_origin() -> None:
    assert POLICY.refusal([], []) == "host_not_allowed"
    assert POLICY.refusal(["127.0.0.1:8765", "attacker.example:8765"], []) == "host_not_allowed"
    assert (
        POLICY.refusal(["127.0.0.1:8765"], ["http://127.0.0.1:8765", "http://attacker.example"]) is not None
    )


def test_bound_address_and_every_interface() -> None:
    assert local_policy(80, "10.0.0.5").refusal(["10.0.0.5"], []) is None
    assert local_policy(80, "0.0.0.0").refusal(["0.0.0.0"], []) == "host_not_allowed"
    assert local_policy(80, "::").refusal(["[::]"], []) == "host_not_allowed"


def test_parsing_and_configuration_errors() -> None:
    assert parse_host("[::1]:80") == ("::1", 80) and parse_host("Example.COM") == ("example.com", None)
    assert parse_host("host:99999") is None and parse_host("[nope]:1") is None
    assert normalize_origin("HTTPS://App.Example.com") == "https://app.example.com:443"
    with pytest.raises(ValueError, match="not a host name"):
        local_policy(1, allowed_hosts=["http://x"])
    with pytest.raises(ValueError, match="not an origin"):
        local_policy(1, allowed_origins=["x.example.com"])
