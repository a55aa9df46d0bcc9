"""python -m ade_platform.emulators.looker --host H --port P [--warehouse demo.duckdb]"""

from __future__ import annotations

from ade_platform.emulators._serve import serve
from ade_platform.emulators.looker.app import build_app

if __name__ == "__main__":
    serve("looker", build_app)
