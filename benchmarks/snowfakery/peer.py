"""The snowfakery toolset against `snowfakery-mcp` (the open server for the same spec), call for call.

    python -m benchmarks.snowfakery.peer [--quick]

Both servers run as a user runs them: spawned over stdio, each from its own virtualenv (the peer's is
`.tools/snowfakery-mcp`, installed by `make bench` with a fastmcp 2 it runs with: under fastmcp 3+ its
SIGALRM timeout fails every call made off the main thread), and both are driven by the same client (FastMCP's
`Client`). Each side gets its own copy of the upstream examples (Snowfakery's `examples/` folder from the
corpus, `SNOWFAKERY_CORPUS` or `shared/corpus/snowfakery` one or two folders up, copied into a temporary
workspace so that the peer's run folders never land in the corpus) as its workspace root, and is called with
the same arguments on the same recipes: the top-level upstream examples the corpus marks as passing. Measured:

- validate: `validate_recipe(recipe_path)`;
- run: `run_recipe(recipe_path, output_format=csv, reps=1)`;
- first call: a fresh server, `initialize`, then the first and the second validate (of the first recipe),
  through FastMCP's client and through the wire client (`benchmarks/wire.py`, which times only the server:
  FastMCP's client does work of its own on a session's first call, the tool list and its output schemas); the
  start-up to `initialize` answered is reported beside it.

A warm-up pass calls every recipe once on both sides and records the verdicts (valid, run succeeded); the
timed rounds use the recipes on which both sides agree (where they differ, ADE refuses on purpose: a file read
outside the workspace, an output over the size cap), each round calling every recipe on both sides,
alternating which side goes first. Reported: per-recipe verdicts, medians over all timed calls of each kind,
and ratios (ADE / peer): of the medians, and the median (with quartiles) of the ratios of each pair of calls.
"""

from __future__ import annotations

import asyncio
import csv
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import quick_mode

REPO = Path(__file__).resolve().parents[2]
PEER_PYTHON = REPO / ".tools" / "snowfakery-mcp" / "bin" / "python"
# the entry point through the virtualenv's interpreter: the installed script's first line names the folder the
# virtualenv was created in, which breaks once `.tools` is reached through another path (a worktree's link)
PEER_COMMAND = ["-c", "from snowfakery_mcp.server import run; run()"]
SIDES = ("ADE", "peer")
KINDS = ("validate", "run")


def corpus_root() -> Path | None:
    """`SNOWFAKERY_CORPUS`, else the shared corpus beside the checkout (or beside a worktree's folder)."""
    if os.environ.get("SNOWFAKERY_CORPUS"):
        candidates = [Path(os.environ["SNOWFAKERY_CORPUS"])]
    else:
        candidates = [up / "shared" / "corpus" / "snowfakery" for up in REPO.parents[:2]]
    return next((root for root in candidates if (root / "examples_status.csv").is_file()), None)


def upstream_recipes(corpus: Path) -> list[str]:
    """The top-level upstream examples the corpus ran successfully with the Snowfakery CLI."""
    with (corpus / "examples_status.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [r["recipe"] for r in rows if r["status"] == "pass" and "/" not in r["recipe"]]


def workspace(corpus: Path, into: Path) -> Path:
    """A private copy of the examples (and the one file outside them an example reads)."""
    shutil.copytree(corpus / "examples", into / "examples")
    shutil.copy(corpus / "CODE_OF_CONDUCT.md", into / "CODE_OF_CONDUCT.md")
    return into / "examples"


def servers(home: Path, ade_root: Path, peer_root: Path) -> dict[str, tuple[str, list[str], dict[str, str]]]:
    config = home / "ade.yaml"
    config.write_text(
        f"home: {home / 'ade'}\n"
        "mcp:\n  toolsets: [snowfakery]\n"
        f"snowfakery:\n  workspace_root: {ade_root}\n  max_runs_kept: 20\n"
    )
    ade_env = {"ADE_HOME": str(home / "ade"), "ADE_CONFIG": str(config), "PATH": "/usr/bin:/bin"}
    peer_env = {"SNOWFAKERY_MCP_WORKSPACE_ROOT": str(peer_root), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    return {
        "ADE": (sys.executable, ["-m", "ade_platform.cli", "mcp", "--server", "snowfakery"], ade_env),
        "peer": (str(PEER_PYTHON), PEER_COMMAND, peer_env),
    }


TOOLS = {
    "ADE": {"validate": "snowfakery.validate_recipe", "run": "snowfakery.run_recipe"},
    "peer": {"validate": "validate_recipe", "run": "run_recipe"},
}


def arguments(kind: str, recipe: str) -> dict[str, Any]:
    if kind == "validate":
        return {"recipe_path": recipe}
    return {"recipe_path": recipe, "output_format": "csv", "reps": 1}


def verdict(kind: str, result: Any) -> bool:
    """Whether the call accepted the recipe (valid, or the run succeeded)."""
    if result.is_error:
        return False
    data = result.structured_content or {}
    return bool(data.get("valid")) if kind == "validate" else data.get("ok", True) is not False


async def first_calls(
    specs: dict[str, tuple[str, list[str], dict[str, str]]], recipe: str, sessions: int, log: Path
) -> dict[str, dict[str, list[float]]]:
    """Per client and side: seconds from spawn to initialized ("start"), of the first validate after it
    ("first") and of the second ("second"), one fresh server per session. Three clients: FastMCP's; FastMCP's
    after listing the tools as an MCP host does at start ("host": its "start" includes the listing); and the wire
    client (benchmarks/wire.py: the server's own time, without the client library's work on a first call)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    from benchmarks.wire import WireClient

    out: dict[str, dict[str, list[float]]] = {}
    for i in range(sessions):
        for side in SIDES if i % 2 == 0 else SIDES[::-1]:
            command, args, env = specs[side]
            tool, arguments_ = TOOLS[side]["validate"], arguments("validate", recipe)
            transport = StdioTransport(
                command=command,
                args=args,
                env=env,
                cwd=str(REPO),
                keep_alive=False,
                log_file=log / f"{side}.log",
            )
            # An MCP host lists the tools once the session is up (to show them to its model), so its first call
            # does not fetch them: the same client, timed after that listing ("host").
            for label, list_first in (("fastmcp", False), ("host", True)):
                times = out.setdefault(f"{label} {side}", {"start": [], "first": [], "second": []})
                await _client_session(Client(transport), tool, arguments_, times, list_first)
            wire_times = out.setdefault(f"wire {side}", {"start": [], "first": [], "second": []})
            started = time.perf_counter()
            async with WireClient(command, args, env, cwd=REPO) as wire:
                wire_times["start"].append(time.perf_counter() - started)
                for key in ("first", "second"):
                    wire_times[key].append((await wire.call(tool, arguments_))[0])
    return out


async def _client_session(
    client: Any, tool: str, arguments_: dict[str, Any], times: dict[str, list[float]], list_first: bool
) -> None:
    """One session of FastMCP's client: start-up to initialized (and listed, with `list_first`), then the first
    and the second call, each timed into `times`."""
    started = time.perf_counter()
    async with client:
        if list_first:
            await client.list_tools()
        times["start"].append(time.perf_counter() - started)
        for key in ("first", "second"):
            started = time.perf_counter()
            await client.call_tool(tool, arguments_, raise_on_error=False)
            times[key].append(time.perf_counter() - started)


async def compare(home: Path, corpus: Path, rounds: int, sessions: int) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    recipes = upstream_recipes(corpus)
    ade_root = workspace(corpus, home / "ade-workspace")
    peer_root = workspace(corpus, home / "peer-workspace")
    specs = servers(home, ade_root, peer_root)
    firsts = await first_calls(specs, recipes[0], sessions, home)

    transports = {
        side: StdioTransport(command=c, args=a, env=e, cwd=str(REPO), log_file=home / f"{side}.log")
        for side, (c, a, e) in specs.items()
    }
    times: dict[tuple[str, str], list[float]] = {}
    verdicts: dict[tuple[str, str, str], bool] = {}
    async with Client(transports["ADE"]) as ade, Client(transports["peer"]) as peer:
        clients = {"ADE": ade, "peer": peer}

        async def call(side: str, kind: str, recipe: str) -> float:
            started = time.perf_counter()
            result = await clients[side].call_tool(
                TOOLS[side][kind], arguments(kind, recipe), raise_on_error=False
            )
            elapsed = time.perf_counter() - started
            verdicts[(side, kind, recipe)] = verdict(kind, result)
            return elapsed

        for kind in ("validate", "run"):  # warm-up and verdicts: each recipe once on each side, untimed
            for recipe in recipes:
                for side in SIDES:
                    await call(side, kind, recipe)
        timed = [
            r for r in recipes if all(verdicts[("ADE", k, r)] == verdicts[("peer", k, r)] for k in KINDS)
        ]
        for kind in KINDS:
            for r in range(rounds):
                for recipe in timed:
                    for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                        times.setdefault((kind, side), []).append(await call(side, kind, recipe))
    report(recipes, timed, rounds, times, verdicts, firsts)


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def report(
    recipes: list[str],
    timed: list[str],
    rounds: int,
    times: dict[tuple[str, str], list[float]],
    verdicts: dict[tuple[str, str, str], bool],
    firsts: dict[str, dict[str, list[float]]],
) -> None:
    print(
        f"snowfakery: ADE vs snowfakery-mcp 0.0.6 (stdio, FastMCP Client), {len(recipes)} upstream recipes, "
        f"{rounds} interleaved rounds"
    )
    agree = 0
    for recipe in recipes:
        marks = {
            kind: "/".join("ok" if verdicts[(s, kind, recipe)] else "--" for s in SIDES)
            for kind in ("validate", "run")
        }
        same = all(verdicts[("ADE", k, recipe)] == verdicts[("peer", k, recipe)] for k in ("validate", "run"))
        agree += same
        print(
            f"    {recipe:<36} validate {marks['validate']}  run {marks['run']}{'' if same else '   differ'}"
        )
    print(
        f"    verdicts (ADE/peer) agree on {agree} of {len(recipes)}; timed: the {len(timed)} where they agree"
    )
    for kind, label in (("validate", "validate_recipe"), ("run", "run_recipe csv reps 1")):
        ade, peer = ms(times[(kind, "ADE")]), ms(times[(kind, "peer")])
        # the same recipe in the same round, one call right after the other: the machine's load drifts less
        # within a pair than over the run
        paired = sorted(a / p for a, p in zip(times[(kind, "ADE")], times[(kind, "peer")], strict=True))
        quartiles = statistics.quantiles(paired, n=4)
        print(
            f"    {label:<24} median  ADE {ade:8.2f} ms   peer {peer:8.2f} ms   ratio ADE/peer {ade / peer:5.2f} x"
            f"   (paired: median {statistics.median(paired):4.2f} x, quartiles {quartiles[0]:4.2f}-{quartiles[2]:4.2f})"
        )
    for label, sessions in firsts.items():
        first, second = ms(sessions["first"]), ms(sessions["second"])
        print(
            f"    first validate of a session, {label:<12} {first:8.2f} ms, second {second:7.2f} ms "
            f"({first / second:5.2f} x); start-up to initialized {ms(sessions['start']):6.0f} ms "
            f"(median of {len(sessions['first'])})"
        )
    print("    targets: validate and run ratio <= 1.00 x; ADE's first call <= 2 x its second")


def main() -> None:
    quick = quick_mode(__doc__)
    if not PEER_PYTHON.exists():
        print("snowfakery-mcp is not installed (.tools/snowfakery-mcp); run `make bench`")
        return
    corpus = corpus_root()
    if corpus is None:
        print("the Snowfakery corpus is absent (set SNOWFAKERY_CORPUS): nothing to compare on")
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(compare(Path(tmp), corpus, rounds=3 if quick else 7, sessions=3 if quick else 5))


if __name__ == "__main__":
    main()
