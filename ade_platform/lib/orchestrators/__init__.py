"""Orchestrator logic with no orchestrator in it: log scanning, failure signatures, log capping, run summaries."""
