"""Snowflake domain logic behind the `snow` CLI: the metadata-only proxy, discovery, lineage, DDL sync.

Plain functions and small services over a `SnowRunner` (see `runner.py`); the `snow` CLI client in
`ade_platform.clients.snowflake` implements it. No Dagster, no MCP here.
"""
