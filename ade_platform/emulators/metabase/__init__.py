"""A local emulator of the Metabase REST API, written from Metabase's published API documentation.

It serves what the platform's Metabase client calls: API-key (`X-API-KEY`) or session (`POST /api/session`,
then `X-Metabase-Session`) authentication, dashboards with their dashcards, cards (questions), tables,
databases and collections, and running a card (`POST /api/card/:id/query`). Native questions run their SQL,
and query-builder questions are compiled to SQL, on the demo warehouse (DuckDB), so row counts are true. A
question the database rejects answers 202 with `status: "failed"` and the database's error, as Metabase does.

    python -m ade_platform.emulators.metabase --host 127.0.0.1 --port 3000
"""

# Demo credentials the emulator accepts unless METABASE_EMULATOR_API_KEY / _USERNAME / _PASSWORD say otherwise.
# They protect nothing (a local emulator over demo data); the launcher hands them to the platform.
DEMO_API_KEY = "mb_ade_demo_api_key_7d1e"
DEMO_USERNAME = "demo@ade.local"
DEMO_PASSWORD = "ade-demo-metabase-pw"
