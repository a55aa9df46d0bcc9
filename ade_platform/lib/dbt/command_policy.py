"""What an agent may ask dbt Cloud to run: the policy on `dbtcloud_trigger_job(steps_override=...)`.

A steps override replaces a job's commands with the agent's, run with the job's credentials. Left open it runs any
code: `dbt run-operation` calls any macro (`run_query` executes any statement), `dbt compile --inline` and `dbt show`
render query results into artifacts the agent can fetch, `--vars` feeds values into Jinja, `--target`,
`--profile`, `--profiles-dir` and `--project-dir` point the run at other credentials or code. So a step is read the
way a shell and dbt read it, and only what is on the lists below passes:

1. Characters: printable ASCII letters, digits, space and `_ . , : + * @ / = - ' "`. Every shell metacharacter
   (`; | & $ \\` > < ( ) { } [ ] ! # ~ ? ^ %`, backslash, newline, tab) and every non-ASCII character (look-alike
   quotes, dashes, semicolons, spaces) is refused before anything else.
2. Tokens: POSIX shell splitting (`shlex`), so quoting hides nothing.
3. `dbt`, then one allowed subcommand (case-sensitive, as dbt is), then options parsed as dbt's click commands
   parse them: long names with a separate value or `--name=value`, the short aliases as separate tokens, the
   multi-value options (`--select a b c`) taking every following token up to the next option, the same
   multi-value option repeated. No positional argument, no `--`, no option before the subcommand.
4. Values, as dbt reads them: a multi-value option's value splits on single spaces (dbt's MultiOption splits the
   first, its selection parser every one), and each part is one value. Every value is checked for what it is (a
   node selector, a selector name, a thread count 1 to MAX_THREADS, a relative state path, a resource type) and
   none may start with `-`, be empty, or hold a space, a quote or a shell metacharacter.

The result is a typed model (DbtCommand: the subcommand, then each option with its values), and the text sent to
dbt Cloud is rendered from that model, never from the agent's text: each option and each value is one token that
needs no quoting beyond shlex.quote's, so dbt Cloud's shell-style split of the rendering gives back exactly the
model's tokens (checked at render time), and no value can become an option or a second token. FLAGS mirrors
dbt-core's own command definitions (tests/unit/test_dbt_command_policy.py compares them, names and arity);
tests/security/test_dbt_steps_property.py checks, with dbt's own click parser, that what is sent means what
the model says.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass
from typing import Literal

MAX_STEPS = 20
MAX_STEP_CHARS = 1000
MAX_THREADS = 64
_TOKEN_SHOWN = 40

SUBCOMMANDS = ("build", "run", "test", "seed", "snapshot", "compile", "source freshness", "docs generate")
ALL = frozenset(SUBCOMMANDS)
_TWO_WORD = {"source": "freshness", "docs": "generate"}

# Refused with the reason, so an agent (and a reviewer of the audit trail) sees why, not just "unknown".
REFUSED_SUBCOMMANDS = {
    "run-operation": "runs any macro with the job's credentials (run_query executes any statement)",
    "show": "renders query results (rows of data) into the run's output",
}
REFUSED_FLAGS = {
    "--inline": "it compiles and runs arbitrary SQL and Jinja",
    "--vars": "it passes values into Jinja, where they can change what runs",
    "--target": "it selects other credentials than the job's",
    "-t": "it is --target, which selects other credentials than the job's",
    "--profile": "it selects other credentials than the job's",
    "--profiles-dir": "it reads credentials from another folder",
    "--project-dir": "it runs another project's code",
}
SHELL_METACHARACTERS = frozenset(";|&$`><(){}[]!#~?^%\\\n\r\t")
ALLOWED_CHARACTERS = frozenset(string.ascii_letters + string.digits + " _.,:+*@/=-'\"")

Arity = Literal["switch", "one", "many"]
ValueKind = Literal["none", "selector", "name", "threads", "state_path", "resource_type"]


@dataclass(frozen=True)
class Flag:
    """One dbt option an agent may pass: every spelling dbt accepts for it, its arity, what its value must be."""

    name: str  # the canonical spelling sent to dbt Cloud
    spellings: tuple[str, ...]  # every name dbt's click option answers to (long, short, negated)
    arity: Arity  # switch: no value; one: one value; many: dbt's MultiOption (values up to the next option)
    value: ValueKind
    subcommands: frozenset[str]
    needs_setting: str | None = None  # allowed only when this dbt_cloud setting is on


FLAGS: tuple[Flag, ...] = (
    Flag("--select", ("--select", "-s", "--models", "-m", "--model"), "many", "selector", ALL),
    Flag("--exclude", ("--exclude",), "many", "selector", ALL),
    Flag("--selector", ("--selector",), "one", "name", ALL),
    Flag(
        "--resource-type",
        ("--resource-type", "--resource-types"),
        "many",
        "resource_type",
        frozenset({"build", "test"}),
    ),
    Flag("--fail-fast", ("--fail-fast", "-x", "--no-fail-fast"), "switch", "none", ALL),
    Flag(
        "--full-refresh",
        ("--full-refresh", "-f"),
        "switch",
        "none",
        frozenset({"build", "run", "seed", "compile"}),
        needs_setting="dbt_cloud.allow_full_refresh",
    ),
    Flag("--defer", ("--defer", "--no-defer"), "switch", "none", ALL),
    Flag("--state", ("--state",), "one", "state_path", ALL),
    Flag("--favor-state", ("--favor-state", "--no-favor-state"), "switch", "none", ALL),
    Flag("--threads", ("--threads",), "one", "threads", ALL),
    Flag("--warn-error", ("--warn-error",), "switch", "none", ALL),
)
_BY_SPELLING = {spelling: flag for flag in FLAGS for spelling in flag.spellings}
# Spellings that stay as given (a negation means the opposite of the canonical name).
_KEPT_SPELLINGS = frozenset({"--no-fail-fast", "--no-defer", "--no-favor-state"})
RESOURCE_TYPES = frozenset(
    {"model", "seed", "snapshot", "test", "unit_test", "source", "analysis", "exposure", "metric",
     "semantic_model", "saved_query"}
)  # fmt: skip
# Every value the policy accepts, of any kind, is made of these characters and never starts with `-`: such a token is
# one token to every splitter (shlex, a POSIX shell, a plain split on whitespace) and never read as an option.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.:+*@/,][A-Za-z0-9_.:+*@/,\-]{0,255}")
_SELECTOR = re.compile(r"[A-Za-z0-9_.:+*@/,][A-Za-z0-9_.:+*@/,\-]{0,255}")
_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.\-]{0,127}")
_STATE_PATH = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.\-]+)*/?")


class StepRefused(ValueError):
    """A step the policy does not allow; `token` names what was refused (never a value that may be secret)."""

    def __init__(self, reason: str, token: str | None = None, index: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.token = token
        self.index = index  # which step of a steps_override, when known


@dataclass(frozen=True)
class StepOption:
    """One option of a checked step: the spelling sent (the canonical name, or a kept negation) and its values
    (none for a switch, one for `one`, one or more for `many`), each a plain value."""

    flag: Flag
    spelling: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class DbtCommand:
    """A checked step as dbt will read it. `tokens` and `text` are rendered from this model, so what is sent to dbt
    Cloud is the model and nothing else; a model that cannot be rendered that way is never built."""

    subcommand: str
    options: tuple[StepOption, ...] = ()

    def __post_init__(self) -> None:
        self.text  # noqa: B018 -- renders (and so checks) the model once, when it is built

    @property
    def tokens(self) -> tuple[str, ...]:
        """dbt, the subcommand's words, then each option's spelling followed by its values, one token each."""
        if self.subcommand not in ALL:
            raise StepRefused(
                f"`{_shown(self.subcommand)}` is not an allowed dbt subcommand", _shown(self.subcommand)
            )
        out = ["dbt", *self.subcommand.split(" ")]
        for option in self.options:
            if option.spelling not in option.flag.spellings or not option.spelling.startswith("--"):
                raise StepRefused(
                    f"{option.spelling} is not a spelling of {option.flag.name}", option.flag.name
                )
            if (option.flag.arity == "switch") != (not option.values) or (
                option.flag.arity == "one" and len(option.values) != 1
            ):
                raise StepRefused(f"{option.flag.name} has the wrong number of values", option.flag.name)
            out.append(option.spelling)
            for value in option.values:
                if not _PLAIN_VALUE.fullmatch(value):
                    raise StepRefused(
                        f"a value of {option.flag.name} cannot be sent as one plain token", option.flag.name
                    )
                out.append(value)
        return tuple(out)

    @property
    def text(self) -> str:
        """The step sent to dbt Cloud. dbt Cloud splits a step the way a POSIX shell does (shlex); the rendering is
        refused unless that split gives back exactly `tokens` (it always does for plain values: the check keeps it
        so if the value rules ever widen)."""
        tokens = self.tokens
        text = " ".join(shlex.quote(token) for token in tokens)
        if tuple(shlex.split(text, posix=True)) != tokens:
            raise StepRefused(
                "the step cannot be rendered so that dbt Cloud reads the tokens that were checked"
            )
        return text


def _shown(token: str) -> str:
    return token if len(token) <= _TOKEN_SHOWN else token[: _TOKEN_SHOWN - 1] + "…"


def _check_characters(step: str) -> None:
    for ch in step:
        if ch in ALLOWED_CHARACTERS:
            continue
        if ch in SHELL_METACHARACTERS:
            raise StepRefused(f"{ch!r} is a shell metacharacter; steps are plain dbt commands", repr(ch))
        raise StepRefused(
            f"character U+{ord(ch):04X} is not allowed (only ASCII letters, digits, space and _ . , : + * @ / = - "
            "' \" may appear)",
            f"U+{ord(ch):04X}",
        )


def _subcommand(tokens: list[str]) -> tuple[str, int]:
    """The subcommand and the index of the first token after it."""
    if len(tokens) < 2:
        raise StepRefused("a step needs a subcommand, e.g. `dbt build --select stg_orders+`")
    word = tokens[1]
    if word in REFUSED_SUBCOMMANDS:
        raise StepRefused(f"`dbt {word}` is not allowed: it {REFUSED_SUBCOMMANDS[word]}", word)
    if word.startswith("-"):
        raise StepRefused(f"options go after the subcommand, not before it ({_shown(word)})", _shown(word))
    if word in _TWO_WORD:
        second = tokens[2] if len(tokens) > 2 else ""
        if second != _TWO_WORD[word]:
            raise StepRefused(
                f"`dbt {word}` is allowed only as `dbt {word} {_TWO_WORD[word]}`", _shown(f"{word} {second}")
            )
        return f"{word} {second}", 3
    if " " in word:  # `dbt 'source freshness'` is one token, and dbt has no command by that name
        raise StepRefused(
            f"`{_shown(word)}` is quoted as one word; write the subcommand unquoted", _shown(word)
        )
    if word not in ALL:
        raise StepRefused(
            f"`{_shown(word)}` is not an allowed dbt subcommand (allowed: {', '.join(SUBCOMMANDS)})",
            _shown(word),
        )
    return word, 2


def _dbt_values(flag: Flag, raw: list[str]) -> tuple[str, ...]:
    """The values dbt reads from an option's value tokens, each checked. A multi-value option's token splits on
    single spaces, as dbt does (`--select 'a b'` selects a and b); an empty part (two spaces, a space at either
    end) is refused rather than guessed at."""
    parts = [part for token in raw for part in token.split(" ")] if flag.arity == "many" else raw
    return tuple(_check_value(flag, part) for part in parts)


def _check_value(flag: Flag, part: str) -> str:
    """The value as sent (a thread count without leading zeros), or StepRefused naming the option, never the value."""
    if not part:
        raise StepRefused(
            f"{flag.name} has an empty value (a quoted list with two spaces or an edge space)", flag.name
        )
    if part.startswith("-"):
        raise StepRefused(f"a value of {flag.name} starts with '-' (an option is never a value)", flag.name)
    if " " in part or not _PLAIN_VALUE.fullmatch(part):
        raise StepRefused(
            f"a value of {flag.name} holds a character no {flag.value.replace('_', ' ')} has", flag.name
        )
    if flag.value == "selector" and not _SELECTOR.fullmatch(part):
        raise StepRefused(
            f"a value of {flag.name} is not a dbt node selector (letters, digits and _ . : + * @ / , -)",
            flag.name,
        )
    if flag.value == "resource_type" and part not in RESOURCE_TYPES:
        raise StepRefused(
            f"{flag.name} takes one of {', '.join(sorted(RESOURCE_TYPES))}", f"{flag.name} {_shown(part)}"
        )
    if flag.value == "name" and not _NAME.fullmatch(part):
        raise StepRefused(f"the value of {flag.name} is not a selector name", flag.name)
    if flag.value == "threads":
        if not (part.isascii() and part.isdigit() and 1 <= int(part) <= MAX_THREADS):
            raise StepRefused(f"{flag.name} takes a number from 1 to {MAX_THREADS}", flag.name)
        return str(int(part))
    if flag.value == "state_path" and (not _STATE_PATH.fullmatch(part) or ".." in part.split("/")):
        raise StepRefused(
            f"{flag.name} takes a relative path inside the project (no absolute path, no ..)", flag.name
        )
    return part


def _unknown_option(name: str, subcommand: str) -> StepRefused:
    if name in REFUSED_FLAGS:
        return StepRefused(f"{name} is not allowed: {REFUSED_FLAGS[name]}", name)
    if name in _BY_SPELLING:
        return StepRefused(f"`dbt {subcommand}` does not take {name}", name)
    return StepRefused(f"{_shown(name)} is not an allowed option of `dbt {subcommand}`", _shown(name))


def parse_step(step: str, *, allow_full_refresh: bool = False) -> DbtCommand:
    """The step as a checked dbt command, or StepRefused saying which token is not allowed and why."""
    if not step.strip():
        raise StepRefused("the step is empty")
    if len(step) > MAX_STEP_CHARS:
        raise StepRefused(f"the step is longer than {MAX_STEP_CHARS} characters")
    _check_characters(step)
    try:
        tokens = shlex.split(step, posix=True)
    except ValueError:
        raise StepRefused("the step has an unclosed quote") from None
    if tokens[0] != "dbt":
        raise StepRefused("a step is a dbt command: it starts with `dbt`", _shown(tokens[0]))
    subcommand, i = _subcommand(tokens)
    options: list[StepOption] = []
    seen: set[str] = set()
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--" or not token.startswith("-") or token == "-":
            raise StepRefused(
                f"unexpected argument `{_shown(token)}`: only options follow the subcommand", _shown(token)
            )
        if not token.startswith("--") and len(token) > 2:
            raise StepRefused(
                f"`{_shown(token)}`: combined or attached short options are not accepted; write e.g. `-s VALUE`",
                _shown(token),
            )
        name, has_value, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        flag = _BY_SPELLING.get(name)
        if flag is None or subcommand not in flag.subcommands:
            raise _unknown_option(name, subcommand)
        if flag.needs_setting and not allow_full_refresh:
            raise StepRefused(f"{flag.name} is turned off ({flag.needs_setting})", name)
        if flag.arity != "many" and flag.name in seen:
            raise StepRefused(f"{flag.name} is given twice", name)
        seen.add(flag.name)
        spelled = name if name in _KEPT_SPELLINGS else flag.name
        if flag.arity == "switch":
            if has_value:
                raise StepRefused(f"{name} takes no value", name)
            options.append(StepOption(flag, spelled))
            continue
        if has_value:
            raw = [inline]
        elif i < len(tokens) and not tokens[i].startswith("-"):
            raw = [tokens[i]]
            i += 1
        else:
            raise StepRefused(f"{name} needs a value", name)
        if flag.arity == "many":  # dbt's MultiOption: every following token up to the next option
            while i < len(tokens) and not tokens[i].startswith("-"):
                raw.append(tokens[i])
                i += 1
        options.append(StepOption(flag, spelled, _dbt_values(flag, raw)))
    return DbtCommand(subcommand, tuple(options))


def parse_steps(steps: list[str], *, allow_full_refresh: bool = False) -> list[DbtCommand]:
    """Every step checked (StepRefused for the first that is not allowed, with `index` set)."""
    if not steps:
        raise StepRefused("steps_override is empty: omit it to run the job's own steps")
    if len(steps) > MAX_STEPS:
        raise StepRefused(f"at most {MAX_STEPS} steps")
    commands = []
    for index, step in enumerate(steps):
        try:
            commands.append(parse_step(step, allow_full_refresh=allow_full_refresh))
        except StepRefused as exc:
            raise StepRefused(exc.reason, exc.token, index) from None
    return commands
