"""Clients of the systems the platform talks to (warehouses, the snow CLI)."""
