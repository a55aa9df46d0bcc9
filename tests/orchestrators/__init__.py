"""Orchestrator tests: the platform's Dagster (fast) and real Airflow 3 / Prefect 3 servers (slow)."""
