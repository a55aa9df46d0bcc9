"""How the snowfakery toolset gets its SnowfakeryService (built from settings on first use) and scrubs the
library's errors before the gateway shows them."""

from __future__ import annotations

import contextlib
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

    def warm(self, server: Any) -> None:
        """Pay ahead what the first call of a session would (measured on a loaded machine: ~4 s for the first
        validate, ~50 ms for the next): the sandbox's zygote (importing and warming Snowfakery, its job
        processes), the library's modules, the recipe schema's checker and FastMCP's session-state store (~0.6 s
        of the first tool call of any session: py-key-value imported and a pydantic generic built). Run in the
        background once the first tools/list is answered (mcp_bridge/startup.py), never before it: the
        host's start-up does not wait for it, and a first call waits only for what is still starting. No folder
        is created."""
        _warm(self.settings, server)

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


def _warm(settings: Settings, server: Any) -> None:
    try:
        from ade_platform.lib.snowfakery.sandbox import Sandbox

        zygote = threading.Thread(target=Sandbox().warm, name="snowfakery-zygote", daemon=True)
        zygote.start()  # a process of its own: it imports Snowfakery while this thread imports the rest
        from ade_platform.lib.snowfakery import runs  # noqa: F401  (and the service, analysis, sandbox)
        from ade_platform.lib.snowfakery.content import ContentLibrary
        from ade_platform.lib.snowfakery.schemacheck import schema_findings

        schema_findings("- object: warm_up\n", ContentLibrary(settings.snowfakery.docs_dir).schema, "warm-up")
        # FastMCP builds its session-state store on the first tool call of a session; built once here, the
        # generic adapter class is cached for every server in this process (a private attribute: optional)
        with contextlib.suppress(AttributeError):
            server._state_store  # noqa: B018
        zygote.join()
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


def audited_run(ctx: Any, tool: str, service: Any, source: Any, params: Any) -> dict[str, Any]:
    """A sandboxed run that keeps a run folder (render_diagram, generate_mapping: their diagram and mapping are
    served from it) as what it is, a workspace write: a live call on the journaled fast path, like run_recipe
    without a database URL. Refused requests never start a run."""
    from ade_platform.lib.snowfakery.runs import prepare_run
    from ade_platform.lib.snowfakery.runs import run_recipe as execute

    plan = prepare_run(service, source, params)
    arguments = {
        "recipe": source.display,
        "options": params.options or None,
        "reps": params.reps,
        "output_format": params.output_format,
    }
    value, _stamp = ctx.live_call(
        tool, lambda: execute(service, source, params, plan), arguments=arguments, effects="workspace"
    )
    return value
