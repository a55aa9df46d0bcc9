"""`ade guard classify`: run the configured guardrail over a file of statements, one JSON line each.

Input: one SQL statement per line, or JSON lines with a ``sql`` field (a query log export); blank lines are
skipped. Output per input line: ``{"classification", "reasons", "objects", "excluded"}`` (plus
``explanation`` with ``--explain``), so a security reviewer can test a policy on real queries before
deploying it. Nothing is executed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from ade_platform.lib.guard.classify import classify_sql
from ade_platform.lib.guard.policy import GuardPolicy


def read_statements(lines: Iterable[str]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, sql, error) per non-blank input line."""
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                record = json.loads(text)
            except ValueError:
                yield number, None, "not valid JSON"
                continue
            sql = record.get("sql") if isinstance(record, dict) else None
            if not isinstance(sql, str):
                yield number, None, "JSON line without a string `sql` field"
                continue
            yield number, sql, None
        else:
            yield number, line.rstrip("\r\n"), None


def classify_lines(
    lines: Iterable[str], policy: GuardPolicy, *, explain: bool = False
) -> Iterator[dict[str, Any]]:
    for number, sql, error in read_statements(lines):
        if sql is None:
            yield {"line": number, "error": error}
            continue
        c = classify_sql(sql, policy)
        out: dict[str, Any] = {
            "classification": c.classification,
            "reasons": c.reasons,
            "objects": c.objects,
            "excluded": c.excluded,
        }
        if explain:
            out["explanation"] = c.explain()
        yield out


def run(
    policy: GuardPolicy,
    source: TextIO,
    out: TextIO,
    *,
    database: str | None = None,
    schema: str | None = None,
    explain: bool = False,
) -> int:
    """Classify every statement of ``source``; 0 when every input line was read, 1 otherwise."""
    if database or schema:
        policy = dataclasses.replace(
            policy,
            default_database=database or policy.default_database,
            default_schema=schema or policy.default_schema,
        )
    status = 0
    for record in classify_lines(source, policy, explain=explain):
        status = 1 if "error" in record else status
        out.write(json.dumps(record) + "\n")
    return status
