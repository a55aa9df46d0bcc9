"""One way for an asset to fail when a system it reads does not answer or refuses: the step fails with a line an
operator can act on. `ade materialize` prints it after the step's name, and the Dagster UI shows it on the run.

The line names the system, its section of ade.yaml and its address (shown without user info, query or fragment),
then the client's code and detail (agent-safe by contract: no credential, no traceback, no row), then what to do:

    dbt Cloud (ade.yaml `dbt_cloud:`) at http://127.0.0.1:8791/api/v2 did not answer (connection_failed: cannot
    reach dbt Cloud at http://127.0.0.1:8791/api/v2 (ConnectError)). Start it, point `dbt_cloud:` at where it
    runs, or remove the `dbt_cloud:` section of ade.yaml to turn it off.

Any other error of the system (credentials refused, an object missing) says "refused", its code and detail, and
the error's hint, else to check the section.

A domain describes its system once, as the `Polled` its failure sensor polls (defs/failure_sensor.py), and its
assets read it through `reach_in_step` (a client, closed after the block) or `failing_step` (a client the asset
already has, a Dagster resource's).
"""

# No `from __future__ import annotations`, as in every defs module.
import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import dagster as dg

from ade_platform.defs.failure_sensor import Polled, connected, shown_address

ClientT = TypeVar("ClientT")

# The codes that mean "nothing answered there", as the clients raise them (clients/http.py: refused, reset,
# timed out).
UNREACHABLE_CODES = frozenset({"connection_failed"})


def step_failure(system: Polled[Any], exc: Exception) -> dg.Failure:
    """The Failure of a step whose `system` raised `exc` (one of `system.errors`)."""
    code = getattr(exc, "code", None) or type(exc).__name__
    detail = " ".join(str(getattr(exc, "detail", None) or "no detail").split())
    where = f"{system.system} (ade.yaml `{system.section}:`) at {shown_address(system.address)}"
    if code in UNREACHABLE_CODES:
        todo = (
            f"Start it, point `{system.section}:` at where it runs, or remove the `{system.section}:` section of "
            "ade.yaml to turn it off."
        )
        return dg.Failure(
            description=f"{where} did not answer ({code}: {detail}). {todo}", metadata={"error": code}
        )
    hint = getattr(exc, "hint", None) or f"Check the `{system.section}:` section of ade.yaml."
    return dg.Failure(description=f"{where} refused: {code}: {detail}. {hint}", metadata={"error": code})


@contextlib.contextmanager
def failing_step(system: Polled[Any]) -> Iterator[None]:
    """An error of `system` raised in the block fails the step with its line."""
    try:
        yield
    except system.errors as exc:
        raise step_failure(system, exc) from None


@contextlib.contextmanager
def reach_in_step(system: Polled[ClientT]) -> Iterator[ClientT]:
    """The system's client for the length of the block (closed after); its errors, building it included, fail
    the step with its line."""
    with failing_step(system), connected(system) as client:
        yield client
