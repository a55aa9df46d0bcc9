"""Run every benchmark suite (`make bench`). Pass --quick for a short run."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    here = Path(__file__).parent
    suites = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.ispkg)
    for suite in suites:
        try:
            module = importlib.import_module(f"benchmarks.{suite}.run")
        except ModuleNotFoundError:
            continue
        print(f"\n=== {suite} ===", flush=True)
        sys.argv = [f"benchmarks.{suite}.run", *sys.argv[1:]]
        module.main()


if __name__ == "__main__":
    main()
