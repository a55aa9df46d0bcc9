"""A few hundred real-world-shaped statements: what agents and analysts send to Snowflake.

Metadata lookups, counts, dbt-style models (CTE chains, joins, GROUP BY, windows), wide selects, VARIANT
paths and FLATTEN, unions, pivots - plus both guard corpora (classification unit corpus and the
adversarial leak corpus).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLES = ["ORDERS", "CUSTOMERS", "PAYMENTS", "EVENTS", "SESSIONS", "PRODUCTS", "INVOICES", "SHIPMENTS"]
SCHEMAS = ["ANALYTICS.MARTS", "ANALYTICS.STAGING", "RAW.SHOP", "RAW.EVENTS"]


def _model(rng: random.Random, i: int) -> str:
    a, b, c = rng.sample(TABLES, 3)
    s = rng.choice(SCHEMAS)
    cols = ",\n        ".join(f"{a.lower()}.col_{k}" for k in range(rng.randint(5, 25)))
    return f"""
with {a.lower()} as (
    select * from {s}.{a} where updated_at >= dateadd('day', -{rng.randint(1, 90)}, current_date())
),
{b.lower()} as (
    select id, {a.lower()}_id, amount, status from {s}.{b} where status in ('paid', 'shipped')
),
joined as (
    select {cols},
        sum({b.lower()}.amount) over (partition by {a.lower()}.id order by {a.lower()}.updated_at) as running_{i},
        row_number() over (partition by {a.lower()}.id order by {b.lower()}.amount desc) as rn
    from {a.lower()}
    left join {b.lower()} on {b.lower()}.{a.lower()}_id = {a.lower()}.id
    left join {s}.{c} as x on x.id = {a.lower()}.id
)
select * from joined where rn = 1
qualify count(*) over (partition by col_0) > {rng.randint(1, 5)}
"""


def real_world(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    shapes = [
        lambda i: f"SELECT COUNT(*) FROM {rng.choice(SCHEMAS)}.{rng.choice(TABLES)}",
        lambda i: (
            f"SELECT COUNT(*), COUNT(email), COUNT(DISTINCT customer_id) FROM {rng.choice(SCHEMAS)}.{rng.choice(TABLES)} WHERE email IS NOT NULL"
        ),
        lambda i: (
            f"SELECT table_name, column_name, data_type FROM ANALYTICS.INFORMATION_SCHEMA.COLUMNS WHERE table_schema = 'MARTS' AND table_name = '{rng.choice(TABLES)}' ORDER BY ordinal_position"
        ),
        lambda i: f"SHOW TABLES IN SCHEMA {rng.choice(SCHEMAS)}",
        lambda i: f"DESCRIBE TABLE {rng.choice(SCHEMAS)}.{rng.choice(TABLES)}",
        lambda i: f"SELECT GET_DDL('VIEW', '{rng.choice(SCHEMAS)}.V_{rng.choice(TABLES)}')",
        lambda i: (
            f"SELECT status, COUNT(*) AS n, SUM(amount) FROM {rng.choice(SCHEMAS)}.ORDERS GROUP BY status ORDER BY n DESC"
        ),
        lambda i: f"SELECT * FROM {rng.choice(SCHEMAS)}.{rng.choice(TABLES)} LIMIT 100",
        lambda i: (
            "SELECT " + ", ".join(f"c{k}" for k in range(60)) + f" FROM {rng.choice(SCHEMAS)}.WIDE_{i % 5}"
        ),
        lambda i: (
            "SELECT e.payload:user.id::string AS uid, f.value:sku::string AS sku FROM RAW.EVENTS.EVENTS e, "
            "LATERAL FLATTEN(input => e.payload:items) f WHERE e.event_date = current_date()"
        ),
        lambda i: (
            f"SELECT id FROM {rng.choice(SCHEMAS)}.ORDERS UNION ALL SELECT id FROM {rng.choice(SCHEMAS)}.INVOICES"
        ),
        lambda i: (
            "SELECT * FROM (SELECT region, amount FROM ANALYTICS.MARTS.SALES) PIVOT (SUM(amount) FOR region IN ('EU', 'US', 'APAC'))"
        ),
        lambda i: _model(rng, i),
        lambda i: "SELECT CURRENT_ROLE(), CURRENT_WAREHOUSE(), CURRENT_DATABASE()",
        lambda i: (
            f"SELECT * FROM SNOWFLAKE.ACCOUNT_USAGE.TABLES WHERE table_catalog = 'ANALYTICS' AND deleted IS NULL LIMIT {i}"
        ),
    ]
    return [shapes[i % len(shapes)](i) for i in range(n)]


def corpora() -> list[str]:
    out = []
    for path in (REPO / "tests/unit/guard_corpus.jsonl", REPO / "tests/mcp/snowflake_adversarial.jsonl"):
        if path.exists():
            out += [json.loads(line)["sql"] for line in path.read_text().splitlines() if line.strip()]
    return out
