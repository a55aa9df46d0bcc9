"""Exclusion checks over the objects a statement references, before anything executes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ade_platform.lib.guard._refs import ObjectRef
from ade_platform.lib.guard.policy import (
    RELATION_KINDS,
    GuardPolicy,
    excluded_kind,
    match_slots,
    matches_exclusion,
    name_slots,
    normalize_kind,
)

_MAX_DEPENDENCY_NODES = 10_000


@dataclass
class ExclusionResult:
    excluded: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def hit(self, text: str, reason: str) -> None:
        if text not in self.excluded:
            self.excluded.append(text)
        if reason not in self.reasons:
            self.reasons.append(reason)


def _keys(ref: ObjectRef, policy: GuardPolicy, types: Mapping[str, str]) -> list[str]:
    keys = [ref.text]
    slots = name_slots(ref.parts, ref.kind, policy)
    if slots is not None and all(slots) and ref.kind not in ("DATABASE", "SCHEMA"):
        keys.insert(0, ".".join(s for s in slots if s))
    if (public := _search_path_public(ref, policy, types)) is not None:
        keys.append(".".join(public))
    return keys


def _search_path_public(
    ref: ObjectRef, policy: GuardPolicy, types: Mapping[str, str]
) -> tuple[str, str, str] | None:
    """Where else an unqualified name read by a query may resolve: Snowflake's default SEARCH_PATH is
    `$current, $public`, so `orders` missing from the current schema is `<current database>.PUBLIC.ORDERS`.
    None when the name is qualified, or the catalog shows it in the current schema."""
    if not (ref.relation and len(ref.parts) == 1 and policy.default_database):
        return None
    database = policy.default_database.upper()
    if policy.default_schema and f"{database}.{policy.default_schema.upper()}.{ref.parts[0]}" in types:
        return None
    return (database, "PUBLIC", ref.parts[0])


def check_exclusions(
    refs: Iterable[ObjectRef],
    policy: GuardPolicy,
    *,
    opaque_source: bool = False,
    object_types: Mapping[str, str] | None = None,
    dependencies: Mapping[str, Iterable[str]] | None = None,
) -> ExclusionResult:
    """Which referenced objects the policy excludes.

    ``object_types`` (fully qualified upper-case name -> kind, from the cached catalog) resolves what a
    FROM reference really is; without it, a policy that excludes a relation kind such as VIEW cannot be
    verified and the reference is excluded. ``dependencies`` (name -> names it reads, e.g. view bases from
    OBJECT_DEPENDENCIES) extends the check through views to the objects behind them.
    """
    result = ExclusionResult()
    types = {k.upper(): normalize_kind(v) for k, v in (object_types or {}).items()}
    deps = {k.upper(): [d.upper() for d in v] for k, v in (dependencies or {}).items()}
    relation_exclusions = policy.excluded_object_types & RELATION_KINDS
    for ref in refs:
        if not ref.resolved:
            if policy.has_exclusions:
                result.hit(ref.text, f"unresolved_object_excluded:{ref.text}")
            continue
        if not ref.parts:
            continue
        slots = name_slots(ref.parts, ref.kind, policy)
        pattern = match_slots(slots, policy, account_name=ref.parts[-1])
        if not pattern and (public := _search_path_public(ref, policy, types)) is not None:
            pattern = match_slots(name_slots(public, ref.kind, policy), policy, account_name=public[-1])
        if pattern:
            result.hit(ref.text, f"excluded:{ref.text}~{pattern}")
        keys = _keys(ref, policy, types)
        known = next((types[k] for k in keys if k in types), None)
        if known is not None:
            if excluded_kind(known, policy):
                result.hit(ref.text, f"excluded_type:{known}:{ref.text}")
        elif ref.relation and not ref.metadata and relation_exclusions:
            result.hit(ref.text, f"unverified_type:{ref.text}")
        elif not ref.relation and excluded_kind(ref.kind, policy):
            result.hit(ref.text, f"excluded_type:{ref.kind}:{ref.text}")
        if deps:
            _check_dependencies(ref.text, keys, deps, types, policy, result)
    if opaque_source and policy.has_exclusions:
        result.hit("<RESULT_SCAN>", "opaque_source_excluded")
    return result


def _check_dependencies(
    text: str,
    keys: list[str],
    deps: dict[str, list[str]],
    types: dict[str, str],
    policy: GuardPolicy,
    result: ExclusionResult,
) -> None:
    seen: set[str] = set(keys)
    queue = [d for k in keys for d in deps.get(k, [])]
    while queue and len(seen) < _MAX_DEPENDENCY_NODES:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        pattern = matches_exclusion(name, policy)
        if pattern or excluded_kind(types.get(name), policy):
            result.hit(text, f"excluded_dependency:{text}->{name}")
        queue.extend(deps.get(name, []))
