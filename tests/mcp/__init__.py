"""Tests: mcp."""
