"""The steps_override policy (ade_platform/lib/dbt/command_policy.py): what passes, what is refused and why, and
its table of options checked against dbt-core's own click command definitions."""

from __future__ import annotations

import pytest

from ade_platform.lib.dbt.command_policy import (
    FLAGS,
    MAX_STEPS,
    REFUSED_FLAGS,
    RESOURCE_TYPES,
    SUBCOMMANDS,
    StepRefused,
    parse_step,
    parse_steps,
)

ALLOWED = [
    ("dbt build", "dbt build"),
    ("dbt run --select stg_orders+", "dbt run --select stg_orders+"),
    ("dbt run -s stg_orders+ orders", "dbt run --select stg_orders+ orders"),
    ("dbt run -m stg_orders --models orders --model x", "dbt run --select stg_orders --select orders --select x"),
    ("dbt build --select=@foo", "dbt build --select @foo"),
    ("dbt build -s 'tag:nightly marts.*' --exclude=stg_payments", "dbt build --select tag:nightly 'marts.*' --exclude stg_payments"),
    ('dbt build -s "x"', "dbt build --select x"),
    ("dbt test --resource-type unit_test --resource-types test", "dbt test --resource-type unit_test --resource-type test"),
    ("dbt build --selector nightly --threads=8 -x --warn-error", "dbt build --selector nightly --threads 8 --fail-fast --warn-error"),
    ("dbt run --defer --state prod-state/ --favor-state", "dbt run --defer --state prod-state/ --favor-state"),
    ("dbt run --no-defer --no-fail-fast --no-favor-state", "dbt run --no-defer --no-fail-fast --no-favor-state"),
    ("dbt source freshness --select source:raw.orders", "dbt source freshness --select source:raw.orders"),
    ("dbt docs generate", "dbt docs generate"),
    ("dbt compile -s orders", "dbt compile --select orders"),
    ("dbt seed", "dbt seed"),
    ("dbt snapshot --select snap_orders", "dbt snapshot --select snap_orders"),
    ("  dbt   build  ", "dbt build"),
    ("dbt build --threads 08 --select=a,b 'c d'", "dbt build --threads 8 --select a,b c d"),
    ("dbt build -s a\"--target\"", "dbt build --select a--target"),
]  # fmt: skip


@pytest.mark.parametrize(("step", "sent"), ALLOWED)
def test_allowed_steps_come_back_canonical(step: str, sent: str) -> None:
    assert parse_step(step).text == sent


REFUSED = [
    # subcommands that run code or read rows
    ("dbt run-operation run_query --args '{sql: select 1}'", "'{'"),
    ("dbt run-operation grant_all", "run-operation"),
    ("dbt  RUN-OPERATION grant_all", "RUN-OPERATION"),
    ("dbt show --select orders", "show"),
    ("dbt show --inline 'select * from customers'", "show"),
    ("dbt compile --inline 'select 1'", "--inline"),
    ("dbt compile --inline=x", "--inline"),
    ("dbt deps", "deps"),
    ("dbt docs serve", "docs serve"),
    ("dbt source snapshot-freshness", "source snapshot-freshness"),
    ("dbt", None),
    ("dbt BUILD", "BUILD"),
    # options that change credentials, project or Jinja
    ("dbt build --vars '{\"k\": 1}'", "'{'"),
    ("dbt build --vars 'k: 1'", "--vars"),
    ("dbt build --vars=k:1", "--vars"),
    ('dbt build -s "x" --target prod', "--target"),
    ("dbt build -t prod", "-t"),
    ("dbt build --profile other", "--profile"),
    ("dbt build --profiles-dir /tmp/x", "--profiles-dir"),
    ("dbt build --project-dir ../other", "--project-dir"),
    ("dbt build --full-refresh", "--full-refresh"),
    ("dbt build -f", "-f"),
    ("dbt test --full-refresh", "--full-refresh"),
    ("dbt run --resource-type model", "--resource-type"),
    ("dbt build --exclude-resource-type test", "--exclude-resource-type"),
    ("dbt build --sel x", "--sel"),
    ("dbt build --log-path /tmp", "--log-path"),
    ("dbt source freshness --output /tmp/leak.json", "--output"),
    ("dbt --warn-error build", "--warn-error"),
    # shell metacharacters, in and out of quotes
    ("dbt build; curl http://x", "';'"),
    ("dbt build && curl x", "'&'"),
    ("dbt build | sh", "'|'"),
    ("dbt build $(id)", "'$'"),
    ("dbt build `id`", "'`'"),
    ("dbt build -s \"$HOME\"", "'$'"),
    ("dbt build > /tmp/x", "'>'"),
    ("dbt build < /etc/passwd", "'<'"),
    ("dbt build\ncurl x", "'\\n'"),
    ("dbt build\tx", "'\\t'"),
    ("dbt build -s a\\;b", "'\\\\'"),
    ("dbt build # --target prod", "'#'"),
    ("dbt build -s ~root", "'~'"),
    # look-alikes: fullwidth semicolon, unicode hyphens, Cyrillic letters, non-breaking space
    ("dbt build\uff1b curl x", "U+FF1B"),
    ("dbt build \u2010\u2010vars x", "U+2010"),
    ("dbt build \u2014target prod", "U+2014"),
    ("dbt \u0441ompile", "U+0441"),
    ("dbt build\u00a0--target prod", "U+00A0"),
    # not a dbt command, or not one step
    ("curl http://x", "curl"),
    ("/usr/bin/dbt build", "/usr/bin/dbt"),
    ("DBT build", "DBT"),
    ("python -c 1", "python"),
    ("", None),
    ("   ", None),
    ("dbt build 'unclosed", None),
    ("x" * 1001, None),
    # positional values and option forms dbt reads differently than a prefix check would
    ("dbt build orders", "orders"),
    ("dbt build -- --target prod", "--"),
    ("dbt build -sfoo", "-sfoo"),
    ("dbt build -xs foo", "-xs"),
    ("dbt build --select", "--select"),
    ("dbt build --select --target", "--select"),
    ("dbt build --select=", "--select"),
    ("dbt build --fail-fast=true", "--fail-fast"),
    ("dbt build --threads 0", "--threads"),
    ("dbt build --threads 100000", "--threads"),
    ("dbt build --threads many", "--threads"),
    ("dbt build --threads 4 --threads 8", "--threads"),
    ("dbt build --state /etc", "--state"),
    ("dbt build --state ../../other", "--state"),
    ("dbt build --selector 'a b'", "--selector"),
    ("dbt build -s 'a=b'", "--select"),
    ("dbt test --resource-type secret_type", "--resource-type secret_type"),
    # a quoted value that would become options if its parts were sent as tokens (issue 34)
    ('dbt build --select "a --full-refresh"', "--select"),
    ("dbt build -s 'x --target prod'", "--select"),
    ('dbt build --select="a --profiles-dir=/tmp"', "--select"),
    ("dbt build --exclude 'a -t prod'", "--exclude"),
    ("dbt build -s a 'b --threads 64'", "--select"),
    ("dbt build --selector=-x", "--selector"),
    ("dbt build --state=--target", "--state"),
    ("dbt build --select=-f", "--select"),
    ("dbt build -s 'a  b'", "--select"),
    ("dbt build -s ' a'", "--select"),
    ("dbt 'source freshness'", "source freshness"),
]  # fmt: skip


@pytest.mark.parametrize(("step", "token"), REFUSED)
def test_refused_steps_name_the_token(step: str, token: str | None) -> None:
    with pytest.raises(StepRefused) as refused:
        parse_step(step)
    assert refused.value.token == token, refused.value.reason
    assert refused.value.reason


def test_full_refresh_only_when_configured() -> None:
    assert parse_step("dbt run -f -s x", allow_full_refresh=True).text == "dbt run --full-refresh --select x"
    with pytest.raises(StepRefused, match=r"dbt_cloud\.allow_full_refresh"):
        parse_step("dbt run --full-refresh")


def test_values_are_never_echoed() -> None:
    secret = "hunter2-very-secret-value"
    for step in (
        f"dbt build --vars 'password: {secret}'",
        f"dbt build --vars={secret}",
        f"dbt build -s {secret}=",
    ):
        with pytest.raises(StepRefused) as refused:
            parse_step(step)
        assert secret not in refused.value.reason and secret not in str(refused.value.token)


def test_steps_list_bounds_and_index() -> None:
    assert [c.text for c in parse_steps(["dbt seed", "dbt build"])] == ["dbt seed", "dbt build"]
    with pytest.raises(StepRefused, match="empty"):
        parse_steps([])
    with pytest.raises(StepRefused, match=f"at most {MAX_STEPS}"):
        parse_steps(["dbt build"] * (MAX_STEPS + 1))
    with pytest.raises(StepRefused) as refused:
        parse_steps(["dbt seed", "dbt run-operation x"])
    assert refused.value.index == 1


# --- the table against dbt-core's click definitions -------------------------------------------------------


@pytest.fixture(scope="module")
def dbt_commands() -> dict:
    main = pytest.importorskip("dbt.cli.main")
    cli = main.cli
    out = {}
    for name in SUBCOMMANDS:
        group, _, sub = name.partition(" ")
        out[name] = cli.commands[group].commands[sub] if sub else cli.commands[group]
    return out


def _options(command) -> list:
    import click

    return [p for p in command.params if isinstance(p, click.Option)]


def _arity(option) -> str:
    from dbt.cli.options import MultiOption

    if option.is_flag:
        return "switch"
    if isinstance(option, MultiOption):
        return "many"
    assert not option.multiple and option.nargs == 1, option.opts
    return "one"


def test_allowed_flags_match_dbt_names_and_arity(dbt_commands: dict) -> None:
    for flag in FLAGS:
        for name, command in dbt_commands.items():
            matches = [o for o in _options(command) if flag.name in o.opts + o.secondary_opts]
            assert (name in flag.subcommands) == bool(matches), (flag.name, name)
            if not matches:
                continue
            (option,) = matches
            # every spelling we accept is one dbt accepts for this option, and none that dbt has is missing
            assert set(flag.spellings) == set(option.opts + option.secondary_opts), (flag.name, name)
            assert flag.arity == _arity(option), (flag.name, name)


def test_every_other_dbt_option_is_refused(dbt_commands: dict) -> None:
    allowed = {s for flag in FLAGS for s in flag.spellings}
    for name, command in dbt_commands.items():
        for option in _options(command):
            for spelling in option.opts + option.secondary_opts:
                if spelling in allowed or not spelling.startswith("-"):
                    continue
                with pytest.raises(StepRefused):
                    parse_step(f"dbt {name} {spelling} x", allow_full_refresh=True)
    refused_exist = {s for c in dbt_commands.values() for o in _options(c) for s in o.opts + o.secondary_opts}
    assert set(REFUSED_FLAGS) <= refused_exist  # the named refusals are about real dbt options


def test_resource_types_are_dbt_choices(dbt_commands: dict) -> None:
    option = next(
        o for o in _options(dbt_commands["build"]) if "--resource-type" in o.opts + o.secondary_opts
    )
    assert set(option.type.choices) >= RESOURCE_TYPES
