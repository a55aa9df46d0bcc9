"""The Snowflake metadata-only guardrail: classify, check exclusions, redact, infer VARIANT shapes.

No Dagster, no MCP: plain functions the snowflake toolset calls before and after running a statement.

The public names resolve on first use (PEP 562): validating a config's exclusions, or starting the gateway with
the snowflake toolset on, needs only `policy`, and must not import sqlglot, which the classifier parses with.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ade_platform.lib.guard.classify import CLASSES, Classification, classify_sql
    from ade_platform.lib.guard.decision import GuardDecision, decide
    from ade_platform.lib.guard.policy import GuardPolicy, matches_exclusion
    from ade_platform.lib.guard.redact import redact_result, scalar_result, scrub_error
    from ade_platform.lib.guard.variant import infer_variant_interface

# public name -> the submodule defining it
_EXPORTS = {
    "CLASSES": "classify",
    "Classification": "classify",
    "classify_sql": "classify",
    "GuardDecision": "decision",
    "decide": "decision",
    "GuardPolicy": "policy",
    "matches_exclusion": "policy",
    "redact_result": "redact",
    "scalar_result": "redact",
    "scrub_error": "redact",
    "infer_variant_interface": "variant",
}

__all__ = [
    "CLASSES",
    "Classification",
    "GuardDecision",
    "GuardPolicy",
    "classify_sql",
    "decide",
    "infer_variant_interface",
    "matches_exclusion",
    "redact_result",
    "scalar_result",
    "scrub_error",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value  # resolved once
    return value
