"""python -m ade_platform.emulators.metabase --host H --port P [--warehouse demo.duckdb]"""

from __future__ import annotations

from ade_platform.emulators._serve import serve
from ade_platform.emulators.metabase.app import build_app

if __name__ == "__main__":
    serve("metabase", build_app)
