"""Benchmark suite: data profiles and their monitors (see its run.py and benchmarks/README.md)."""
