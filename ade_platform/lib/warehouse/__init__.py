"""Warehouse domain logic: schema snapshots, type normalization, drift, PII, freshness, duplicates and
read-only SQL. Plain functions (no Dagster, no MCP); drivers live in ade_platform.clients.warehouses.

`sql` imports sqlglot; import it where SQL is checked, not from here, to keep cached paths light.
"""
