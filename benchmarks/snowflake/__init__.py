"""Snowflake guardrail benchmarks: classification time, proxy overhead over a plain `snow sql` call."""
