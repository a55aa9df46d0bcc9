"""The dbt command policy checks the text that runs (issue 34): property tests against dbt's own parser.

For generated allowed steps (every subcommand, every option with its aliases, `--name=value`, quoted multi-value
lists, graph operators), the text the policy sends, split the way dbt Cloud splits it, is exactly the model's
tokens, and dbt-core's click parse of it sets exactly the parameters the model holds, with the same values; dbt's
reading of the agent's own text means the same. For generated hostile steps (a smuggled option in quotes, `=`-joined,
after a selector, behind tabs, newlines, unicode spaces or look-alike dashes), the policy refuses, or what it sends
sets nothing on dbt's command line that the policy does not allow.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ade_platform.lib.dbt.command_policy import FLAGS, MAX_THREADS, StepRefused, parse_step
from tests.security.dbt_steps_support import (
    ALLOWED_PARAMS,
    SELECTION_PARAMS,
    allowed_steps,
    dbt_reads,
    dbt_tokens,
    expected_params,
    hostile_steps,
    hostile_variants,
    selection_split,
)

pytest.importorskip("dbt.cli.main")

# No deadline: the machine's speed is not what is tested. No example database: nothing is written to the checkout.
ALLOWED_EXAMPLES = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
HOSTILE_EXAMPLES = settings(ALLOWED_EXAMPLES, max_examples=500)


@pytest.fixture(scope="module", autouse=True)
def _dbt_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """dbt's click checks that its profiles folder exists while it parses; give it an empty one (what it holds is
    never read: nothing runs)."""
    folder = tmp_path_factory.mktemp("dbt-profiles")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_PROFILES_DIR", str(folder))
        yield


def _dbt_options() -> list[str]:
    """Every option spelling dbt's allowed subcommands answer to that the policy does not accept."""
    import click
    from dbt.cli.main import cli

    allowed = {s for flag in FLAGS for s in flag.spellings}
    out = set()
    for command in (cli.commands["build"], cli.commands["run"], cli.commands["compile"]):
        for param in command.params:
            if isinstance(param, click.Option):
                out.update(s for s in param.opts + param.secondary_opts if s not in allowed)
    out -= {"-h", "--help"}
    return sorted(out)


_DBT_OPTIONS = _dbt_options()


@ALLOWED_EXAMPLES
@given(allowed_steps())
def test_what_is_sent_is_what_dbt_reads(
    case: tuple[str, bool, list[tuple[str, str, tuple[str, ...]]]],
) -> None:
    text, allow_full_refresh, model = case
    command = parse_step(text, allow_full_refresh=allow_full_refresh)
    assert [(o.flag.name, o.spelling, o.values) for o in command.options] == model, text

    sent = command.text
    # dbt Cloud's split (POSIX shell words) of what is sent gives back the model's tokens, one value per token;
    # a plain whitespace split gives the same count, so no splitter can make a value into two tokens
    assert tuple(shlex.split(sent, posix=True)) == command.tokens
    assert [w.strip("'") for w in sent.split()] == list(command.tokens)
    value_tokens = [v for o in command.options for v in o.values]
    assert all(v and not v.startswith("-") and v == v.strip() for v in value_tokens)

    reading = dbt_reads(dbt_tokens(sent))
    assert reading.command == command.subcommand
    assert reading.group_params == {}
    assert reading.params == expected_params(command), (text, sent)
    # dbt's reading of the agent's own text selects the same nodes (its selection parser splits on spaces)
    original = dbt_reads(dbt_tokens(text))
    assert original.command == command.subcommand and original.group_params == {}
    assert selection_split(original.params) == expected_params(command), text


def _leaks(reading: Any, allow_full_refresh: bool) -> list[str]:
    """What dbt's reading of a sent step sets that the policy does not allow."""
    leaks = [f"dbt {k}" for k in reading.group_params]
    leaks += [k for k in reading.params if k not in ALLOWED_PARAMS]
    if reading.params.get("full_refresh") and not allow_full_refresh:
        leaks.append("full_refresh")
    threads = reading.params.get("threads")
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        leaks.append(f"threads={threads}")
    leaks += [
        f"{k} value starting with -"
        for k in SELECTION_PARAMS
        for v in reading.params.get(k, ())
        if v.startswith("-") or " " in v
    ]
    return leaks


def _sent_or_refused(step: str, allow_full_refresh: bool) -> list[str] | None:
    """None when the policy refuses the step, else what dbt's reading of the sent text leaks (must be nothing)."""
    try:
        command = parse_step(step, allow_full_refresh=allow_full_refresh)
    except StepRefused as refused:
        assert refused.reason
        return None
    return _leaks(dbt_reads(dbt_tokens(command.text)), allow_full_refresh)


@HOSTILE_EXAMPLES
@given(st.data(), st.booleans())
def test_hostile_steps_are_refused_or_leak_nothing(data: st.DataObject, allow_full_refresh: bool) -> None:
    step = data.draw(hostile_steps(_DBT_OPTIONS))
    assert not _sent_or_refused(step, allow_full_refresh), step


def test_every_listed_variant_is_refused() -> None:
    """The fixed classes of the MCP suite (tests/security/test_dbt_steps.py) are all refused by the policy itself.
    With full refresh on, a smuggled --full-refresh is still refused (a value is never an option); only the plain
    `--full-refresh` option of the "as its own word" class passes, and then leaks nothing."""
    for name, steps in hostile_variants().items():
        assert steps, name
        for step in steps:
            assert _sent_or_refused(step, False) is None, (name, step)
            leaks = _sent_or_refused(step, True)
            if name == "as its own word" and {"--full-refresh", "-f"} & set(step.split()):
                assert not leaks, step
            else:
                assert leaks is None, (name, step)


def test_the_leak_check_can_fail() -> None:
    """The reading would show a smuggled option: the old rendering of a quoted selector (its parts as tokens)."""
    old_rendering = [
        "dbt",
        "build",
        "--select",
        "a",
        "--full-refresh",
        "--target",
        "prod",
        "--threads",
        "999",
    ]
    assert set(_leaks(dbt_reads(old_rendering), False)) == {"full_refresh", "target", "threads=999"}
    assert _leaks(dbt_reads(["dbt", "--debug", "build"]), False) == ["dbt debug"]
