"""One way to write a sensor that polls an external system for something that went wrong and asks Dagster to
refresh what records it: a failed dbt Cloud or orchestrator run, a dashboard turning to error, a warehouse schema
or Snowflake DDL that changed under its snapshot.

A domain names what it polls (`Polled`: the system as an operator says it, where it is, how its client is built,
the errors that client raises) and writes one tick, `poll(context) -> Tick`, that opens the client with
`reach(polled)`. `failure_sensor` does the rest the same way for every domain:

- `reach` builds the client and closes it after use (when it has `close`);
- an error of the client's (the system is down, refuses the credentials, answers what it should not) ends the
  tick as a skip whose reason names the system and its address with the client's code and detail, never a
  traceback: the clients' details are the ones they give agents, free of secrets and response bodies, and the
  address is shown without user info. The cursor is kept, so the next tick starts where this one would have;
- the cursor is the domain's own string: read from `context.cursor`, replaced by `Tick.cursor` (None keeps it);
- the tick comes back as one `SensorResult`: its run requests and asset events, or, when it has neither, its
  reason for skipping.

A sensor over several systems (the BI tools) catches `Unreachable` per system, to keep the others' progress.
"""

# No `from __future__ import annotations`: Dagster inspects the sensor function's context parameter.
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import dagster as dg

ClientT = TypeVar("ClientT")


@dataclass(frozen=True)
class Polled(Generic[ClientT]):
    """An external system a domain reaches: polled by its failure sensor (`reach`), read by its assets
    (`defs/step_failure.py`), described once for both."""

    system: str  # as an operator names it: "dbt Cloud", "Airflow", "looker", "warehouse 'demo'"
    address: str  # where it is reached: a URL, a file, a connection name
    connect: Callable[[], ClientT]  # builds its client (nothing is reached before the first call, usually)
    errors: tuple[type[Exception], ...]  # what the client raises when the system cannot answer now
    section: str  # where ade.yaml configures it: "dbt_cloud", "bi.looker", "orchestrators.airflow"


class Unreachable(Exception):
    """A polled system did not answer; the message says which, where and why (a skip reason)."""


@dataclass
class Tick:
    """What one evaluation of a failure sensor found."""

    run_requests: list[dg.RunRequest] = field(default_factory=list)
    asset_events: list[Any] = field(default_factory=list)
    cursor: str | None = None  # None keeps the cursor as it is
    skip_reason: str = "nothing new"  # shown when the tick neither requests a run nor records an event


def sensor_run(run_key: str, reason: str, **tags: str) -> dg.RunRequest:
    """A run request tagged as a sensor's, with why it was requested (the tags an operator filters runs by)."""
    return dg.RunRequest(run_key=run_key, tags={"ade/source": "sensor", "ade/reason": reason, **tags})


def shown_address(address: str) -> str:
    """An address fit for a skip reason or a failure line: a URL without its user info (a password may sit there),
    query or fragment (a token may sit there); anything else (a file, a connection name) as it is."""
    parts = urlsplit(address)
    if parts.scheme and parts.netloc:
        return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1], query="", fragment="").geturl()
    return address


def unreachable_reason(polled: Polled[Any], exc: Exception) -> str:
    code = getattr(exc, "code", None) or type(exc).__name__
    detail = getattr(exc, "detail", None) or "no detail"
    return f"{polled.system} at {shown_address(polled.address)} not readable now ({code}): {detail}"


@contextlib.contextmanager
def connected(polled: Polled[ClientT]) -> Iterator[ClientT]:
    """The system's client for the length of the block, closed after (when it has `close`)."""
    client = polled.connect()
    try:
        yield client
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()


@contextlib.contextmanager
def reach(polled: Polled[ClientT]) -> Iterator[ClientT]:
    """The system's client for the length of the block; its errors (building it included) become Unreachable."""
    try:
        with connected(polled) as client:
            yield client
    except polled.errors as exc:
        raise Unreachable(unreachable_reason(polled, exc)) from None


def failure_sensor(
    name: str,
    *,
    description: str,
    minimum_interval_seconds: int,
    poll: Callable[[dg.SensorEvaluationContext], Tick],
    job: Any = None,
    asset_selection: Any = None,
) -> dg.SensorDefinition:
    """A running-by-default sensor that evaluates `poll` once per interval and skips, with the reason, when a
    system it reaches through `reach` is unreachable. `job` or `asset_selection` is what its run requests run."""

    @dg.sensor(
        name=name,
        job=job,
        asset_selection=asset_selection,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def evaluate(context) -> dg.SensorResult:
        try:
            tick = poll(context)
        except Unreachable as exc:
            return dg.SensorResult(skip_reason=str(exc))
        if not tick.run_requests and not tick.asset_events:
            return dg.SensorResult(cursor=tick.cursor, skip_reason=tick.skip_reason)
        return dg.SensorResult(
            run_requests=tick.run_requests, asset_events=tick.asset_events, cursor=tick.cursor
        )

    return evaluate
