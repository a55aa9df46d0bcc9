"""Score lineage_explain_incident on incidents made after materialization: top-1 / top-3, calls, latency, by kind.

    python -m benchmarks.lineage.evaluate [--seed N] [--per-kind K] [--platform demo|generated|both] [--kinds a,b]

One MCP session per platform (as an agent has), one call per incident, right after it is made. The calls an
agent needs: 1 when the first cause is right (the answer names it), k when it is k-th (the agent confirms the
causes ahead of it with their `next_tool` first), and on a miss one call per hop of the chain it then checks by
hand. A healthy control scores a false alarm when the answer is `confident`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.lineage.platform import Platform
from benchmarks.lineage.scenarios import CONTROLS, KINDS, Scenario, generate


@dataclass
class Outcome:
    platform: str
    kind: str
    description: str
    rank: int | None  # of the expected cause (None: not listed)
    confident: bool
    calls: int
    ms: float
    verdict: str
    error: str | None = None
    top: tuple[str, str] | None = None  # the first cause's (kind, node): what a person resolving it judges


async def _ask(client: Any, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    result = await client.call_tool("lineage_explain_incident", args, raise_on_error=False)
    elapsed = (time.perf_counter() - started) * 1000
    body = result.structured_content or {}
    if result.is_error:
        text = result.content[0].text if result.content else "error"
        return {"error": text}, elapsed
    return body, elapsed


def run_scenarios(platform: Platform, scenarios: list[Scenario], log: Any = print) -> list[Outcome]:
    return run_variants(platform, scenarios, (lambda: None,), log)[0]


def run_variants(
    platform: Platform, scenarios: list[Scenario], variants: tuple[Any, ...], log: Any = print
) -> list[list[Outcome]]:
    """Each scenario made once and asked once per variant (a callable that sets the platform up for it, e.g. with
    or without people's feedback), in that order; the outcomes per variant."""
    from fastmcp import Client

    from mcp_bridge.context import flush_all_observations
    from mcp_bridge.server import build_server

    server = build_server(platform.settings)
    outcomes: list[list[Outcome]] = [[] for _ in variants]

    async def session() -> None:
        async with Client(server) as client:
            # warm the session the way an agent's first question does (clients, Dagster, snapshots)
            await _ask(client, {"start_kind": "table", "start": _any_table(platform)})
            for s in scenarios:
                try:
                    s.apply()
                except Exception as exc:  # a scenario that could not be made is reported, not scored
                    log(f"  [{platform.name}] {s.kind}: could not be made ({type(exc).__name__}: {exc})")
                    _safe(s.revert)
                    continue
                try:
                    for i, variant in enumerate(variants):
                        variant()
                        body, ms = await _ask(client, s.start)
                        outcomes[i].append(_score(platform.name, s, body, ms))
                        flush_all_observations(30)  # what the call read is in the store before the next
                finally:
                    _safe(s.revert)
                for i, mine in enumerate(outcomes):
                    o = mine[-1]
                    # a refused call is a miss for a control too: it never got to say nothing was wrong
                    mark = (
                        "ok " if not o.error and (o.rank == 1 if s.expected else not o.confident) else "MISS"
                    )
                    tag = f" (variant {i + 1})" if len(variants) > 1 else ""
                    log(
                        f"  {mark} [{platform.name}] {s.kind}{tag}: {s.description} -> rank {o.rank}, {o.ms:.0f} ms"
                    )
                    if mark == "MISS":
                        log(
                            f"       verdict: {o.verdict[:300]}"
                            if not o.error
                            else f"       refused: {o.error}"
                        )

    asyncio.run(session())
    return outcomes


def _safe(fn: Any) -> None:
    try:
        fn()
    except Exception as exc:
        print(f"  revert failed: {type(exc).__name__}: {exc}")


def _any_table(platform: Platform) -> str:
    """A table the graph knows (the warm-up question's start)."""
    from ade_platform.lib.lineage.sources import LINEAGE_ASSET
    from ade_platform.store import StoreReader

    graph = StoreReader(platform.settings.store_root).latest(LINEAGE_ASSET).data
    return next(n["id"] for n in graph["nodes"] if n.get("system") == "warehouse")


def _score(platform: str, s: Scenario, body: dict[str, Any], ms: float) -> Outcome:
    if "error" in body:
        return Outcome(platform, s.kind, s.description, None, False, 0, ms, "", body["error"])
    causes = body.get("causes") or []
    rank = None
    if s.expected is not None:
        rank = next((c["rank"] for c in causes if s.expected.matches(c)), None)
    calls = rank if rank is not None else 1 + int(body.get("chain_nodes") or 0)
    if s.expected is None:
        calls = 1
    top = (str(causes[0]["cause"]), str(causes[0]["node"])) if causes else None
    return Outcome(
        platform,
        s.kind,
        s.description,
        rank,
        bool(body.get("confident")),
        calls,
        ms,
        body.get("verdict", ""),
        top=top,
    )


def table(outcomes: list[Outcome]) -> str:
    """By kind: top-1, sure (first and said with confidence: what an agent can act on), top-3, calls, p50, and
    false alarms (a confident verdict on a healthy control, or a confident verdict whose first cause is not the
    expected one)."""
    lines = [
        f"{'kind':<28} {'n':>3} {'top-1':>7} {'sure':>6} {'top-3':>7} {'calls':>6} {'p50 ms':>8} "
        f"{'false alarms':>13}",
    ]
    incidents = [o for o in outcomes if o.kind not in CONTROLS]

    def alarms(rows: list[Outcome]) -> int:
        return sum(o.confident and (o.kind in CONTROLS or o.rank != 1) for o in rows)

    def line(label: str, rows: list[Outcome]) -> str:
        p50 = statistics.median(o.ms for o in rows)
        if all(o.kind in CONTROLS for o in rows):
            return (
                f"{label:<28} {len(rows):>3} {'-':>7} {'-':>6} {'-':>7} {1:>6} {p50:>8.0f} {alarms(rows):>13}"
            )
        top1 = sum(o.rank == 1 for o in rows) / len(rows)
        sure = sum(o.rank == 1 and o.confident for o in rows) / len(rows)
        top3 = sum(o.rank is not None and o.rank <= 3 for o in rows) / len(rows)
        calls = statistics.mean(o.calls for o in rows)
        return (
            f"{label:<28} {len(rows):>3} {top1:>7.0%} {sure:>6.0%} {top3:>7.0%} {calls:>6.1f} {p50:>8.0f} "
            f"{alarms(rows):>13}"
        )

    for kind in KINDS:
        rows = [o for o in outcomes if o.kind == kind]
        if rows:
            lines.append(line(kind, rows))
    if incidents:
        lines.append(line("all incidents", incidents))
    controls = [o for o in outcomes if o.kind in CONTROLS]
    if controls:
        lines.append(line("all healthy controls", controls))
    refused = [o for o in outcomes if o.error]
    if refused:  # never a pass: the call did not get to answer
        lines.append(f"refused calls: {len(refused)} ({', '.join(sorted({o.kind for o in refused}))})")
    for name in sorted({o.platform for o in outcomes}):
        rows = [o for o in outcomes if o.platform == name]
        lines.append(f"p50 on {name}: {statistics.median(o.ms for o in rows):.0f} ms over {len(rows)} calls")
    return "\n".join(lines)


def evaluate(
    which: str, seed: int, per_kind: int, log: Any = print, kinds: tuple[str, ...] = KINDS
) -> list[Outcome]:
    from benchmarks.lineage.generated import generated_platform
    from benchmarks.lineage.platform import demo_platform

    outcomes: list[Outcome] = []
    builders = {"demo": demo_platform, "generated": lambda root: generated_platform(root, seed)}
    for name in ("demo", "generated") if which == "both" else (which,):
        with (
            tempfile.TemporaryDirectory(prefix=f"lineage-eval-{name}-") as tmp,
            builders[name](Path(tmp)) as platform,
        ):
            scenarios = generate(platform, seed, per_kind, kinds)
            log(f"{name}: {len(scenarios)} scenarios (seed {seed})")
            outcomes += run_scenarios(platform, scenarios, log)
            _flush()
    return outcomes


def _flush() -> None:
    import sys

    if "ade_platform.live" in sys.modules:
        sys.modules["ade_platform.live"].flush_all(120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--platform", choices=("demo", "generated", "both"), default="both")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated scenario kinds (default: all)"
    )
    parser.add_argument("--out", help="also write every outcome there, one JSON object a line")
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k in KINDS)
    outcomes = evaluate(args.platform, args.seed, args.per_kind, kinds=kinds)
    if args.out:
        import json
        from dataclasses import asdict

        Path(args.out).write_text("".join(json.dumps(asdict(o)) + "\n" for o in outcomes))
    print(table(outcomes))


if __name__ == "__main__":
    main()
