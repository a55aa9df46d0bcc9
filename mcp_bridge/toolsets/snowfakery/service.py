"""How the snowfakery toolset gets its SnowfakeryService (built from settings on first use) and scrubs the
library's errors before the gateway shows them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.secrets import configured_secrets
from ade_platform.lib.snowfakery.errors import SnowfakeryError

log = logging.getLogger("ade.snowfakery")


class ServiceHolder:
    """Builds the SnowfakeryService on first use (so building the server creates no folder)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._service: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._service is None:
                self._service = service_from_settings(self.settings)
            return self._service

    def warm_in_background(self) -> None:
        """Pay at start-up what the first validate or run would (measured: ~3.5 s for the first call, ~40 ms
        for the next): the sandbox's zygote (importing and warming Snowfakery, its job processes), the
        library's modules and the recipe schema's checker. No folder is created, and nothing waits for it: a
        first call that comes sooner waits only for what is still starting."""
        threading.Thread(target=_warm, args=(self.settings,), name="snowfakery-warm-up", daemon=True).start()

    @contextmanager
    def scrubbed(self) -> Iterator[Any]:
        """The service, with a SnowfakeryError's detail passed through the workspace's scrubber (absolute paths
        become workspace-relative, environment secrets ***), which the gateway's own scrubber does not know; the
        middleware then maps the error (with the spec's error fields, SnowfakeryError.fields)."""
        try:
            yield self.get()
        except SnowfakeryError as exc:
            service = self._service
            exc.detail = service.scrubber.text(exc.detail) if service is not None else exc.detail
            raise


def _warm(settings: Settings) -> None:
    try:
        from ade_platform.lib.snowfakery import runs  # noqa: F401  (and the service, analysis, sandbox)
        from ade_platform.lib.snowfakery.content import ContentLibrary
        from ade_platform.lib.snowfakery.sandbox import Sandbox
        from ade_platform.lib.snowfakery.schemacheck import schema_findings

        schema_findings("- object: warm_up\n", ContentLibrary(settings.snowfakery.docs_dir).schema, "warm-up")
        Sandbox().warm()
    except Exception as exc:  # a warm-up is an optimisation: the first call starts whatever is missing itself
        log.warning(
            "the snowfakery warm-up failed (%s); the first call will start the sandbox", type(exc).__name__
        )


def example_uri(name: str) -> str:
    return f"snowfakery://examples/{name}"


def example_item(example: Any) -> dict[str, str]:
    """An example recipe as the tools and resources list it: name, description and resource URI."""
    return {"name": example.name, "description": example.description, "uri": example_uri(example.name)}


def service_from_settings(settings: Settings) -> Any:
    from ade_platform.lib.snowfakery.content import ContentLibrary
    from ade_platform.lib.snowfakery.policy import RunPolicy
    from ade_platform.lib.snowfakery.service import SnowfakeryService
    from ade_platform.lib.snowfakery.workspace import Workspace

    cfg = settings.snowfakery
    workspace = Workspace.create(
        cfg.workspace_root or settings.home / "snowfakery", cfg.runs_dir or settings.home / "snowfakery-runs"
    )
    policy = RunPolicy(
        timeout_seconds=cfg.timeout_seconds,
        max_reps=cfg.max_reps,
        max_target_count=cfg.max_target_count,
        max_rows=cfg.max_rows,
        max_output_bytes=cfg.max_output_bytes,
        max_inline_chars=cfg.max_inline_chars,
        max_recipe_bytes=cfg.max_recipe_bytes,
        max_memory_mb=cfg.max_memory_mb,
        max_runs_kept=cfg.max_runs_kept,
        allow_dburl=cfg.allow_dburl,
        allow_network=cfg.allow_network,
        allowed_plugins=tuple(cfg.allowed_plugins),
    )
    # every secret in the settings: never echoed, whatever a recipe prints
    secrets = configured_secrets(settings)
    return SnowfakeryService(workspace, policy, ContentLibrary(cfg.docs_dir), secrets=secrets)
