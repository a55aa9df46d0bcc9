"""Benchmark suite: bi (see run.py)."""
