"""Local HTTP emulators of SaaS APIs with no local form (dbt Cloud, Looker, Metabase), and a Snowflake stand-in
(fakesnow with the demo's data).

Written from the vendors' published API references and backed by real work (dbt runs, SQL on the demo warehouse).
Used by the tests and by `make demo`; never imported by the product's code paths (ade_platform.* outside this
package and mcp_bridge.* must not import it).
"""
