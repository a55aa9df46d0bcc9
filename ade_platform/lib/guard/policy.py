"""Guardrail policy and exclusion matching.

Exclusion patterns are globs (``*`` any run of characters, ``?`` one character, everything else literal,
case-insensitive) over Snowflake's DB.SCHEMA.OBJECT namespace. A pattern with k dot-separated parts must
match k consecutive parts of a name, so ``PROD.*`` excludes a database (or a schema) named PROD and
everything in it, ``*.HR.*`` every object in a schema HR, ``PROD.*.SALARIES`` one table name in any schema
of PROD. A single-part pattern (``*PII*``, ``PROD_*``, ``*_BACKUP``) is tested against every part, and
against the whole dotted name.

Parts of a name that are not known - an unqualified name with no default database/schema in the policy,
or the contents of a database or schema - are assumed to match: a guardrail must err on excluding, so an
unqualified ``SALARIES`` is caught by ``PROD.*.SALARIES`` because it may well resolve there.

Exclusion regexes are the spec's form (snowflake-cli-mcp-architecture 3.4): any Python regular expression,
searched case-insensitively (``re.search``, like JavaScript's ``RegExp.test``) in each known part of a name
(database, schema, object; an account-level object's own name) and in the whole dotted name when every part
is known. ``DEFAULT_EXCLUSION_REGEXES`` are the spec's defaults; the settings layer turns them on unless the
configuration replaces them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

Slots = tuple[str | None, str | None, str | None]

# Kinds whose name is the database or the schema itself; trailing parts (their contents) are unknown.
CONTAINER_KINDS = frozenset({"DATABASE", "SCHEMA"})

# Account-level objects live outside DB.SCHEMA.OBJECT, so only single-part patterns can name them.
ACCOUNT_KINDS = frozenset(
    {
        "ACCOUNT",
        "APPLICATION",
        "COMPUTE_POOL",
        "CONNECTION",
        "EXTERNAL_VOLUME",
        "FAILOVER_GROUP",
        "INTEGRATION",
        "NETWORK_POLICY",
        "REPLICATION_GROUP",
        "RESOURCE_MONITOR",
        "ROLE",
        "SHARE",
        "USER",
        "WAREHOUSE",
    }
)

# Kinds that can stand in FROM. A bare reference there is one of these, and only the catalog can say which.
RELATION_KINDS = frozenset(
    {
        "TABLE",
        "VIEW",
        "MATERIALIZED_VIEW",
        "EXTERNAL_TABLE",
        "DYNAMIC_TABLE",
        "EVENT_TABLE",
        "ICEBERG_TABLE",
        "HYBRID_TABLE",
        "SECURE_VIEW",
        "SEMANTIC_VIEW",
        "STREAM",
    }
)


# The spec's DEFAULT_EXCLUSIONS: production, backup, archive and system objects are never touched.
DEFAULT_EXCLUSION_REGEXES = ("^PROD_", "_PROD$", "_BACKUP$", "_ARCHIVE$", "^SYSTEM_")


def compile_exclusion_regex(pattern: str) -> re.Pattern[str]:
    """Compile one exclusion regex; a malformed one (or one that matches an empty name) is a ValueError."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"exclusion regex {pattern!r} is not a valid regular expression ({exc})") from None
    if compiled.search(""):
        # A regex that matches the empty string matches every name: almost certainly a mistake (e.g. 'A|').
        raise ValueError(f"exclusion regex {pattern!r} matches every name")
    return compiled


def normalize_kind(kind: str) -> str:
    """``materialized view`` -> ``MATERIALIZED_VIEW``: one spelling for config, AST and catalog."""
    return re.sub(r"[\s\-]+", "_", kind.strip()).upper()


@dataclass(frozen=True)
class GuardPolicy:
    """What the guardrail refuses and how strict the SCALAR class is.

    ``allow_numeric_aggregates`` lets AVG/SUM of a bare column count as SCALAR; off by default because a
    sum over one row is that row's value. ``allow_filtered_counts`` lets SCALAR/stat-bearing queries carry
    arbitrary WHERE predicates and joins; off by default because ``COUNT(*) ... WHERE ssn = '...'`` is a
    membership oracle. ``default_database``/``default_schema`` must be the context the statement will run
    in (the tool layer pins them on the connection); they make exclusion matching of unqualified names exact.
    """

    exclusion_patterns: tuple[str, ...] = ()
    exclusion_regexes: tuple[str, ...] = ()
    excluded_object_types: frozenset[str] = frozenset()
    default_database: str | None = None
    default_schema: str | None = None
    allow_numeric_aggregates: bool = False
    allow_filtered_counts: bool = False
    max_scalar_rows: int = 1
    # Names of user table functions known to be read-only UDTFs; any other table function may be a
    # stored procedure with side effects (Snowflake allows SELECT ... FROM TABLE(proc())).
    allowed_table_functions: frozenset[str] = frozenset()
    max_sql_length: int = 100_000
    # ALTER TASK|ALERT ... RESUME and EXECUTE TASK|ALERT run a body this check may never have seen (another
    # user's task, or one created before bodies were checked): refused unless an operator turns this on.
    allow_task_execution: bool = False
    _compiled: tuple[tuple[str, tuple[re.Pattern[str], ...], re.Pattern[str]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    _regexes: tuple[tuple[str, re.Pattern[str]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        patterns = tuple(p.strip().upper() for p in self.exclusion_patterns if p and p.strip())
        compiled = []
        for pattern in patterns:
            parts = pattern.split(".")
            if len(parts) > 3 or any(not p for p in parts):
                raise ValueError(
                    f"exclusion pattern {pattern!r} must have 1 to 3 non-empty dot-separated parts"
                )
            compiled.append((pattern, tuple(_glob(p) for p in parts), _glob(pattern)))
        object.__setattr__(self, "exclusion_patterns", patterns)
        object.__setattr__(self, "_compiled", tuple(compiled))
        regexes = tuple(r for r in self.exclusion_regexes if r and r.strip())
        object.__setattr__(self, "exclusion_regexes", regexes)
        object.__setattr__(self, "_regexes", tuple((r, compile_exclusion_regex(r)) for r in regexes))
        types = frozenset(normalize_kind(t) for t in self.excluded_object_types)
        object.__setattr__(self, "excluded_object_types", types)
        object.__setattr__(
            self, "allowed_table_functions", frozenset(f.upper() for f in self.allowed_table_functions)
        )
        for attr in ("default_database", "default_schema"):
            value = getattr(self, attr)
            if value is not None:
                object.__setattr__(self, attr, _strip_quotes(value))
        if self.max_scalar_rows < 1:
            raise ValueError("max_scalar_rows must be at least 1")

    @property
    def has_exclusions(self) -> bool:
        return bool(self.exclusion_patterns or self.exclusion_regexes or self.excluded_object_types)


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    # Hand-rolled rather than fnmatch: '[' stays literal, so a pattern always matches its own text.
    # Runs of '*' collapse to one, which keeps backtracking linear for patterns like '**PII**'.
    body = "".join(
        ".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in re.sub(r"\*+", "*", pattern)
    )
    return re.compile(body, re.IGNORECASE | re.DOTALL)


def _strip_quotes(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] == '"':
        return part[1:-1].replace('""', '"').upper()
    return part.upper()


def split_name(name: str) -> list[str]:
    """Split ``"my.db".S.T`` into parts, honouring double quotes; an empty middle part is PUBLIC."""
    parts: list[str] = []
    buf: list[str] = []
    in_quotes = False
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == '"':
            if in_quotes and i + 1 < len(name) and name[i + 1] == '"':
                buf.append('"')
                i += 2
                continue
            in_quotes = not in_quotes
        elif ch == "." and not in_quotes:
            parts.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf).strip())
    # `db..t` is Snowflake shorthand for the PUBLIC schema.
    parts = [p if p or idx in (0, len(parts) - 1) else "PUBLIC" for idx, p in enumerate(parts)]
    return [p.upper() for p in parts if p]


def name_slots(parts: Iterable[str], kind: str | None, policy: GuardPolicy) -> Slots | None:
    """Place name parts into (database, schema, object); None means unknown. None overall: account-level."""
    parts = [p.upper() for p in parts]
    kind = normalize_kind(kind) if kind else "TABLE"
    if kind in ACCOUNT_KINDS or not parts:
        return None
    db, schema = policy.default_database, policy.default_schema
    if kind == "DATABASE":
        return (parts[-1], None, None)
    if kind == "SCHEMA":
        if len(parts) == 1:
            return (db, parts[0], None)
        return (parts[-2], parts[-1], None)
    if len(parts) == 1:
        return (db, schema, parts[0])
    if len(parts) == 2:
        return (db, parts[0], parts[1])
    return (parts[-3], parts[-2], parts[-1])


def match_slots(slots: Slots | None, policy: GuardPolicy, account_name: str | None = None) -> str | None:
    """Return the first pattern that matches, treating unknown slots as matching."""
    for pattern, part_res, whole_re in policy._compiled:
        if slots is None:
            # Account-level object: only a single-part pattern can speak about it.
            if len(part_res) == 1 and account_name and part_res[0].fullmatch(account_name):
                return pattern
            continue
        k = len(part_res)
        if k == 1:
            if any(s is not None and part_res[0].fullmatch(s) for s in slots):
                return pattern
            if all(s is not None for s in slots) and whole_re.fullmatch(".".join(s for s in slots if s)):
                return pattern
            continue
        for start in range(0, 4 - k):
            window = slots[start : start + k]
            if all(s is None or rx.fullmatch(s) for s, rx in zip(window, part_res, strict=True)):
                return pattern
    return _match_regexes(slots, policy, account_name)


def _match_regexes(slots: Slots | None, policy: GuardPolicy, account_name: str | None) -> str | None:
    if not policy._regexes:
        return None
    if slots is None:
        names = [account_name] if account_name else []
    else:
        # Unknown parts are not assumed to match (unlike multi-part globs): a regex speaks about one name,
        # and the tool layer pins the default database/schema so the parts of a statement are known.
        names = [s for s in slots if s is not None]
        if all(s is not None for s in slots):
            names.append(".".join(s for s in slots if s))
    for pattern, rx in policy._regexes:
        if any(rx.search(name) for name in names):
            return pattern
    return None


def matches_exclusion(name: str, policy: GuardPolicy, *, kind: str | None = None) -> str | None:
    """The exclusion pattern that ``name`` (as written, e.g. ``PROD.HR.SALARIES`` or ``@DB.S.STAGE``) matches.

    ``kind`` places a short name correctly (``DATABASE``/``SCHEMA`` names are containers; account-level
    objects such as ``ROLE`` sit outside the namespace). Defaults to a table-like object.
    """
    text = name.strip()
    if text.startswith("@"):
        text = text[1:].split("/", 1)[0]
        if text.startswith("%"):
            text, kind = text[1:], "TABLE"
        elif text.startswith("~") or not text:
            return None
        else:
            kind = kind or "STAGE"
    parts = split_name(text)
    if not parts:
        return None
    slots = name_slots(parts, kind, policy)
    return match_slots(slots, policy, account_name=parts[-1])


def excluded_kind(kind: str | None, policy: GuardPolicy) -> bool:
    return bool(kind) and normalize_kind(kind or "") in policy.excluded_object_types
