"""Benchmark suite: dbt_artifacts (see its README or benchmarks/README.md)."""
