"""What an agent may start through orchestrator_trigger_dag: which DAG, and with which conf.

Both checks run before any call to the orchestrator. A DAG must be on the backend's allow-list
(`orchestrators.<backend>.triggerable`, by default the tracked DAGs); a Prefect flow name on the list covers that
flow's deployments. The platform's own internal Dagster jobs (`__ASSET_JOB`, the `live__<tool>` audit jobs) are never
triggerable. A conf is plain JSON (objects with string keys, lists, strings, finite numbers, booleans, null) within
a size, a nesting depth and a key count, and, where the DAG has one, valid against its JSON schema.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ade_platform.lib.errors import CodedError

INTERNAL_DAGSTER_PREFIXES = ("__", "live__")


class ConfRefused(CodedError, ValueError):
    """A conf outside the bounds or the DAG's schema; the reason names a path and a rule, never a value."""

    def __init__(self, detail: str):
        super().__init__("conf_refused", detail)


def trigger_allowed(backend: str, dag_id: str, allowed: list[str] | None) -> bool:
    """Whether dag_id is on the allow-list; `None` (Dagster with every job tracked) allows every platform job."""
    if backend == "dagster" and dag_id.startswith(INTERNAL_DAGSTER_PREFIXES):
        return False
    if allowed is None:
        return backend == "dagster"
    if dag_id in allowed:
        return True
    flow, slash, _ = dag_id.partition("/")
    return backend == "prefect" and bool(slash) and flow in allowed


def _path(parts: tuple[Any, ...]) -> str:
    return "conf" + "".join(f"[{p!r}]" for p in parts)


def check_conf(conf: dict[str, Any] | None, *, max_bytes: int, max_depth: int, max_keys: int) -> None:
    """ConfRefused unless conf is bounded plain JSON. Walks iteratively: a deep value cannot exhaust the stack."""
    if conf is None:
        return
    if not isinstance(conf, dict):
        raise ConfRefused("conf must be a JSON object")
    keys = 0
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(conf, 1, ())]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict | list):
            if depth > max_depth:
                raise ConfRefused(f"{_path(where)} nests deeper than {max_depth} levels")
            if isinstance(value, dict):
                keys += len(value)
                if keys > max_keys:
                    raise ConfRefused(f"conf has more than {max_keys} keys")
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise ConfRefused(f"{_path(where)} has a key that is not a string")
                    stack.append((item, depth + 1, (*where, key)))
            else:
                stack.extend((item, depth + 1, (*where, i)) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ConfRefused(f"{_path(where)} is not a finite number")
        elif value is not None and not isinstance(value, str | int | float | bool):
            raise ConfRefused(f"{_path(where)} is not a JSON value")
    size = len(json.dumps(conf, ensure_ascii=False, separators=(",", ":")).encode())
    if size > max_bytes:
        raise ConfRefused(f"conf is {size} bytes of JSON, more than {max_bytes}")


def check_conf_schema(conf: dict[str, Any] | None, schema: dict[str, Any], dag_id: str) -> None:
    """ConfRefused unless conf (an absent conf is {}) is valid against the DAG's JSON schema."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(conf or {}))
    if error is not None:
        # The validator's own message quotes the offending value, which may be a secret: name where and which rule.
        raise ConfRefused(
            f"{_path(tuple(error.absolute_path))} does not match {dag_id!r}'s conf schema (rule {error.validator!r})"
        )
