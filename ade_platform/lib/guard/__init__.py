"""The Snowflake metadata-only guardrail: classify, check exclusions, redact, infer VARIANT shapes.

No Dagster, no MCP: plain functions the snowflake toolset calls before and after running a statement.
"""

from ade_platform.lib.guard.classify import CLASSES, Classification, classify_sql
from ade_platform.lib.guard.decision import GuardDecision, decide
from ade_platform.lib.guard.policy import GuardPolicy, matches_exclusion
from ade_platform.lib.guard.redact import redact_result, scalar_result, scrub_error
from ade_platform.lib.guard.variant import infer_variant_interface

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
