"""Benchmark suite: cached answers under many clients (see its run.py and README.md)."""
