"""Benchmark suite: platform (see its README or benchmarks/README.md)."""
