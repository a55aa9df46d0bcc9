"""The metadata-only proxy: classify, check exclusions, execute, and return schema instead of data.

- METADATA runs as written; rows naming excluded objects and people's details are removed.
- SCALAR runs as written; ``scalar_result`` re-checks the values (few rows, numbers only).
- DATA runs wrapped so that its answer cannot depend on which rows exist unless the guard says the
  statistics are safe: ``SELECT q.* FROM (SELECT 1) a LEFT JOIN (SELECT TRUE AS _ADE_PRESENT, i.* FROM
  (<query>) i) q ON TRUE LIMIT n`` always yields at least one row, so column names are known even for an
  empty result (an empty vs non-empty answer would otherwise be a 1-bit oracle). Without safe statistics
  one row is fetched and only names are returned (types UNKNOWN); with them up to ``max_stat_rows`` rows
  are counted inside the server, never returned. VARIANT structure is inferred only then, too.
- DATA that cannot be wrapped (unparseable, LIST, EXPLAIN, ...) is not executed at all.
- Errors are scrubbed; for DATA and SCALAR statements only compilation errors are shown, since a run-time
  error (a failed cast, a division by zero on a chosen row) can answer a predicate.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.guard import (
    Classification,
    GuardPolicy,
    classify_sql,
    decide,
    infer_variant_interface,
    redact_result,
    scalar_result,
    scrub_error,
)
from ade_platform.lib.snowflake.errors import E_CODES, CliFailure, SnowflakeError
from ade_platform.lib.snowflake.metadata import filter_rows, listing_kind_of, value_type
from ade_platform.lib.snowflake.objects import quote_ident
from ade_platform.lib.snowflake.runner import Row, SnowRunner

PRESENT = "_ADE_PRESENT"
DDL_VERBS = frozenset({"CREATE", "ALTER", "DROP", "UNDROP", "COMMENT"})
_QUERY_VERBS = frozenset({"SELECT", "WITH", "(", "VALUES"})
# Reasons that mean the text itself is not trusted: never re-embed it in a wrapper.
_DISTRUSTED = frozenset(
    {
        "parse_error",
        "tokenize_error",
        "semicolon_in_text",
        "ambiguous_comment",
        "pipe_operator",
        "statement_split_mismatch",
        "too_long",
        "too_complex",
        "parsed_from_tokens",
        "multi_statement",
        "empty_statement",
    }
)
_REFUSAL_CODES = {
    "SESSION_STATE_REFUSED": "SESSION_STATE_REFUSED",
    "EXCLUDED_OBJECT": "EXCLUDED_OBJECT",
    "WRITE_REFUSED": "WRITE_REFUSED",
    "MULTI_STATEMENT": "MULTI_STATEMENT",
    "NOT_SCALAR": "QUERY_CLASSIFIED",
    "NOT_DDL": "NOT_DDL",
    "DDL_KIND_REFUSED": "DDL_KIND_REFUSED",
    "DDL_BODY_REFUSED": "DDL_BODY_REFUSED",
}
_SF_CODE = re.compile(r"\b(\d{6})\s*\(")
_RUNTIME = re.compile(
    r"conversion error|invalid input|out of range|numeric value|not recognized|division by zero|"
    r"overflow|invalid argument|cannot be cast|failed to cast|truncat",
    re.I,
)
_ECHO = re.compile(r"\n\s*LINE \d+:.*", re.S)  # engines that echo the statement text under the message
GENERIC_FAILURE = (
    "the statement failed while reading rows; the database's message is withheld because a run-time "
    "error can depend on row values (compilation errors are shown)"
)

Catalog = tuple[Mapping[str, str] | None, Mapping[str, Sequence[str]] | None]


@dataclass(frozen=True)
class ProxyLimits:
    max_rows: int = 1000  # metadata rows returned
    max_scalar_rows: int = 1000
    max_stat_rows: int = 10_000  # rows counted for row count / null percentages of a DATA result
    variant_sample_size: int = 100
    allow_ddl_with_queries: bool = False  # CREATE VIEW/TABLE ... AS SELECT through execute_ddl


def refusal(c: Classification, tool: str) -> SnowflakeError | None:
    d = decide(c, tool)  # type: ignore[arg-type]
    if d.allowed:
        return None
    code = _REFUSAL_CODES.get(d.error or "", "WRITE_REFUSED")
    return SnowflakeError(
        code, d.message, classification=c.classification, reasons=c.reasons, refusal=d.error
    )


def wrappable(c: Classification) -> bool:
    return c.statement in _QUERY_VERBS and not any(r.split(":", 1)[0] in _DISTRUSTED for r in c.reasons)


def _body(sql: str) -> str:
    return sql.strip().rstrip(";").rstrip()


def wrap_query(sql: str, limit: int) -> str:
    return (
        "SELECT _ade_q.* FROM (SELECT 1 AS _ade_anchor) AS _ade_a LEFT JOIN "
        f"(SELECT TRUE AS {PRESENT}, _ade_i.* FROM (\n{_body(sql)}\n) AS _ade_i) AS _ade_q ON TRUE "
        f"LIMIT {int(limit)}"
    )


def count_query(sql: str, names: Sequence[str]) -> str:
    counts = ", ".join(f"COUNT({quote_ident(n)}) AS ADE_C{i}" for i, n in enumerate(names))
    return f"SELECT COUNT(*) AS ADE_N{', ' + counts if counts else ''} FROM (\n{_body(sql)}\n) AS _ade_i"


def is_compile_error(failure: CliFailure) -> bool:
    code = failure.sf_code or (m.group(1) if (m := _SF_CODE.search(failure.raw)) else None)
    return bool(code and code.startswith("00")) and not _RUNTIME.search(failure.raw)


def safe_message(failure: CliFailure, sql: str) -> str:
    return scrub_error(_ECHO.sub("", failure.raw).strip(), sql)


def _spec_fields(answer: dict[str, Any]) -> dict[str, Any]:
    """The spec's names next to the design's: `_queryType` (lower-case class) and `_rowCount`."""
    answer["_queryType"] = str(answer.get("classification") or "").lower() or None
    answer["_rowCount"] = answer.get("row_count")
    return answer


class Proxy:
    """execute_sql / execute_scalar over a runner, with one policy (defaults pinned to the runner)."""

    def __init__(
        self,
        runner: SnowRunner,
        policy: GuardPolicy,
        limits: ProxyLimits,
        catalog: Callable[[], Catalog] | None = None,
    ):
        self.runner = runner
        self.policy = dataclasses.replace(
            policy,
            default_database=runner.database,
            default_schema=runner.schema,
            max_scalar_rows=limits.max_scalar_rows,
        )
        self.limits = limits
        self._catalog = catalog

    def classify(self, sql: str) -> Classification:
        types, deps = self._catalog() if self._catalog else (None, None)
        return classify_sql(sql, self.policy, object_types=types, dependencies=deps)

    def _run(self, sql: str, *, shown_sql: str, data: bool, runner: SnowRunner | None = None) -> list[Row]:
        try:
            return (runner or self.runner).sql(sql)
        except CliFailure as exc:
            if exc.code in ("AUTH_FAILED", "CLI_NOT_FOUND", "QUERY_TIMEOUT"):
                raise SnowflakeError(exc.code, safe_message(exc, shown_sql)) from None
            if data and not is_compile_error(exc):
                raise SnowflakeError("QUERY_FAILED", GENERIC_FAILURE) from None
            raise SnowflakeError(exc.code, safe_message(exc, shown_sql)) from None

    def execute_sql(self, sql: str) -> dict[str, Any]:
        c = self.classify(sql)
        if (refused := refusal(c, "execute_sql")) is not None:
            raise refused
        head = {"classification": c.classification, "reasons": c.reasons}
        if c.classification == "METADATA":
            return _spec_fields({**head, **self._metadata(sql, self.limits.max_rows)})
        if c.classification == "SCALAR":
            return _spec_fields({**head, **self._scalar(sql, self.limits.max_scalar_rows)})
        return _spec_fields({**head, **self._data(sql, c)})

    def execute_scalar(self, sql: str, limit: int) -> dict[str, Any]:
        c = self.classify(sql)
        refused = refusal(c, "execute_scalar")
        reclassify = refused is not None and refused.code == "QUERY_CLASSIFIED" and c.classification == "DATA"
        if reclassify and refusal(c, "execute_sql") is None:
            # The spec's error table: QUERY_CLASSIFIED means "read the redacted response". The answer is
            # execute_sql's schema-only result, flagged as reclassified, never the values.
            return _spec_fields(
                {
                    "classification": c.classification,
                    "reasons": c.reasons,
                    **self._data(sql, c),
                    "reclassified": True,
                    "error": "QUERY_CLASSIFIED",
                    "code": E_CODES["QUERY_CLASSIFIED"],
                    "message": "the statement reads row values, so it was reclassified as DATA: "
                    "this is the redacted, schema-only response (no values)",
                }
            )
        if refused is not None:
            raise refused
        cap = max(1, min(limit, self.limits.max_scalar_rows))
        head = {"classification": c.classification, "reasons": c.reasons}
        if c.classification == "METADATA":
            return _spec_fields({**head, **self._metadata(sql, cap)})
        return _spec_fields({**head, **self._scalar(sql, cap)})

    def check_ddl(self, ddl: str) -> Classification:
        """execute_ddl accepts CREATE/ALTER/DROP/UNDROP/COMMENT of the allowed kinds only (bodies checked as
        statements), nothing excluded, no opaque code."""
        c = self.classify(ddl)
        if (refused := refusal(c, "execute_ddl")) is not None:
            raise refused
        # EXECUTE TASK|ALERT reaches here only when the policy allows running tasks (`task_run:` reason).
        runs_task = c.statement == "EXECUTE" and any(r.startswith("task_run:") for r in c.reasons)
        not_ddl = c.statement not in DDL_VERBS and not runs_task
        if not_ddl or any(r.startswith("session_state") for r in c.reasons):
            raise SnowflakeError(
                "NOT_DDL", f"{c.statement or 'statement'} is not DDL", classification=c.classification
            )
        if "write_embeds_query" in c.reasons and not self.limits.allow_ddl_with_queries:
            raise SnowflakeError(
                "WRITE_REFUSED",
                "DDL with an embedded query (CREATE VIEW/TABLE ... AS SELECT) is disabled: a view can encode "
                "a predicate that a later count answers (guardrail.allow_ddl_with_queries)",
                classification=c.classification,
            )
        return c

    def run_ddl(self, ddl: str) -> None:
        """Runs a statement check_ddl accepted; nothing of its output is returned."""
        self._run(ddl, shown_sql=ddl, data=True)

    def _metadata(self, sql: str, limit: int) -> dict[str, Any]:
        rows = self._run(sql, shown_sql=sql, data=False)
        kept, truncated = filter_rows(rows, self.policy, listing_kind=listing_kind_of(sql), limit=limit)
        names = list(dict.fromkeys(k for r in kept for k in r))
        return {
            "redacted": False,
            "columns": names,
            "rows": kept,
            "row_count": len(kept),
            "truncated": truncated,
        }

    def _scalar(self, sql: str, limit: int) -> dict[str, Any]:
        rows = self._run(sql, shown_sql=sql, data=True)
        policy = dataclasses.replace(self.policy, max_scalar_rows=limit)
        result = scalar_result([], rows, policy)
        if result.get("redacted"):
            result["note"] = "the result did not look like counts; it was redacted"
        result["row_count"] = len(result["rows"]) if "rows" in result else None
        return result

    def _data(self, sql: str, c: Classification) -> dict[str, Any]:
        d = decide(c, "execute_sql")
        stats, names_ok = d.include_stats, d.include_names
        if not wrappable(c):
            return {
                "redacted": True,
                "executed": False,
                "columns": None,
                "row_count": None,
                "note": "not executed: the statement reads data and cannot be wrapped safely "
                "(not a single analysable query), so nothing about its result can be returned",
            }
        cap = self.limits.max_stat_rows
        wrapped = wrap_query(sql, cap + 1 if stats else 1)
        # The result is withheld: it runs where no statement whose rows are returned can reach it.
        withheld = self.runner.withheld()
        rows = self._run(wrapped, shown_sql=wrapped, data=True, runner=withheld)
        names = [k for k in (rows[0] if rows else {}) if str(k).upper() != PRESENT]
        present = [{k: r.get(k) for k in names} for r in rows if r.get(PRESENT) or r.get(PRESENT.lower())]
        capped = stats and len(present) > cap
        present = present[:cap]
        types = {n: value_type(r.get(n) for r in present) if stats else "UNKNOWN" for n in names}
        columns = [{"name": n, "type": types[n]} for n in names]
        out = redact_result(columns, present, include_stats=stats, include_names=names_ok)
        out["row_count_exact"] = bool(stats and not capped)
        if capped and names_ok:
            self._exact_counts(sql, names, out, withheld)
        out["types_inferred"] = stats  # from the printed values; UNKNOWN when withheld
        out["stats_withheld"] = not stats
        out["names_withheld"] = not names_ok
        if stats and names_ok:
            interfaces = {
                n: infer_variant_interface(
                    (r[n] for r in present if r.get(n) is not None), n, self.limits.variant_sample_size
                )
                for n in names
                if types[n] == "VARIANT"
            }
            if interfaces:
                out["variant_interfaces"] = interfaces
        if not stats:
            out["note"] = (
                "row count, null percentages and types are withheld: the query shape could make "
                "them answer a predicate about row values"
            )
        return out

    def _exact_counts(self, sql: str, names: list[str], out: dict[str, Any], runner: SnowRunner) -> None:
        """Past max_stat_rows: count inside Snowflake instead (one more statement, no rows returned)."""
        query = count_query(sql, names)
        try:
            rows = runner.sql(query)
        except CliFailure:
            out["note"] = f"statistics over the first {self.limits.max_stat_rows} rows"
            return
        if len(rows) != 1:
            return
        values = list(rows[0].values())
        total = values[0] if isinstance(values[0], int) else None
        if total is None or len(values) != len(names) + 1:
            return
        out["row_count"] = total
        out["row_count_exact"] = True
        for col, non_null in zip(out["columns"], values[1:], strict=True):
            if isinstance(non_null, int) and total:
                col["null_percentage"] = round(100.0 * (total - non_null) / total, 2)
