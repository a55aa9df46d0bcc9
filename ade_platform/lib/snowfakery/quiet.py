"""A Snowfakery parent application that keeps its messages instead of printing them.

Snowfakery's default application echoes "Created ..." lines to stdout, which would corrupt the stdout of
an MCP stdio server and clutter Dagster logs. This one collects them, and remembers the last id used per
table at the end of each repetition.
"""

from __future__ import annotations

from typing import Any

from snowfakery.api import SnowfakeryApplication


class QuietApplication(SnowfakeryApplication):
    def __init__(self, stopping_criteria: Any = None) -> None:
        super().__init__(stopping_criteria)
        self.messages: list[str] = []
        self.last_ids: dict[str, int] = {}

    def echo(
        self, message: Any = None, file: Any = None, nl: bool = True, err: bool = False, color: Any = None
    ):
        if message is not None:
            self.messages.append(str(message))

    def check_if_finished(self, id_manager: Any) -> bool:
        self.last_ids = dict(id_manager.last_used_ids)
        return super().check_if_finished(id_manager)
