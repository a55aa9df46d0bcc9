"""Regenerate tests/contract/tool_surface.json (`make snapshot`); review the diff before committing."""

from __future__ import annotations

import json

from tests.contract.surface import SNAPSHOT, current_surface

if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(current_surface(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
