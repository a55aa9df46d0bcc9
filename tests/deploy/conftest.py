"""Real servers for the deployment tests: moto's standalone S3-compatible server (PyPI) and PostgreSQL (Debian's
packages, started with initdb/pg_ctl in a temp data dir, no system service)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ade_platform.emulators.demo import free_port
from ade_platform.store import S3Options, StoreLocation

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "ade-test",
    "AWS_SECRET_ACCESS_KEY": "ade-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 for the session (state in memory)."""
    port = free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **S3_ENV},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=2)
            break
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("moto's S3 server did not start")
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def s3_root(s3_endpoint: str) -> StoreLocation:
    """A fresh bucket and prefix per test, with the options to reach it."""
    import boto3

    bucket = f"ade-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, **_creds()).create_bucket(Bucket=bucket)
    return StoreLocation(f"s3://{bucket}/store", s3_options(s3_endpoint))


def _creds() -> dict[str, str]:
    return {
        "aws_access_key_id": S3_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": S3_ENV["AWS_SECRET_ACCESS_KEY"],
        "region_name": S3_ENV["AWS_DEFAULT_REGION"],
    }


def s3_options(endpoint: str) -> S3Options:
    return S3Options(
        endpoint_url=endpoint,
        region=S3_ENV["AWS_DEFAULT_REGION"],
        access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
        secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
    )


def _pg_bin() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 in a temp data dir (run as the `postgres` user when we are root)."""
    pg = _pg_bin()
    if pg is None:
        pytest.skip("PostgreSQL is not installed (`.ci/run` installs Debian's postgresql)")
    # Not under pytest's tmp dir: that is private to root, and postgres refuses to run as root.
    base = Path(tempfile.mkdtemp(prefix="ade-pg-"))
    base.chmod(0o755)
    data = base / "data"
    data.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*as_user, str(pg / "initdb"), "-D", str(data), "-A", "trust", "-U", "ade"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [*as_user, str(pg / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-w", "-t", "60", "start",
         "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {data}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    try:
        subprocess.run(
            [str(pg / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "ade", "dagster"],
            check=True,
            capture_output=True,
        )
        yield f"postgresql://ade@127.0.0.1:{port}/dagster"
    finally:
        subprocess.run(
            [*as_user, str(pg / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True
        )
