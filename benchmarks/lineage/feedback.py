"""Does people's feedback on resolved incidents make the next verdicts better? Top-1 with and without it.

    python -m benchmarks.lineage.feedback [--seed N] [--per-kind K] [--platform demo|generated|both] [--kinds a,b]

Per platform, two rounds of incidents made after materialization (evaluate.py's scenarios):
1. The teaching round (seed N): each answer's first cause is judged as the person resolving the incident would,
   right when it is the expected cause and wrong otherwise, and recorded in the platform's incident journal as
   `incident_update(resolve, cause_was_right=...)` records it (an incident per cause node and kind, opened then
   resolved). Controls teach nothing: no incident is opened for a healthy start.
2. The scored round (seed N + 1000, other scenarios on the same platform): each incident is asked twice while it
   holds, first with the journal set aside (no feedback) and then with it, so the two top-1 figures are of the very
   same incidents. The feedback factor (lib/lineage/incident.py `Feedback`) only ever lowers a cause kind or node
   that was judged wrong before; a figure that moves says how much that history helps or hurts.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.lineage.evaluate import Outcome, run_scenarios, run_variants, table
from benchmarks.lineage.platform import Platform
from benchmarks.lineage.scenarios import CONTROLS, KINDS, generate

SCORED_SEED_OFFSET = 1000
PERSON = "lineage-evaluation"


def _journal(platform: Platform) -> Any:
    from ade_platform.store import StoreReader
    from ade_platform.store.incidents import IncidentJournal

    return IncidentJournal(StoreReader(platform.settings.store_root).root)


def teach(platform: Platform, outcomes: list[Outcome]) -> tuple[int, int]:
    """Record each incident's first cause as a resolved incident judged right or wrong. Returns (right, wrong)."""
    from ade_platform.lib.incidents.model import incident_id

    judged: dict[str, tuple[str, str, bool]] = {}
    for o in outcomes:
        if o.kind in CONTROLS or o.top is None or o.error:
            continue
        cause, node = o.top
        judged[incident_id(node, cause)] = (cause, node, o.rank == 1)

    def decide(state: Any) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for ident, (cause, node, right) in judged.items():
            known = state.incidents.get(ident)
            if known is None:
                key = {"node": node, "cause": cause}
                events.append({"incident": ident, "type": "opened", "by": PERSON, "data": {"key": key}})
            elif known["status"] in ("resolved", "not_an_incident"):
                events.append({"incident": ident, "type": "reopened", "by": PERSON, "data": {}})
            events.append(
                {"incident": ident, "type": "resolved", "by": PERSON, "data": {"cause_was_right": right}}
            )
        return events

    _journal(platform).change(decide)
    right = sum(r for _, _, r in judged.values())
    return right, len(judged) - right


def _without_and_with(platform: Platform) -> tuple[Any, Any]:
    """Two variants: the journal set aside (renamed) for the first ask, put back for the second."""
    from ade_platform.store.incidents import JOURNAL

    path = Path(platform.settings.store_root) / JOURNAL
    aside = path.with_name(path.name + ".aside")

    def without() -> None:
        if path.exists():
            path.replace(aside)

    def with_feedback() -> None:
        if aside.exists():
            aside.replace(path)

    return without, with_feedback


def evaluate_feedback(
    which: str, seed: int, per_kind: int, kinds: tuple[str, ...], log: Any = print
) -> tuple[list[Outcome], list[Outcome], tuple[int, int]]:
    from benchmarks.lineage.generated import generated_platform
    from benchmarks.lineage.platform import demo_platform

    without: list[Outcome] = []
    with_feedback: list[Outcome] = []
    taught = [0, 0]
    builders = {"demo": demo_platform, "generated": lambda root: generated_platform(root, seed)}
    for name in ("demo", "generated") if which == "both" else (which,):
        with (
            tempfile.TemporaryDirectory(prefix=f"lineage-feedback-{name}-") as tmp,
            builders[name](Path(tmp)) as platform,
        ):
            teaching = run_scenarios(platform, generate(platform, seed, per_kind, kinds), log)
            right, wrong = teach(platform, teaching)
            taught[0] += right
            taught[1] += wrong
            log(f"{name}: taught {right} right and {wrong} wrong first causes")
            scored = generate(platform, seed + SCORED_SEED_OFFSET, per_kind, kinds)
            a, b = run_variants(platform, scored, _without_and_with(platform), log)
            without += a
            with_feedback += b
    return without, with_feedback, (taught[0], taught[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-kind", type=int, default=1)
    parser.add_argument("--platform", choices=("demo", "generated", "both"), default="both")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated scenario kinds")
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k in KINDS)
    without, with_feedback, (right, wrong) = evaluate_feedback(args.platform, args.seed, args.per_kind, kinds)
    print(f"teaching round: {right} first causes judged right, {wrong} wrong")
    print("scored round, without feedback:")
    print(table(without))
    print("scored round, with the teaching round's feedback:")
    print(table(with_feedback))


if __name__ == "__main__":
    main()
