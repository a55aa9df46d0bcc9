"""A local emulator of the Looker API 4.0, written from Looker's published API reference.

It serves the calls the platform's Looker client (looker-sdk) makes: POST /login with a client id and secret
for a bearer token, dashboards (and their elements), looks, queries, LookML explores, and running looks and
queries. Its LookML model describes the demo warehouse's dbt models, and every query is compiled to SQL and run
on that warehouse (DuckDB), so row counts are true. Errors have Looker's envelope
`{"message": ..., "documentation_url": ...}`; a query the database rejects answers 200 with
`[{"looker_error": ...}]`, as Looker does.

    python -m ade_platform.emulators.looker --host 127.0.0.1 --port 19999
"""

# The demo API key the emulator accepts unless LOOKER_EMULATOR_CLIENT_ID/_SECRET say otherwise. It protects
# nothing (a local emulator over demo data); the launcher passes it to the platform through the environment.
DEMO_CLIENT_ID = "ade-demo-looker-client"
DEMO_CLIENT_SECRET = "ade-demo-looker-secret-0f3c"
