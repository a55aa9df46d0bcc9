"""Benchmark suite: warehouse (see its README or benchmarks/README.md)."""
