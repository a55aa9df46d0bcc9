"""The Dagster definitions: thin shells over ade_platform.lib and ade_platform.store."""
