"""Smuggling options past the dbt command policy (issue 34), through MCP against the dbt Cloud emulator.

Every variant of every class in tests/security/dbt_steps_support.py (a `--full-refresh`, `--target`, `--profile`,
`--profiles-dir`, `--threads`, `--target-path`, `--log-path`, `--empty`, `--vars`, ... hidden in a quoted selector,
`=`-joined, as a value, run together with quotes, behind a tab, newline or unicode space, written with look-alike
dashes, or plainly) goes to `dbtcloud_trigger_job` as a steps override: each is refused with
`steps_override_refused`, dbt Cloud hears nothing (the emulator counts no request, its runs stay as they were)
and no audit run is written. The allowed control at the end shows the counters do move when a trigger is sent.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from ade_platform.emulators.dbt_cloud import DAILY_JOB
from ade_platform.lib.dbt.command_policy import parse_step
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build
from tests.helpers import call_tools
from tests.mcp.dbt_cloud_support import Emulator, running_emulator
from tests.security.dbt_steps_support import hostile_variants

pytestmark = pytest.mark.integration

VARIANTS = hostile_variants()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with running_emulator(tmp_path_factory.mktemp("dbtcloud-steps"), history=False) as emu, emu.runs_held():
        yield emu


@pytest.fixture(scope="module", autouse=True)
def _quiet_fastmcp() -> Iterator[None]:
    """fastmcp logs every tool error with a rich traceback, which costs far more than the call itself over 1,600
    refusals; the logs are not what this module tests."""
    loggers = [
        logging.getLogger(n) for n in ["fastmcp", *logging.root.manager.loggerDict] if n.startswith("fastmcp")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


@pytest.fixture(scope="module")
def context(emulator: Emulator) -> BridgeContext:
    return BridgeContext.from_settings(emulator.settings())  # allow_full_refresh is off by default


def _trigger(steps: list[str]) -> tuple[str, dict[str, Any]]:
    return ("dbtcloud_trigger_job", {"job_id": DAILY_JOB, "cause": "attack", "steps_override": steps})


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_is_refused_and_nothing_reaches_dbt_cloud(
    name: str, emulator: Emulator, context: BridgeContext
) -> None:
    variants = VARIANTS[name]
    assert len(variants) >= 50, name  # a class is many generated variants, not one example
    before_runs = emulator.runs()
    before = emulator.counters()["requests"]
    # alone, and as the second step of an override whose first step is allowed
    calls = [_trigger([step]) for step in variants] + [_trigger(["dbt seed", step]) for step in variants]
    answers = call_tools(build(context), calls)
    for (ok, error), (_, args) in zip(answers, calls, strict=True):
        steps = args["steps_override"]
        assert not ok, steps
        assert error["error"] == "steps_override_refused", (steps, error)
        assert error["detail"].startswith(f"steps_override[{len(steps) - 1}]: "), (steps, error)
        assert error["hint"], error
    assert emulator.counters()["requests"] == before  # not one API call
    assert emulator.runs() == before_runs  # no run was created
    assert list(context.live().instance().get_runs()) == []  # a refusal writes no audit run


def test_an_allowed_step_is_triggered_as_its_model(emulator: Emulator, context: BridgeContext) -> None:
    """The control: one allowed step does reach dbt Cloud, as the policy's rendering, and the emulator's shell
    split of what it received is the model's tokens."""
    step = "dbt build -s 'tag:nightly marts.*' 1+orders+2 --exclude=@stg_payments --threads=08 -x"
    before = emulator.counters()["requests"]
    ((ok, run),) = call_tools(build(context), [_trigger([step])])
    assert ok, run
    assert emulator.counters()["requests"] == before + 1
    (sent,) = next(r for r in emulator.runs() if r["id"] == run["run_id"])["trigger"]["steps_override"]
    assert (
        sent
        == "dbt build --select tag:nightly 'marts.*' 1+orders+2 --exclude @stg_payments --threads 8 --fail-fast"
    )
    assert tuple(shlex.split(sent)) == parse_step(step).tokens
