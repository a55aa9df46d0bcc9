"""The store's faults made real (issue 38 §3-5): a publish killed with SIGKILL while its version is half written
(local folder, an fsspec root, and moto's S3 server as tests/deploy starts it), a corrupt latest snapshot, and a
store this process may not write (the gateway run as `nobody`: root ignores permissions).

Each test measures what an operator is promised, prints the measures (run with -s, or read them in the report),
then asserts them; the same test run on the code before issue 38 printed the "before" column of
docs/STORE_ASSETS.md's fault table.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from ade_platform.store import CorruptSnapshot, StoreLocation, StoreReader, StoreWriter
from tests.conftest import REPO_ROOT, settings_for
from tests.deploy.conftest import S3_ENV, _creds, s3_endpoint, s3_root  # noqa: F401  (fixtures)
from tests.helpers import call_tool, call_tools

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

ADE = str(Path(sys.executable).parent / "ade")
ASSET = "big"
# The child publishes this much in 12 files: writing it takes long enough to be caught half-way.
_PART_BYTES = 6 << 20
_WRITER = textwrap.dedent(
    """
    import os, sys
    from ade_platform.store import S3Options, StoreLocation, StoreWriter

    mode, url, asset, endpoint = sys.argv[1:5]
    if mode == "fsspec":  # an fsspec root (gs://, az://, ...): files written in place, no rename
        from upath import UPath
        from ade_platform.store.paths import RemoteRoot
        root = RemoteRoot(UPath("file://" + url))
    elif mode == "s3":
        root = StoreLocation(url, S3Options(endpoint_url=endpoint, region="us-east-1",
                                            access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                                            secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"]))
    else:
        root = StoreLocation(url)
    files = {f"part{i:02d}.bin": os.urandom(PART_BYTES) for i in range(12)}
    print("ready", flush=True)
    StoreWriter(root).publish(asset, files=files)
    print("published", flush=True)
    """
).replace("PART_BYTES", str(_PART_BYTES))


def _show(capsys: pytest.CaptureFixture[str], fault: str, measures: dict[str, Any]) -> None:
    with capsys.disabled():
        print(f"\n  fault: {fault}")
        for name, value in measures.items():
            print(f"    {name:<58} {value}")


# ---- raw views of the store, independent of the store's own code (they measure it) -------------------------
def _raw_uncommitted(mode: str, where: Any, asset: str) -> list[str]:
    """Entries under <asset>/versions/ without a provenance.json: half-written versions and temp folders."""
    if mode == "s3":
        client, bucket, prefix = where
        keys = [
            o["Key"]
            for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=f"{prefix}/{asset}/versions/"
            )
            for o in page.get("Contents") or []
        ]
        by_version: dict[str, set[str]] = {}
        for key in keys:
            version, _, name = key.split("/versions/", 1)[1].partition("/")
            by_version.setdefault(version, set()).add(name)
        return sorted(v for v, names in by_version.items() if "provenance.json" not in names)
    folder = Path(where) / asset / "versions"
    return sorted(e.name for e in folder.iterdir() if e.is_dir() and not (e / "provenance.json").exists())


def _kill_mid_publish(mode: str, url: str, where: Any, asset: str, endpoint: str = "") -> list[str]:
    """Start a child that publishes a large version of `asset`, SIGKILL it once the version is partly written
    (some of its files there, no provenance.json), and return what it left (the raw view)."""
    env = {**os.environ, **S3_ENV}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, mode, url, asset, endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO_ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready", proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    deadline = time.monotonic() + 300
    partial: list[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        # frozen while we look, so what we see is what the kill leaves (a loaded machine once let the writer
        # finish between the look and the kill)
        os.kill(proc.pid, signal.SIGSTOP)
        partial = [e for e in _raw_uncommitted(mode, where, asset) if _has_files(mode, where, asset, e)]
        if partial:
            break
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.002)
    if proc.poll() is not None:
        raise AssertionError(f"the writer exited ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert partial, "the child finished (or died) before its version was seen half written"
    assert proc.returncode == -signal.SIGKILL
    return _raw_uncommitted(mode, where, asset)


def _has_files(mode: str, where: Any, asset: str, entry: str) -> bool:
    if mode == "s3":
        return True  # an uncommitted version on S3 is one or more of its objects
    return any((Path(where) / asset / "versions" / entry).iterdir())


def _cli(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADE_HOME": str(home), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml")}
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([ADE, *args], capture_output=True, text=True, env=env, timeout=timeout)


def _fsck_local(home: Path, repair: bool) -> Any:
    done = _cli(home, "store", "fsck", "--json", *(["--repair"] if repair else []), timeout=120)
    if done.returncode not in (0, 1):
        return f"n/a (exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:60]})"
    return json.loads(done.stdout)


def _fsck_api(location: StoreLocation, repair: bool) -> Any:
    try:
        from ade_platform.store.fsck import fsck
    except ImportError:
        return "n/a (no fsck)"
    return [f.to_dict() for f in fsck(location, repair=repair)]


def _reads(reader: StoreReader, asset: str, good: str) -> dict[str, Any]:
    """What a reader shows of an asset whose writer was killed: the versions it lists beyond the good one, the
    ones that fail to read when something (a check, a sensor, a history) walks the list, and the latest."""
    listed = reader.versions(asset)
    failing = []
    for version in listed:
        try:
            reader.get(asset, version)
        except Exception as exc:
            failing.append(f"{version[-8:]}: {type(exc).__name__}")
    return {
        "half-written versions listed by StoreReader.versions": len([v for v in listed if v != good]),
        "listed versions that fail to read": failing or 0,
        "latest is the previous good version": reader.latest(asset).version == good,
    }


# ---- 1. a publish killed half-way ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["local", "fsspec", "s3"])
def test_a_publish_killed_mid_write_is_never_read_and_is_cleaned_up(
    mode: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ade"
    if mode == "s3":
        import boto3

        location: StoreLocation = request.getfixturevalue("s3_root")
        endpoint = location.s3.endpoint_url or ""
        bucket, prefix = location.url.removeprefix("s3://").split("/", 1)
        where: Any = (boto3.client("s3", endpoint_url=endpoint, **_creds()), bucket, prefix)
        url = location.url
    else:
        location, endpoint = StoreLocation(str(home / "store")), ""
        where = url = str(home / "store")
    good = StoreWriter(location).publish(ASSET, {"v": 1}).version

    left = _kill_mid_publish(mode, url, where, ASSET, endpoint)
    measures: dict[str, Any] = {"uncommitted entries left by the kill": len(left)}
    measures.update(_reads(StoreReader(location), ASSET, good))
    report = _fsck_local(home, False) if mode != "s3" else _fsck_api(location, False)
    reported = [f for f in report if f["problem"] == "leftover"] if isinstance(report, list) else report
    measures["reported by ade store fsck"] = len(reported) if isinstance(reported, list) else reported
    newer = StoreWriter(location).publish(ASSET, {"v": 3}).version
    measures["uncommitted entries after the next publish"] = len(_raw_uncommitted(mode, where, ASSET))
    measures["latest after the next publish is it"] = StoreReader(location).latest(ASSET).version == newer

    # a second killed publish, cleaned up by `ade store fsck --repair` with no publish in between
    _kill_mid_publish(mode, url, where, ASSET, endpoint)
    repaired = _fsck_local(home, True) if mode != "s3" else _fsck_api(location, True)
    removed = [f for f in repaired if f["repaired"]] if isinstance(repaired, list) else repaired
    measures["removed by ade store fsck --repair"] = len(removed) if isinstance(removed, list) else removed
    measures["uncommitted entries after fsck --repair"] = len(_raw_uncommitted(mode, where, ASSET))
    _show(capsys, f"publish killed mid-write ({mode})", measures)

    assert measures["uncommitted entries left by the kill"] == 1
    assert measures["half-written versions listed by StoreReader.versions"] == 0
    assert measures["listed versions that fail to read"] == 0
    assert measures["latest is the previous good version"] is True
    assert measures["reported by ade store fsck"] == 1
    assert measures["uncommitted entries after the next publish"] == 0
    assert measures["latest after the next publish is it"] is True
    assert measures["removed by ade store fsck --repair"] == 1
    assert measures["uncommitted entries after fsck --repair"] == 0


# ---- the demo, copied: checks, sensors, MCP tools and `ade status` over a damaged store ---------------------
def copy_demo(demo: Settings, home: Path) -> Settings:
    """The demo's store and DuckDB file under a new ADE_HOME (dirs 0755: a `nobody` gateway may read them)."""
    # without what earlier tests' live calls observed on the shared demo store
    shutil.copytree(Path(demo.store_root.url), home / "store", ignore=shutil.ignore_patterns(".observations"))
    shutil.copytree(demo.home / "warehouse", home / "warehouse")
    return settings_for(home)


@pytest.fixture
def demo_copy(demo_settings: Settings) -> Iterator[Settings]:
    base = Path(tempfile.mkdtemp(prefix="ade-faults-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        yield copy_demo(demo_settings, base / "ade")
    finally:
        for path in base.rglob("*"):  # a read-only store, made writable again to be removed
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def _server(settings: Settings) -> Any:
    from ade_platform.live import LiveRunner
    from mcp_bridge.context import BridgeContext
    from mcp_bridge.server import build_server

    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(settings.home / "dagster")  # an instance of its own, not the demo's
    return build_server(settings, ctx=ctx)


def test_a_half_written_schema_version_breaks_no_check_sensor_or_trace(
    demo_copy: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding: a version folder a killed fsspec/object-store writer left (files, no provenance.json) made
    the PII check and sensor fail and lineage_trace report a newer schema than the graph was built from."""
    from dagster import build_sensor_context

    from ade_platform.defs.warehouse.checks import pii_findings
    from ade_platform.defs.warehouse.sensors import pii_sensor

    settings = demo_copy
    store = Path(settings.store_root.url)
    asset = "warehouse_schema_demo"
    trace_args = {"start_kind": "dbt_node", "start": "customers", "direction": "upstream"}
    ok, before = call_tool(_server(settings), "lineage_trace", trace_args)
    assert ok, before
    already = asset in (before["provenance"].get("stale_reason") or "")
    left = _kill_mid_publish("fsspec", str(store), store, asset)
    reader = StoreReader(settings.store_root)
    measures: dict[str, Any] = {"uncommitted entries left by the kill": len(left)}
    try:
        pii_findings(reader, "demo", settings)
        measures["PII check"] = "ok"
    except Exception as exc:
        measures["PII check"] = f"fails: {type(exc).__name__}"
    try:
        result = pii_sensor("demo", settings)(build_sensor_context(cursor=None))
        measures["PII sensor tick"] = "ok" if result is not None else "ok (nothing)"
    except Exception as exc:
        measures["PII sensor tick"] = f"fails: {type(exc).__name__}"
    ok, trace = call_tool(_server(settings), "lineage_trace", trace_args)
    reason = (trace.get("provenance") or {}).get("stale_reason") or "" if ok else str(trace)
    measures["lineage_trace says a newer schema exists"] = asset in reason
    # the next materialization of the schema (the same tables again): its check compares it with the one before
    good = reader.latest(asset)
    files = {n: good.file(n) for n in good.provenance.files}
    StoreWriter(settings.store_root).publish(asset, files=files, source=good.provenance.source)
    try:
        pii_findings(StoreReader(settings.store_root), "demo", settings)
        measures["PII check of the next materialization"] = "ok"
    except Exception as exc:
        measures["PII check of the next materialization"] = f"fails: {type(exc).__name__}"
    _show(capsys, "half-written schema snapshot (demo copy)", measures)

    assert measures["uncommitted entries left by the kill"] == 1
    assert measures["PII check"] == "ok"
    assert measures["PII sensor tick"].startswith("ok")
    assert measures["PII check of the next materialization"] == "ok"
    assert not already, before["provenance"]  # the copy's graph was built from the newest schema snapshot
    assert ok and measures["lineage_trace says a newer schema exists"] is False, reason


def test_a_corrupt_latest_snapshot_is_reported_falls_back_and_breaks_no_other_tool(
    demo_copy: Settings, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    settings = demo_copy
    asset = "dbt_lineage_index"
    reader = StoreReader(settings.store_root)
    good = reader.latest(asset)
    # a second version of the same content, then its data garbled the way a bad disk or a torn copy leaves it
    bad = StoreWriter(settings.store_root).publish(
        asset, files={n: good.file(n) for n in good.provenance.files}, source=good.provenance.source
    )
    data = Path(settings.store_root.url) / asset / "versions" / bad.version / "data.json"
    with data.open("r+b") as fh:
        fh.truncate(data.stat().st_size // 2)

    measures: dict[str, Any] = {}
    status = _cli(settings.home, "status", "--json")
    rows = {r["asset"]: r for r in json.loads(status.stdout)} if status.returncode == 0 else {}
    row = rows.get(asset) or {}
    measures["ade status says the snapshot is corrupt"] = "corrupt" in json.dumps(row)
    caplog.set_level("WARNING", logger="ade.store")
    server = _server(settings)
    (ok_failed, failed), (ok_lineage, lineage) = call_tools(
        server,
        [
            ("dbt_get_failed_models", {}),
            ("dbt_get_lineage", {"node_id": "stg_orders", "direction": "downstream", "depth": 1}),
        ],
    )
    measures["dbt_get_failed_models (its own asset intact)"] = (
        "ok" if ok_failed else failed.get("code", failed)
    )
    measures["dbt_get_lineage (reads the corrupt asset)"] = (
        "ok" if ok_lineage else lineage.get("code", lineage)
    )
    prov = lineage.get("provenance") or {} if ok_lineage else {}
    measures["answer from the previous good version"] = prov.get("version") == good.version
    measures["answer stale, saying why"] = bool(prov.get("stale")) and "corrupt" in (
        prov.get("stale_reason") or ""
    )
    lines = [r for r in caplog.records if "snapshot_corrupt" in r.getMessage()]
    measures["log lines with the code (no traceback)"] = (
        f"{len(lines)}, traceback: {any(r.exc_info for r in lines)}" if lines else 0
    )
    _show(capsys, "corrupt latest snapshot (dbt_lineage_index truncated)", measures)

    assert status.returncode == 0, status.stderr[-2000:]
    assert measures["ade status says the snapshot is corrupt"] is True, row
    assert row["stale"] is True and row["snapshot_problem"].startswith("snapshot_corrupt")
    assert measures["dbt_get_failed_models (its own asset intact)"] == "ok", failed
    assert measures["dbt_get_lineage (reads the corrupt asset)"] == "ok", lineage
    assert measures["answer from the previous good version"] is True
    assert measures["answer stale, saying why"] is True, prov
    assert lines and not any(r.exc_info for r in lines)
    with pytest.raises(CorruptSnapshot):  # the corrupt version itself is never read as if it were good
        reader.get(asset, bad.version)


# ---- 3. a store the gateway may not write --------------------------------------------------------------------
def _without_write_permission(home: Path) -> tuple[list[str], Any, str]:
    """How to start a gateway that the permissions of a read-only store hold back: this user when it is not
    root; as root, `nobody` (when it can run this interpreter: not when the interpreter lives under /root), else
    root without the capabilities that let it ignore permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, with
    setpriv). Returns the command prefix, a preexec function and who that is; skips when none is possible."""
    if os.geteuid() != 0:
        return [], None, "this user"
    import pwd

    try:
        who = pwd.getpwnam("nobody")
    except KeyError:
        who = None

    def drop() -> None:
        os.setgroups([])
        os.setgid(who.pw_gid)  # type: ignore[union-attr]
        os.setuid(who.pw_uid)  # type: ignore[union-attr]

    if who is not None:
        try:
            subprocess.run([sys.executable, "-c", "pass"], preexec_fn=drop, check=True, capture_output=True)
            for path in [home, *home.rglob("*")]:
                if not path.is_relative_to(home / "store"):
                    os.chown(path, who.pw_uid, who.pw_gid)
            return [], drop, "nobody"
        except (OSError, subprocess.CalledProcessError):
            pass  # nobody may not run this interpreter
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip(
            "root, and neither `nobody` can run this interpreter nor setpriv is there to drop CAP_DAC_*"
        )
    caps = "-dac_override,-dac_read_search"
    prefix = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop CAP_DAC_*: {probe.stderr.decode()[-200:]}")
    return prefix, None, "root without CAP_DAC_OVERRIDE"


def test_observations_a_read_only_store_cannot_keep_are_said_in_the_answer_and_logged_with_a_code(
    demo_copy: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gateway runs as a user who may read the store but not write it (root ignores permissions, so a root
    test runs it as `nobody`): its live answers say their observations were not kept, and its log says why in
    one line with a code."""
    from fastmcp import Client

    from tests.processes import free_port, stop, wait_for_http

    settings = demo_copy
    home = settings.home
    prefix, preexec, who = _without_write_permission(home)
    for path in [home / "store", *(home / "store").rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)  # readable by all, writable by no one
    port = free_port()
    log = home.parent / "gateway.log"
    env = {**os.environ, "ADE_HOME": str(home), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml"), "HOME": str(home)}
    env.pop("DAGSTER_HOME", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*prefix, ADE, "mcp", "--transport", "http", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec,
            cwd=home,
        )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for_http(url, proc, timeout=180)

        async def ask() -> Any:
            async with Client(url) as client:
                args = {"schema_name": "main", "table_name": "orders"}
                return (await client.call_tool("warehouse_get_schema", args)).structured_content

        import asyncio

        answers = [asyncio.run(ask()) for _ in range(2)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "store_read_only" not in log.read_text(errors="replace"):
            time.sleep(0.2)
    finally:
        stop(proc)
    text = log.read_text(errors="replace")
    coded = [line for line in text.splitlines() if "store_read_only" in line]
    kept = [a["provenance"].get("observations_not_kept") for a in answers]
    measures = {
        "live answers that say their observations were not kept": f"{sum(1 for k in kept if k)} of {len(kept)}",
        "their code": sorted({k for k in kept if k}) or "-",
        "log lines with the code": len(coded),
        "tracebacks in the log": text.count("Traceback"),
        "observations written": len(list((home / "store" / ".observations").rglob("*.json")))
        if (home / "store" / ".observations").exists()
        else 0,
    }
    _show(capsys, f"read-only store (gateway as {who})", measures)

    assert all(a["provenance"]["source"] == "live" for a in answers), answers
    assert kept == ["store_read_only", "store_read_only"], answers
    assert measures["log lines with the code"] >= 1, text[-3000:]
    assert measures["tracebacks in the log"] == 0, text[-3000:]
