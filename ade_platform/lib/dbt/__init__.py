"""dbt artifacts: version checks, the compact lineage index, and graph questions over it (no Dagster)."""
