"""`snowfakery.draft_recipe`: the client's model drafts a recipe through MCP sampling, this server validates it.

Each round asks the client (`sampling/createMessage`) for a recipe, validates the draft exactly as
explain_errors does (YAML, schema, policy, Snowfakery's validator in the sandbox: nothing is generated) and,
while it is invalid, sends the explanations back (construct, line, rule, the smallest fix) and asks again, up to
`max_rounds`. The server holds no model and no key: the client decides which model answers, and may refuse.

How the server asks depends on the revision the connection speaks:
- **2026-07-28** has no server-initiated requests (SEP-2577): each round is a multi-round-trip leg (SEP-2322). The
  call answers `input_required` with the sampling request; the client has its model answer and calls again with
  the answer and the request state, in which the server keeps the conversation so far (sealed by FastMCP: a
  client cannot alter it). The server holds nothing between legs.
- **Up to 2025-11-25** sampling is a back-channel request on the session, from a client that declared the
  sampling capability. FastMCP 4 dropped `ctx.sample`; the MCP SDK's session still sends it on connections that
  allow it, which is what this uses.
Where neither can be done (a client without sampling), the tool says so (`sampling_unavailable`) and points to
the `author_recipe` prompt, which runs the same loop in the agent's own model.
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import anyio
from fastmcp import Context
from mcp.types import SamplingMessage, TextContent

from ade_platform.lib.snowfakery.errors import SnowfakeryError
from mcp_bridge.toolsets.snowfakery.service import ServiceHolder

MAX_DRAFT_TOKENS = 4000
MAX_FEEDBACK_CHARS = 6000
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
SYSTEM_PROMPT = (
    "You write Snowfakery recipes (YAML, snowfakery_version: 3). Answer with the recipe only: no prose, no "
    "Markdown fences. Use only Faker providers and the standard plugins; no files outside the workspace."
)
UNAVAILABLE_HINT = (
    "Use the author_recipe prompt instead: your own model drafts, then validate_recipe and explain_errors "
    "check each draft. draft_recipe needs a client that supports MCP sampling on a session-based connection."
)


def first_request(description: str, target_schema: str | None) -> str:
    parts = [f"Write a Snowfakery recipe that generates: {description.strip()}"]
    if target_schema:
        parts.append(
            "The rows must fit this target schema (tables, columns, types, keys); use its table and column "
            f"names:\n{target_schema.strip()}"
        )
    parts.append(
        "Use `object`, `fields`, `friends`, `reference`/`random_reference` for relationships, `option` for "
        "tunable counts, `fake:` for realistic values (the server's catalogue: snowfakery://providers/list)."
    )
    return "\n\n".join(parts)


def feedback(explanations: list[dict[str, Any]]) -> str:
    """What the server found wrong with a draft, as the next request to the model."""
    lines = ["The recipe is invalid. Fix every problem below and answer with the whole corrected recipe."]
    for item in explanations:
        location = item.get("location") or {}
        fix = item.get("fix") or {}
        lines.append(
            f"- line {location.get('line') or '?'}: {item.get('message') or item.get('failing_construct')}"
            + (f" (rule: {item['rule']})" if item.get("rule") else "")
            + (f"; fix: {fix['description']}" if fix.get("description") else "")
        )
    text = "\n".join(lines)
    return text if len(text) <= MAX_FEEDBACK_CHARS else text[:MAX_FEEDBACK_CHARS] + "\n…"


def recipe_text(result: Any) -> str:
    """The draft in a sampling answer: its text content, without a Markdown fence around it."""
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    text = "\n".join(b.text for b in blocks if isinstance(b, TextContent)).strip()
    fenced = _FENCE.match(text)
    return (fenced.group(1) if fenced else text).strip() + "\n"


def _message(role: str, text: str) -> SamplingMessage:
    return SamplingMessage(role=role, content=TextContent(type="text", text=text))  # type: ignore[arg-type]


def _unavailable(why: str) -> SnowfakeryError:
    return SnowfakeryError("sampling_unavailable", why, UNAVAILABLE_HINT, prompt="author_recipe")


async def _sample(ctx: Context, messages: list[SamplingMessage]) -> Any:
    from mcp.shared.exceptions import MCPError, NoBackChannelError

    try:
        with (
            warnings.catch_warnings()
        ):  # deprecated in the 2026-07-28 protocol: still the handshake eras' way
            warnings.simplefilter("ignore")
            return await ctx.session.create_message(
                messages, max_tokens=MAX_DRAFT_TOKENS, system_prompt=SYSTEM_PROMPT, temperature=0.2
            )
    except NoBackChannelError:
        raise _unavailable(
            "this connection cannot carry sampling requests (MCP 2026-07-28 has none)"
        ) from None
    except MCPError as exc:
        raise SnowfakeryError(
            "sampling_failed", f"the client did not answer the sampling request: {str(exc)[:200]}"
        ) from None


def _client_samples(ctx: Context) -> bool:
    params = ctx.session.client_params
    return params is not None and params.capabilities.sampling is not None


async def draft_recipe(
    services: ServiceHolder, ctx: Context, description: str, target_schema: str | None, max_rounds: int
) -> Any:
    if _round_trips(ctx):
        return await _draft_leg(services, ctx, description, target_schema, max_rounds)
    if not _client_samples(ctx):
        raise _unavailable("the client did not declare the MCP sampling capability")
    messages = [_message("user", first_request(description, target_schema))]
    rounds: list[dict[str, Any]] = []
    for _ in range(max_rounds):
        draft = recipe_text(await _sample(ctx, messages))
        if await _judge(services, ctx, rounds, draft, max_rounds):
            break
        messages += [_message("assistant", draft), _message("user", rounds[-1]["feedback"])]
    return _answer(rounds)


async def _judge(
    services: ServiceHolder, ctx: Context, rounds: list[dict[str, Any]], draft: str, max_rounds: int
) -> bool:
    """Validate a round's draft, record the round (with the feedback for the next one); True when it is valid."""
    verdict = await anyio.to_thread.run_sync(_explain, services, draft)
    rounds.append(
        {
            "round": len(rounds) + 1,
            "valid": verdict["valid"],
            "recipe_text": draft,
            **_summary(verdict),
            "feedback": "" if verdict["valid"] else feedback(verdict["explanations"]),
        }
    )
    await ctx.report_progress(len(rounds), max_rounds)
    return bool(verdict["valid"])


# ---- 2026-07-28: one leg per round (multi-round-trip requests) ----------------------------------------------
_DRAFT_KEY = "draft"


def _round_trips(ctx: Context) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    rc = ctx.request_context
    return rc is not None and rc.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _draft_leg(
    services: ServiceHolder, ctx: Context, description: str, target_schema: str | None, max_rounds: int
) -> Any:
    """One leg: validate the draft the client's model sent (if any), then answer, or ask for the next draft."""
    from mcp_types import CreateMessageResult

    responses, state = ctx.input_responses, ctx.request_state
    if not responses or state is None:  # the first leg (or a retry without answers): ask for the first draft
        if not _client_samples(ctx):
            raise _unavailable("the client did not declare the MCP sampling capability")
        return _ask([_message("user", first_request(description, target_schema))], [])
    kept = json.loads(state)
    messages = [_message(m["role"], m["text"]) for m in kept["messages"]]
    rounds: list[dict[str, Any]] = kept["rounds"]
    answer = responses.get(_DRAFT_KEY)
    if not isinstance(answer, CreateMessageResult):
        raise _unavailable("the client answered the draft request without a model's message")
    draft = recipe_text(answer)
    if await _judge(services, ctx, rounds, draft, max_rounds) or len(rounds) >= max_rounds:
        return _answer(rounds)
    return _ask([*messages, _message("assistant", draft), _message("user", rounds[-1]["feedback"])], rounds)


def _ask(messages: list[SamplingMessage], rounds: list[dict[str, Any]]) -> Any:
    """The leg's answer: the sampling request for the next draft, and the conversation so far as request state."""
    from mcp_types import CreateMessageRequest, CreateMessageRequestParams, InputRequiredResult

    params = CreateMessageRequestParams(
        messages=messages, max_tokens=MAX_DRAFT_TOKENS, system_prompt=SYSTEM_PROMPT, temperature=0.2
    )
    state = {
        "messages": [{"role": m.role, "text": m.content.text} for m in messages],  # type: ignore[union-attr]
        "rounds": [{k: v for k, v in r.items() if k != "feedback"} for r in rounds],  # it is in messages
    }
    return InputRequiredResult(
        input_requests={_DRAFT_KEY: CreateMessageRequest(params=params)}, request_state=json.dumps(state)
    )


def _answer(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    for item in rounds:
        item.pop("feedback", None)
    draft = rounds[-1]["recipe_text"]
    valid = rounds[-1]["valid"]
    return {
        "valid": valid,
        "recipe_text": draft,
        "rounds": rounds,
        "round_count": len(rounds),
        "stopped": "valid" if valid else "max_rounds",
        "next": "run a small sample: run_recipe(recipe_text=..., reps=1)"
        if valid
        else "fix the remaining errors (explain_errors) or call draft_recipe again with more detail",
    }


def _explain(services: ServiceHolder, draft: str) -> dict[str, Any]:
    """explain_errors on a draft; a draft the server will not read at all (too large) is an invalid round."""
    with services.scrubbed() as service:
        try:
            return service.explain_errors(service.source(recipe_text=draft))
        except SnowfakeryError as exc:
            return {"valid": False, "explanations": [{"kind": exc.code, "message": exc.detail}]}


def _summary(verdict: dict[str, Any]) -> dict[str, Any]:
    """A round as reported: its errors, each with its line, the rule and the fix the server suggested."""
    errors = []
    for item in verdict.get("explanations", []):
        location, fix = item.get("location") or {}, item.get("fix") or {}
        errors.append(
            {
                "kind": item.get("kind") or "Error",
                "message": item.get("message") or "",
                "line": location.get("line"),
                "rule": item.get("rule"),
                "fix": fix.get("description"),
            }
        )
    return {"errors": errors}
