"""Benchmark suite: what signing users in costs per call (see its run.py and README.md)."""
