"""Benchmark suite: lineage (see its run.py and benchmarks/README.md)."""
