"""Fault injection: kills, stops, broken files and read-only stores, made to happen for real (issue 38)."""
