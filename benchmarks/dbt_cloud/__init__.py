"""Benchmark suite: dbt_cloud (see its run.py and benchmarks/README.md)."""
