"""The Snowflake guardrail passes what is harmless (issue 34, "What to build" 5), measured, not sampled.

Three sets of statements, each with what a reviewer expects:
- the guard's own corpus (tests/unit/guard_corpus.jsonl): every statement with its expected class;
- the statements the spec and the guard's README promise as metadata (promised_metadata.txt beside this file):
  SHOW variants, DESCRIBE/DESC forms, INFORMATION_SCHEMA and SNOWFLAKE.ACCOUNT_USAGE views, GET_DDL, read-only
  SYSTEM$ functions, CURRENT_*(), LIST, EXPLAIN - each must be answered as-is by execute_sql;
- the shared corpus's Snowflake SQL (compiled dbt models and tests of every Snowflake artifact set, read in place):
  reads of data, each must be accepted by execute_sql (answered redacted), never refused and never answered with
  values as if it were metadata.

A false block is a harmless statement refused, or one expected to return values that comes back redacted; a leak
is a statement reading data answered with values (METADATA/SCALAR where the reviewer expects DATA or WRITE); a
write let through is an expected WRITE that execute_sql or execute_scalar would run. The rates are printed (the
closing note quotes them) and asserted: false blocks at most 5% per set, no leak, no write let through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ade_platform.lib.guard import GuardPolicy, classify_sql, decide
from tests.conftest import CORPUS

HERE = Path(__file__).parent
GUARD_CORPUS = HERE.parent / "unit" / "guard_corpus.jsonl"
PROMISED = HERE / "promised_metadata.txt"
VALUES = ("METADATA", "SCALAR")  # classes answered with values


@dataclass
class Tally:
    name: str
    total: int = 0
    false_blocks: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    writes_through: list[str] = field(default_factory=list)
    batches: int = 0  # refused as MULTI_STATEMENT: one statement per call is the documented rule, not a block

    @property
    def rate(self) -> float:
        return len(self.false_blocks) / self.total if self.total else 0.0

    def line(self) -> str:
        return (
            f"{self.name}: {self.total} statements, false blocks {len(self.false_blocks)} "
            f"({100 * self.rate:.1f}%), leaks {len(self.leaks)}, writes let through {len(self.writes_through)}, "
            f"batches refused by rule {self.batches}"
        )


def _judge(tally: Tally, sql: str, expected: str, policy: GuardPolicy) -> None:
    """Count one statement against what the reviewer expects of it."""
    tally.total += 1
    c = classify_sql(sql, policy)
    answered = decide(c, "execute_sql")
    if expected == "WRITE":
        if decide(c, "execute_sql").allowed or decide(c, "execute_scalar").allowed:
            tally.writes_through.append(sql)
        return
    if expected == "DATA" and c.classification in VALUES:
        tally.leaks.append(sql)
    if expected in VALUES and c.classification not in VALUES:
        tally.false_blocks.append(sql)  # answered redacted (or refused) where values were promised
    elif answered.error == "MULTI_STATEMENT":
        tally.batches += 1
    elif not answered.allowed and not c.excluded:
        tally.false_blocks.append(sql)


def _guard_corpus() -> Tally:
    tally = Tally("guard corpus")
    for line in GUARD_CORPUS.read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            _judge(tally, case["sql"], case["expected"], GuardPolicy(**case.get("policy", {})))
    return tally


def promised_statements() -> list[str]:
    lines = (line.strip() for line in PROMISED.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _promised() -> Tally:
    tally = Tally("promised metadata")
    for sql in promised_statements():
        _judge(tally, sql, "METADATA", GuardPolicy())
    return tally


def _snowflake_sql() -> Iterator[str]:
    """Compiled models and tests of the shared corpus's Snowflake artifact sets (read in place)."""
    root = CORPUS / "dbt-artifacts"
    for manifest in sorted(root.glob("*/manifest.json")) if root.is_dir() else []:
        doc: dict[str, Any] = json.loads(manifest.read_text())
        if doc.get("metadata", {}).get("adapter_type") != "snowflake":
            continue
        for node in doc.get("nodes", {}).values():
            sql = node.get("compiled_code") or node.get("compiled_sql")
            if sql and node.get("resource_type") in ("model", "test", "analysis"):
                yield sql


def _shared_corpus() -> Tally | None:
    statements = list(_snowflake_sql())
    if not statements:
        return None  # the corpus is not beside this checkout (CI has it; ADE_SHARED_DIR points at it)
    tally = Tally("shared corpus (Snowflake dbt SQL)")
    for sql in statements:
        _judge(tally, sql, "DATA", GuardPolicy())
    return tally


def test_false_blocks_leaks_and_writes_are_measured() -> None:
    tallies = [_guard_corpus(), _promised()]
    shared = _shared_corpus()
    if shared is None:
        print("shared corpus: skipped (no ../shared/corpus/dbt-artifacts with Snowflake SQL)")
    else:
        tallies.append(shared)
    for tally in tallies:
        print(tally.line())
    total = sum(t.total for t in tallies)
    blocked = sum(len(t.false_blocks) for t in tallies)
    print(f"overall: {total} statements, false blocks {blocked} ({100 * blocked / total:.1f}%)")
    for tally in tallies:
        assert tally.rate <= 0.05, (tally.line(), tally.false_blocks[:10])
        assert not tally.leaks, (tally.line(), tally.leaks[:10])
        assert not tally.writes_through, (tally.line(), tally.writes_through[:10])
    # The promised set is small and hand-checked: every one of them passes.
    assert not tallies[1].false_blocks, tallies[1].false_blocks


def test_the_measure_can_fail() -> None:
    """The judge counts what it should: a refused harmless statement, a leak and a write let through."""
    tally = Tally("probe")
    _judge(tally, "SELECT * FROM TABLE(my_proc())", "DATA", GuardPolicy())  # refused: a false block
    _judge(tally, "SHOW TABLES", "DATA", GuardPolicy())  # METADATA where DATA was expected: counted as a leak
    _judge(tally, "SELECT COUNT(*) FROM t", "WRITE", GuardPolicy())  # runs: a write let through
    assert len(tally.false_blocks) == 1 and len(tally.leaks) == 1 and len(tally.writes_through) == 1
