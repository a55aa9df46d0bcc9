"""Benchmark suite: store_s3 (see its run.py and benchmarks/README.md)."""
