"""Cross-stack lineage: BI tiles, warehouse tables, dbt nodes and the jobs that build them, joined from the store."""
