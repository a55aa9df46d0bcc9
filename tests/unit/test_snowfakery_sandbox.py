"""Recipes run for real in the sandbox (the real Snowfakery library in a child process): the bundled
examples, limits, the timeout that kills a runaway recipe, isolation from the server's files,
environment, network and stdout, and delivery of outputs into the workspace."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ade_platform.lib.snowfakery.content import ContentLibrary
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.policy import RunPolicy
from ade_platform.lib.snowfakery.runs import RunParams, run_artifact, run_recipe
from ade_platform.lib.snowfakery.sandbox import Sandbox
from ade_platform.lib.snowfakery.service import SnowfakeryService
from ade_platform.lib.snowfakery.workspace import Workspace
from ade_platform.lib.snowfakery.zygote import POOL_SIZE

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [e.name for e in ContentLibrary().examples()]
RUNAWAY = "- object: Forever\n  count: 1000000000\n  fields:\n    n: ${{ fake.first_name }}\n"
# Jinja in Snowfakery is not sandboxed: this reaches Python's os module, which is why recipes never
# run in the server process.
ESCAPE = "${{ cycler.__init__.__globals__.os"


def _service(tmp_path: Path, **policy: object) -> SnowfakeryService:
    workspace = Workspace.create(tmp_path / "ws", tmp_path / "runs")
    return SnowfakeryService(workspace, RunPolicy(**{"timeout_seconds": 30, **policy}), ContentLibrary())


def _run(service: SnowfakeryService, text: str, **params: object) -> dict:
    return run_recipe(service, service.source(recipe_text=text), RunParams(**params))


def _children(pid: int | None) -> list[int]:
    if pid is None or not Path("/proc").is_dir():
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _pool(zygote: int | None) -> set[int]:
    """The waiting job processes. A run answers as soon as its result is written: its job process may still be
    exiting for a moment, so wait until only the pool is left."""
    deadline = time.monotonic() + 10
    while len(children := set(_children(zygote))) != POOL_SIZE and time.monotonic() < deadline:
        time.sleep(0.02)
    return children


def _used_and_replaced(zygote: int | None, waiting: set[int]) -> bool:
    """Exactly one of the waiting job processes ran (and is gone), and the pool is back to its size."""
    deadline = time.monotonic() + 10  # the replacement forks right after the hand-over
    while True:
        now = set(_children(zygote))
        if len(waiting - now) == 1 and len(now) == len(waiting) == POOL_SIZE:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_bundled_example_validates_and_runs(tmp_path: Path, name: str) -> None:
    service = _service(tmp_path)
    source = service.source(recipe_path=f"snowfakery://examples/{name}")
    verdict = service.validate(source)
    assert verdict["valid"], verdict["errors"]
    assert verdict["warnings"] == []
    answer = run_recipe(service, source, RunParams(reps=2))
    model = service.analyze(source)
    written = {t["name"] for t in model["tables"] if not t["hidden"]}
    assert set(answer["summary"]["row_counts"]) == written
    if written:
        assert answer["summary"]["total_rows"] > 0 and answer["stdout_text"]


def test_feature_semantics_of_examples(tmp_path: Path) -> None:
    service = _service(tmp_path)

    def counts(name: str, **params: object) -> dict[str, int]:
        source = service.source(recipe_path=f"snowfakery://examples/{name}")
        return run_recipe(service, source, RunParams(**params))["summary"]["row_counts"]

    assert counts("just_once", reps=3) == {"Currency": 1, "Payment": 6}
    assert counts("friends", reps=1) == {"Library": 2, "Shelf": 4, "Book": 12}
    assert counts("option", reps=1, options={"store_count": 5}) == {"Store": 5}
    assert counts("for_each", reps=1) == {"Region": 3}
    assert counts("object", target_table="Warehouse", target_count=7)["Warehouse"] >= 7


def test_runaway_recipe_is_killed_at_the_timeout_and_leaves_nothing(tmp_path: Path) -> None:
    service = _service(tmp_path, timeout_seconds=2)
    service.sandbox.warm()
    zygote = Sandbox.zygote_pid()
    waiting = _pool(zygote)  # the job processes waiting for a request
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, RUNAWAY, output_format="csv", output_folder_path="out")
    assert caught.value.code == "run_timeout"
    assert _used_and_replaced(zygote, waiting)  # the job process is gone, a fresh one waits instead
    assert list(service.workspace.runs_dir.iterdir()) == []  # no run folder left
    assert list(service.workspace.root.iterdir()) == []  # nothing delivered to the workspace
    assert _run(service, "- object: A\n")["summary"]["row_counts"] == {"A": 1}  # the sandbox still works


def test_each_run_gets_a_fresh_prestarted_process_that_never_serves_again(tmp_path: Path) -> None:
    service = _service(tmp_path)
    service.sandbox.warm()
    zygote = Sandbox.zygote_pid()
    assert len(_pool(zygote)) == POOL_SIZE  # started before any run asks for one
    recipe = "- object: Draw\n  fields:\n    n: ${{ random_number(min=1, max=10**15) }}\n"
    served: set[int] = set()
    draws = []
    for _ in range(3):
        waiting = _pool(zygote)
        answer = _run(service, recipe)
        assert _used_and_replaced(zygote, waiting)
        used = waiting - set(_children(zygote))
        assert not used & served  # recycled after its run: no process runs two jobs
        served |= used
        draws.append(answer["stdout_text"])
    assert len(set(draws)) == 3, "job processes share random state with each other (or with the zygote)"
    assert Sandbox.zygote_pid() == zygote


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_waiting_job_processes_hold_only_their_own_request_pipe(tmp_path: Path) -> None:
    """The server hands requests straight to job processes (the zygote passes it their pipes over a socket): a
    job process, where a recipe's Jinja can reach `os`, must hold neither that socket nor another job's pipe."""
    service = _service(tmp_path)
    service.sandbox.warm()
    assert service.validate(service.source(recipe_text="- object: A\n"))["valid"]
    own_pipes = []
    for pid in _pool(Sandbox.zygote_pid()):
        try:
            held = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue  # the job that served the call, gone since it was listed
        beyond_stdio = [target for fd, target in held.items() if fd > 2]
        assert not [t for t in beyond_stdio if t.startswith("socket:")], held
        pipes = [t for t in beyond_stdio if t.startswith("pipe:")]
        if any("/_stdio.log" in t for t in held.values()):  # "(deleted)" once its run folder is gone
            assert len(pipes) <= 1, held  # the job that served the call, still exiting: at most its own pipe
        else:
            assert len(pipes) == 1 and beyond_stdio == pipes, held  # waiting: its own request pipe only
        own_pipes += pipes
    assert own_pipes and len(own_pipes) == len(set(own_pipes)), "job processes share a request pipe"


def test_a_killed_zygote_is_replaced_and_its_waiting_job_processes_exit(tmp_path: Path) -> None:
    service = _service(tmp_path)
    service.sandbox.warm()
    zygote = Sandbox.zygote_pid()
    assert zygote is not None
    orphans = _pool(zygote)
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not _gone(zygote) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.validate(service.source(recipe_text="- object: A\n"))["valid"]  # a new zygote
    assert Sandbox.zygote_pid() not in (None, zygote)
    # the server closed the request pipes it held for them: they read end-of-file and exit
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in orphans) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in orphans)


def test_row_and_file_size_limits(tmp_path: Path) -> None:
    service = _service(tmp_path, max_rows=10)
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n  count: 100\n")
    assert caught.value.code == "limit_exceeded"
    service = _service(tmp_path / "2", max_output_bytes=4096)
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n  count: 1000\n  fields:\n    t: ${{ 'x' * 100 }}\n")
    assert caught.value.code == "limit_exceeded"
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n", reps=10_000)
    assert caught.value.code == "limit_exceeded"


def test_recipes_cannot_read_outside_the_workspace_or_start_programs(tmp_path: Path) -> None:
    service = _service(tmp_path)
    (tmp_path / "secret.txt").write_text("top secret")
    reader = "- plugin: snowfakery.standard_plugins.file.File\n- object: A\n  fields:\n    t:\n      File.file_data:\n        file: ../secret.txt\n"
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, reader)
    assert caught.value.code == "sandbox_violation"
    assert "top secret" not in str(caught.value.extra) and str(tmp_path) not in caught.value.detail
    with pytest.raises(SnowfakeryError) as caught:
        # strict validation renders formulas in a Jinja sandbox and would refuse this before running
        popen = f"- object: A\n  fields:\n    t: {ESCAPE}.popen('id').read() }}}}\n"
        _run(service, popen, strict_mode=False)
    assert caught.value.code == "sandbox_violation"
    verdict = service.validate(service.source(recipe_text="- include_file: ../secret.txt\n"))
    assert not verdict["valid"] and verdict["errors"][0]["kind"] == "PathNotAllowed"


def test_recipes_see_no_server_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADE_TEST_API_TOKEN", "tok-very-secret-42")
    service = _service(tmp_path)
    escape = f"- object: A\n  fields:\n    env: {ESCAPE}.environ | list | sort | join(',') }}}}\n"
    answer = _run(service, escape, strict_mode=False)
    assert "A(id=1, env=HOME,LANG,PATH,TMPDIR)" in answer["stdout_text"]
    # and a secret written into a recipe by mistake never comes back from the server
    service = SnowfakeryService(
        service.workspace, service.policy, service.content, secrets=["hunter2-secret"]
    )
    answer = _run(service, "- object: A\n  fields:\n    pw: hunter2-secret\n")
    assert "hunter2-secret" not in answer["stdout_text"] and "pw=***" in answer["stdout_text"]


def test_the_sandbox_refuses_network_access() -> None:
    program = textwrap.dedent(
        """
        import socket
        from ade_platform.lib.snowfakery import guard
        guard.install(read_roots=[], write_roots=[], allow_network=False)
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        except guard.SandboxViolation as exc:
            print("refused:", exc)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert "refused: network access is disabled" in proc.stdout, proc.stderr


def test_runs_print_nothing_on_the_server_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    service = _service(tmp_path)
    answer = _run(service, "- object: A\n  count: 3\n", output_format="csv")
    out, _ = capfd.readouterr()
    assert out == ""
    assert any(m.startswith("Created snowfakery://runs/") for m in answer["messages"])


def test_outputs_go_to_the_workspace_only_when_asked(tmp_path: Path) -> None:
    service = _service(tmp_path)
    answer = _run(service, "- object: A\n  count: 2\n", output_format="json", output_file_path="out/a.json")
    assert (service.workspace.root / "out" / "a.json").is_file()
    assert answer["workspace_files"] == {"output_file_path": "out/a.json"}
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n", output_format="json", output_file_path="out/a.json")
    assert caught.value.code == "output_exists"
    _run(service, "- object: B\n", output_format="json", output_file_path="out/a.json", overwrite=True)
    assert '"B"' in (service.workspace.root / "out" / "a.json").read_text()
    _run(service, "- object: C\n  count: 4\n", output_format="csv", output_folder_path="csvs")
    assert (service.workspace.root / "csvs" / "C.csv").read_text().count("\n") == 5
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: C\n", output_format="txt", output_folder_path="csvs2")
    assert caught.value.code == "invalid_argument"


def test_continuation_chains_runs(tmp_path: Path) -> None:
    service = _service(tmp_path)
    recipe = "- object: Ledger\n  just_once: true\n- object: Entry\n  count: 3\n"
    first = _run(service, recipe, generate_continuation=True, generate_continuation_file_path="state/c.yml")
    assert (service.workspace.root / "state" / "c.yml").is_file()
    uri = f"snowfakery://runs/{first['run_id']}/continuation.yml"
    assert uri in first["resources"]
    second = _run(service, recipe, continuation_file_path=uri)
    assert second["summary"]["row_counts"] == {"Entry": 3}  # the singleton is not created again
    assert "Entry(id=4" in second["stdout_text"]
    third = _run(service, recipe, continuation_file_path="state/c.yml", output_format="json")
    content, mime = run_artifact(service, third["run_id"], "output.json")
    assert mime == "application/json" and '"id": 4' in str(content)


def test_database_urls_are_refused_unless_enabled(tmp_path: Path) -> None:
    service = _service(tmp_path)
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n", dburl="sqlite:///data.db")
    assert caught.value.code == "dburl_not_allowed"
    service = _service(tmp_path / "2", allow_dburl=True)
    with pytest.raises(SnowfakeryError) as caught:
        _run(service, "- object: A\n", dburl="postgresql://u:p@db.example.com/x")
    assert caught.value.code == "dburl_not_allowed" and "u:p" not in caught.value.detail
    _run(service, "- object: A\n  count: 3\n", dburl="sqlite:///data/out.db")
    import sqlite3

    with sqlite3.connect(service.workspace.root / "data" / "out.db") as con:
        assert con.execute("select count(*) from A").fetchone() == (3,)


def test_validation_modes_and_error_locations(tmp_path: Path) -> None:
    service = _service(tmp_path)
    (service.workspace.root / "lib.yml").write_text("- macro: m\n  fields:\n    a: ${{ nope }}\n")
    (service.workspace.root / "main.yml").write_text("- include_file: lib.yml\n- object: A\n  include: m\n")
    verdict = service.validate(service.source(recipe_path="main.yml"))
    assert not verdict["valid"]
    error = verdict["errors"][0]
    assert error["filename"] == "lib.yml" and error["line"] == 3 and "nope" in error["message"]
    assert service.validate(service.source(recipe_path="main.yml"), strict_mode=False)["valid"]
    missing = service.validate(
        service.source(recipe_text="- option: n\n- object: A\n  count: ${{ int(n) }}\n")
    )
    assert not missing["valid"] and "option n" in missing["errors"][0]["message"]
    given = service.validate(service.source(recipe_text="- option: n\n- object: A\n"), options={"n": 3})
    assert given["valid"]
    broken = service.validate(service.source(recipe_text="- object: A\n  fields: [1\n"))
    assert broken["errors"][0]["kind"] == "YamlSyntaxError" and broken["checks"]["yaml"] is False


def test_graphviz_diagrams(tmp_path: Path) -> None:
    service = _service(tmp_path)
    dot = _run(
        service,
        "- object: A\n  friends:\n    - object: B\n      fields: {a: {reference: A}}\n",
        output_format="dot",
    )
    assert "digraph" in dot["stdout_text"]
    if shutil.which("dot") is None:
        with pytest.raises(SnowfakeryError) as caught:
            _run(service, "- object: A\n", output_format="svg")
        assert caught.value.code == "graphviz_missing"
        pytest.skip("Graphviz `dot` is not installed: svg/png rendering not exercised (CI installs graphviz)")
    svg = _run(service, "- object: A\n", output_format="svg")
    assert "<svg" in svg["stdout_text"]
    png = _run(service, "- object: A\n", output_format="png")
    content, mime = run_artifact(service, png["run_id"], "diagram.png")
    assert mime == "image/png" and isinstance(content, bytes) and content.startswith(b"\x89PNG")


def test_prewarmed_job_processes_keep_seeds_and_fresh_fakers(tmp_path: Path) -> None:
    """Job processes build their Fakers before their job is known (zygote._prepare_job_process): a seeded run
    still repeats exactly, another seed changes it, and unseeded runs in different job processes differ, Faker's
    values too (each job process copies Faker's random state from the zygote: before it was reseeded there,
    every unseeded run generated the same names)."""
    service = _service(tmp_path)
    recipe = (
        "- object: Person\n  count: 3\n  fields:\n    name:\n      fake: name\n"
        "    email: ${{ fake.email }}\n    n: ${{ random_number(min=1, max=10**12) }}\n"
    )

    def text(**params: object) -> str:
        return _run(service, recipe, **params)["stdout_text"]

    assert text(seed=7) == text(seed=7)
    assert text(seed=7) != text(seed=8)
    assert text() != text()
    names = "- object: Person\n  count: 3\n  fields:\n    name:\n      fake: name\n"
    assert len({_run(service, names)["stdout_text"] for _ in range(3)}) == 3


def _eventually(condition: object, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_validation_scratch_and_pruned_runs_are_deleted_after_the_answer(tmp_path: Path) -> None:
    """Deleting folders is off the answer's path (Workspace.discard), but it happens: a validation leaves no
    folder behind, and runs beyond max_runs_kept go."""
    service = _service(tmp_path, max_runs_kept=1)
    for recipe in ("- object: A\n", "- object: B\n  fields:\n    x: ${{ nope }}\n"):
        service.validate(service.source(recipe_text=recipe))
    scratch = service.workspace.runs_dir / "_scratch"
    assert _eventually(lambda: list(scratch.iterdir()) == [])
    ids = [_run(service, "- object: A\n")["run_id"] for _ in range(3)]
    assert _eventually(
        lambda: {p.name for p in service.workspace.runs_dir.iterdir()} == {"_scratch", ids[-1]}
    )
