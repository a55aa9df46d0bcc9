"""Benchmark suite: orchestrator (see its run.py and benchmarks/README.md)."""
