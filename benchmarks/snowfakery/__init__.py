"""Benchmark suite: snowfakery (see its README or benchmarks/README.md)."""
