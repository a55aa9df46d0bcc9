"""ADE Platform: Dagster-materialized metadata of a data stack, served to agents over MCP."""

from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("ade-platform")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


__version__ = _version()
