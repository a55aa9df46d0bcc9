"""dbt steps for the attacker's suite: dbt's own reading of a step, generated allowed steps, and hostile variants.

`dbt_reads` parses a step's tokens with dbt-core's click command definitions (`dbt.cli.main.cli`), the parser dbt
runs on dbt Cloud, without invoking anything: it answers which parameters the command line set and to what.
`allowed_steps` is a hypothesis strategy of steps the policy must pass, each with the model it must produce;
`hostile_steps` one of steps built to smuggle an option; `HOSTILE` the same attacks as a fixed, named list of
classes (every variant of every class), for the MCP suite and the report.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ade_platform.lib.dbt.command_policy import FLAGS, RESOURCE_TYPES, SUBCOMMANDS, Flag

# dbt's parameter names (click `dest`) the policy may let a step set; anything else on dbt's command line is a leak.
ALLOWED_PARAMS = frozenset(
    {"select", "exclude", "selector", "resource_types", "fail_fast", "full_refresh", "defer", "state",
     "favor_state", "threads", "warn_error"}
)  # fmt: skip
SELECTION_PARAMS = ("select", "exclude")


@dataclass(frozen=True)
class DbtReading:
    command: str  # the subcommand path, e.g. "source freshness"
    group_params: dict[str, Any]  # set on `dbt` (or `dbt source`) before the subcommand
    params: dict[str, Any]  # set on the subcommand


def dbt_reads(tokens: list[str]) -> DbtReading:
    """How dbt's click reads `tokens` (`dbt`, subcommand, options): only the parameters the command line set (not
    defaults, not environment variables). Raises click's own error where dbt would refuse the command line."""
    import click
    from click.core import ParameterSource
    from dbt.cli.main import cli

    assert tokens[0] == "dbt", tokens

    def given(ctx: click.Context) -> dict[str, Any]:
        return {
            k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE
        }

    def rest(ctx: click.Context) -> list[str]:  # what a group left for its subcommand (click moved the name)
        return [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])), *ctx.args]

    ctx = cli.make_context("dbt", list(tokens[1:]))
    group_params, path = given(ctx), []
    command: click.Command = cli
    while isinstance(command, click.Group):
        name, sub, args = command.resolve_command(ctx, rest(ctx))
        assert name is not None and sub is not None
        path.append(name)
        ctx, command = sub.make_context(name, args, parent=ctx), sub
        if isinstance(command, click.Group):
            group_params.update(given(ctx))
    return DbtReading(" ".join(path), group_params, given(ctx))


def expected_params(command: Any) -> dict[str, Any]:
    """What dbt's params must be for a policy model (DbtCommand): a multi-value option's values in order across
    its repetitions, a thread count as a number, a state folder as a path, a switch True unless negated."""
    out: dict[str, Any] = {}
    for option in command.options:
        dest = _DEST[option.flag.name]
        if option.flag.arity == "many":
            out[dest] = out.get(dest, ()) + option.values
        elif option.flag.arity == "switch":
            out[dest] = not option.spelling.startswith("--no-")
        elif option.flag.value == "threads":
            out[dest] = int(option.values[0])
        elif option.flag.value == "state_path":
            out[dest] = Path(option.values[0])
        else:
            out[dest] = option.values[0]
    return out


_DEST = {
    "--select": "select", "--exclude": "exclude", "--selector": "selector", "--resource-type": "resource_types",
    "--fail-fast": "fail_fast", "--full-refresh": "full_refresh", "--defer": "defer", "--state": "state",
    "--favor-state": "favor_state", "--threads": "threads", "--warn-error": "warn_error",
}  # fmt: skip


def selection_split(params: dict[str, Any]) -> dict[str, Any]:
    """dbt's selection parser splits every --select/--exclude component on single spaces (dbt.graph.cli.
    parse_union: `'a b'` selects a and b); the click parse of an agent's quoted list holds the unsplit text."""
    return {
        k: tuple(part for v in vals for part in v.split(" ")) if k in SELECTION_PARAMS else vals
        for k, vals in params.items()
    }


# --- allowed steps ------------------------------------------------------------------------------------------

_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_METHODS = st.sampled_from(
    ["tag", "path", "config.materialized", "config.meta.owner", "source", "fqn", "package", "state", "result",
     "resource_type", "test_type", "exposure", "group", "access", "version", "semantic_model", "file", "wildcard"]
)  # fmt: skip
_METHOD_VALUES = st.one_of(
    _NAMES,
    st.builds(lambda a, b: f"{a}.{b}", _NAMES, _NAMES),
    st.builds(lambda a, b: f"models/{a}/{b}", _NAMES, _NAMES),
    st.builds(lambda a: f"{a}.*", _NAMES),
    st.builds(lambda a: f"models/{a}/*.sql", _NAMES),
)
_NODE = st.one_of(
    _NAMES,
    st.just("*"),
    st.builds(lambda m, v: f"{m}:{v}", _METHODS, _METHOD_VALUES),
    st.builds(lambda a, b: f"{a}.{b}", _NAMES, _NAMES),
)
_PREFIX = st.sampled_from(["", "", "+", "@", "1+", "2+", "12+"])
_SUFFIX = st.sampled_from(["", "", "+", "+1", "+3"])
_GRAPH = st.builds(lambda p, n, s: p + n + ("" if p == "@" and s else s), _PREFIX, _NODE, _SUFFIX)
SELECTORS = st.builds(",".join, st.lists(_GRAPH, min_size=1, max_size=3))  # `a,b` is dbt's intersection
_QUOTES = st.sampled_from(["", "", "'", '"'])


@st.composite
def _option(draw: st.DrawFn, flag: Flag) -> tuple[list[str], tuple[str, str, tuple[str, ...]]]:
    """One option as an agent could write it (its words of text) and the model entry it must give."""
    spelling = draw(st.sampled_from(flag.spellings))
    long = spelling.startswith("--")
    if flag.arity == "switch":
        kept = spelling if spelling.startswith("--no-") else flag.name
        quote = draw(_QUOTES)  # quoting an option's name hides nothing from a shell split
        return [f"{quote}{spelling}{quote}"], (flag.name, kept, ())
    if flag.arity == "one":
        value, sent = _one_value(draw, flag)
        quote = draw(_QUOTES)
        word = f"{quote}{value}{quote}"
        words = [f"{spelling}={word}"] if long and draw(st.booleans()) else [spelling, word]
        return words, (flag.name, flag.name, (sent,))
    values = SELECTORS if flag.value == "selector" else st.sampled_from(sorted(RESOURCE_TYPES))
    groups = draw(st.lists(st.lists(values, min_size=1, max_size=3), min_size=1, max_size=3))
    if (
        flag.value != "selector"
    ):  # dbt checks each click value against its choices: a quoted list only goes first
        groups = [groups[0], *([v] for g in groups[1:] for v in g)]
    words = []
    for group in groups:
        quote = draw(_QUOTES) or ("'" if len(group) > 1 else "")
        words.append(f"{quote}{' '.join(group)}{quote}")
    if long and draw(st.booleans()):
        words[0] = f"{spelling}={words[0]}"
    else:
        words.insert(0, spelling)
    return words, (flag.name, flag.name, tuple(v for g in groups for v in g))


def _one_value(draw: st.DrawFn, flag: Flag) -> tuple[str, str]:
    if flag.value == "threads":
        n = draw(st.integers(1, 64))
        return (f"0{n}" if draw(st.booleans()) else str(n)), str(n)
    if flag.value == "state_path":
        path = "/".join(draw(st.lists(_NAMES, min_size=1, max_size=3))) + draw(st.sampled_from(["", "/"]))
        return path, path
    name = draw(_NAMES)
    return name, name


@st.composite
def allowed_steps(draw: st.DrawFn) -> tuple[str, bool, list[tuple[str, str, tuple[str, ...]]]]:
    """(step text, allow_full_refresh, the model's options as (flag, spelling sent, values))."""
    subcommand = draw(st.sampled_from(SUBCOMMANDS))
    allow_full_refresh = draw(st.booleans())
    usable = [f for f in FLAGS if subcommand in f.subcommands and (allow_full_refresh or not f.needs_setting)]
    drawn = draw(st.lists(st.sampled_from(usable), max_size=6))
    # the policy refuses a single-value option or a switch given twice (dbt would keep the last silently)
    chosen = [f for i, f in enumerate(drawn) if f.arity == "many" or f not in drawn[:i]]
    words, model = ["dbt", *subcommand.split(" ")], []
    for flag in chosen:
        option_words, entry = draw(_option(flag))
        words += option_words
        model.append(entry)
    gaps = draw(st.lists(st.sampled_from([" ", " ", "  ", "   "]), min_size=len(words), max_size=len(words)))
    text = draw(st.sampled_from(["", " "])) + "".join(w + g for w, g in zip(words, gaps, strict=True))
    return text, allow_full_refresh, model


def dbt_tokens(text: str) -> list[str]:
    """A step split the way dbt Cloud splits it: POSIX shell words."""
    return shlex.split(text, posix=True)


# --- hostile steps ------------------------------------------------------------------------------------------

# What a step must never get to dbt: full refresh when it is off, other credentials, folders or outputs, Jinja
# values, inline SQL, more threads than allowed (as a smuggled option a count is refused whatever its value).
SMUGGLED = (
    "--full-refresh", "-f", "--target prod", "-t prod", "--target=prod", "--profile other", "--profile=other",
    "--profiles-dir /tmp/x", "--profiles-dir=/tmp/x", "--project-dir ../x", "--threads 64", "--threads=64",
    "--target-path /tmp/out", "--log-path /tmp/log", "--empty", "--vars k:1", "--inline x", "--defer-state x",
)  # fmt: skip
_REPRESENTATIVE = ("--full-refresh", "-t prod", "--profiles-dir=/tmp/x", "--threads 64", "--target-path /tmp/out",
                   "--empty")  # fmt: skip
# Characters a reader takes for a space or a dash; none is an ASCII space or hyphen-minus.
SEPARATORS = ("\t", "\n", "\r", "\v", "\f", "\x85", "\u00a0", "\u1680", "\u2000", "\u2003", "\u2009", "\u200b",
              "\u202f", "\u205f", "\u3000", "\ufeff", "\u2028")  # fmt: skip
DASHES = ("\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212", "\ufe58", "\ufe63", "\uff0d",
          "\u00ad")  # fmt: skip

# Each class: templates with {s}, the smuggled text, placed where a check on the agent's words could miss it.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "inside a quoted selector list": ('--select "a {s}"', "-s 'x {s}'", '-s a "b {s}"', "--exclude 'a {s}'",
                                      '--models "{s} a"', "-m 'a {s} b'"),
    "=-joined to a multi-value option": ('--select="a {s}"', "--select='a {s}'", '--exclude="{s}"',
                                         "--select={s}"),
    "as an option's whole value": ('--select "{s}"', "-s '{s}'", '--selector "{s}"', '--state "{s}"',
                                   "--threads '{s}'", '--resource-type "{s}"'),
    "inside another option's value": ('--selector "n {s}"', "--state 'st {s}'", '--threads "4 {s}"',
                                      "--resource-type 'model {s}'"),
    "quotes run together": ('-s a" "{s}', "-s 'a'\" {s}\"", "-s \"a \"'{s}'", "-s a' '\"{s}\""),
}  # fmt: skip
# Given as its own word the option is simply not allowed (the threads count itself is, up to 64).
DIRECT_TEMPLATES = ("-s a {s}", "{s}", "--fail-fast {s} --select a")


def _dashed(smuggled: str, dash: str) -> str:
    name, _, rest = smuggled.partition(" ")
    stripped = name.lstrip("-")
    return dash * (len(name) - len(stripped)) + stripped + (f" {rest}" if rest else "")


def hostile_variants() -> dict[str, list[str]]:
    """Every hostile step of every class, `dbt <subcommand> ...` (the subcommand rotates where the options allow)."""
    out: dict[str, list[str]] = {}
    for name, templates in TEMPLATES.items():
        out[name] = [f"dbt build {t.format(s=s)}" for t in templates for s in SMUGGLED]
    rotate = list(SUBCOMMANDS)
    out["inside a quoted selector list"] = [
        f"dbt {rotate[i % len(rotate)]} {step.removeprefix('dbt build ')}"
        for i, step in enumerate(out["inside a quoted selector list"])
    ]
    direct = [s for s in SMUGGLED if not s.startswith("--threads")] + ["--threads 999", "--threads=0"]
    out["as its own word"] = [f"dbt build {t.format(s=s)}" for t in DIRECT_TEMPLATES for s in direct]
    out["tab, newline or unicode space before it"] = [
        f"dbt build {t.format(sep=sep, s=s)}" for t in ("-s a{sep}{s}", '-s "a{sep}{s}"') for sep in SEPARATORS
        for s in _REPRESENTATIVE
    ]  # fmt: skip
    out["look-alike dashes"] = [
        f"dbt build {t.format(s=_dashed(s, dash))}" for t in ("-s a {s}", '-s "a {s}"') for dash in DASHES
        for s in _REPRESENTATIVE
    ]  # fmt: skip
    return out


@st.composite
def hostile_steps(draw: st.DrawFn, dbt_options: list[str]) -> str:
    """A step that tries to carry an option past the policy: a smuggled option (the list above, or any option of
    dbt's that the policy does not allow), perhaps with look-alike dashes, placed by one of the templates, after a
    separator that may not be a space, with allowed options before and after it."""
    smuggled = draw(
        st.one_of(st.sampled_from(SMUGGLED), st.sampled_from(dbt_options).map(lambda o: f"{o} x"))
    )
    if draw(st.integers(0, 4)) == 0:
        smuggled = _dashed(smuggled, draw(st.sampled_from(DASHES)))
    if draw(st.integers(0, 4)) == 0:  # `--opt value` as `--opt=value`
        smuggled = smuggled.replace(" ", "=", 1)
    template = draw(st.sampled_from([t for ts in TEMPLATES.values() for t in ts] + list(DIRECT_TEMPLATES)))
    separator = draw(st.sampled_from((" ",) * 8 + SEPARATORS))
    body = template.replace(" {s}", separator + "{s}").format(s=smuggled)
    before = draw(
        st.sampled_from(["", "--fail-fast ", "-s stg_orders+ ", "--threads 4 ", "--exclude 'a b' "])
    )
    after = draw(st.sampled_from(["", " --defer", " -s y", " --state st"]))
    return f"dbt {draw(st.sampled_from(['build', 'run', 'compile']))} {before}{body}{after}"
