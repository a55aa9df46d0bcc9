"""A local dbt Cloud: the Administrative API v2 endpoints ADE's client uses, whose jobs really run dbt-core.

Written from dbt Labs' published API documentation: the `{"status", "data", "extra"}` envelope, `offset`/`limit`
pagination, `Authorization: Token <token>`, 401 on a bad token, 404 envelopes, numeric run statuses. Jobs run their
steps one run at a time in a background worker (queued -> starting -> running -> success/error), each against the
emulator's own DuckDB file, and keep the artifacts every step wrote. Nothing in the product imports this package.

    python -m ade_platform.emulators.dbt_cloud --host 127.0.0.1 --port 8791
"""

# The emulator's demo credential (a local toy, not a secret): the launcher exports it as DBT_CLOUD_API_TOKEN.
DEMO_TOKEN = "dbtc_ade_demo_emulator_token"
ACCOUNT_ID = 7001
PROJECT_ID = 7101
PRODUCTION_ENV = 7201
CI_ENV = 7202
DAILY_JOB = 7301
CI_JOB = 7302
FRESHNESS_GATE_JOB = 7303
