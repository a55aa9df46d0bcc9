"""Observations of live tools in the store: append-only, deduplicated per key, bounded, readable per key."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ade_platform.store import StoreReader, StoreWriter
from ade_platform.store.observations import (
    OBSERVATIONS_DIR,
    latest_observation,
    latest_observations,
    observation_history,
    record_observation,
    table_key,
    tile_key,
)


def test_unchanged_state_is_recorded_once_and_history_is_oldest_first(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    key = tile_key("looker", "1", "3")
    assert record_observation(writer, "bi_tile_health", key, {"status": "ok"}, source="t", observed_at=100.0)
    assert not record_observation(
        writer, "bi_tile_health", key, {"status": "ok"}, source="t", observed_at=101.0
    )
    broken = {"status": "error", "error": 'column "amount" not found'}
    assert record_observation(writer, "bi_tile_health", key, broken, source="t", observed_at=102.0)
    # Key order in the state does not make it a change.
    assert not record_observation(
        writer, "bi_tile_health", key, {"error": broken["error"], "status": "error"}, source="t"
    )
    history = observation_history(reader, "bi_tile_health", key)
    assert [(o.state["status"], o.observed_at) for o in history] == [("ok", 100.0), ("error", 102.0)]
    latest = latest_observation(reader, "bi_tile_health", key)
    assert latest is not None and latest.state == broken and latest.source == "t"
    assert latest.observed_iso == "1970-01-01T00:01:42Z"
    assert observation_history(reader, "bi_tile_health", key, since=101.0) == history[1:]
    assert latest_observation(reader, "bi_tile_health", tile_key("looker", "1", "4")) is None
    # Assets are listed as before: the observations folder is not one.
    assert reader.assets() == []


def test_history_per_key_and_keys_in_total_are_bounded(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    key = table_key("demo", "main", "orders")
    for i in range(12):
        record_observation(writer, "table_schema", key, {"columns": [f"c{i}"]}, source="t", max_per_key=5)
    history = observation_history(reader, "table_schema", key)
    assert [o.state["columns"][0] for o in history] == [f"c{i}" for i in range(7, 12)]
    for i in range(30):
        record_observation(
            writer, "table_schema", table_key("demo", "main", f"t{i}"), {"n": i}, source="t",
            observed_at=1000.0 + i, max_keys=20,
        )  # fmt: skip
    kept = latest_observations(reader, "table_schema")
    assert len(kept) <= 20
    # The least recently observed keys went first; the newest are all there.
    assert {o.key for o in kept} >= {table_key("demo", "main", f"t{i}") for i in range(25, 30)}
    folders = list((tmp_path / OBSERVATIONS_DIR / "table_schema").iterdir())
    assert len([f for f in folders if not f.name.startswith(".")]) == len(kept)


def test_newest_per_key_by_prefix_and_since(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    now = time.time()
    record_observation(writer, "table_schema", "demo:main.orders", {"v": 1}, source="a", observed_at=now - 60)
    record_observation(writer, "table_schema", "demo:main.orders", {"v": 2}, source="b", observed_at=now)
    record_observation(writer, "table_schema", "demo:raw.orders", {"v": 1}, source="a", observed_at=now)
    record_observation(writer, "table_schema", "other:main.x", {"v": 1}, source="a", observed_at=now)
    main = latest_observations(reader, "table_schema", prefix="demo:main.")
    assert [(o.key, o.state) for o in main] == [("demo:main.orders", {"v": 2})]
    assert len(latest_observations(reader, "table_schema", since=now - 1)) == 3
    assert latest_observations(reader, "table_schema", since=now + 10) == []
    # An older observation arriving late joins the history but does not replace the newest state.
    record_observation(
        writer, "table_schema", "demo:main.orders", {"v": 0}, source="c", observed_at=now - 120
    )
    assert latest_observation(reader, "table_schema", "demo:main.orders").state == {"v": 2}  # type: ignore[union-attr]
    assert [o.state["v"] for o in observation_history(reader, "table_schema", "demo:main.orders")] == [
        0,
        1,
        2,
    ]


def test_concurrent_writers_of_one_state_record_it_once(tmp_path: Path) -> None:
    barrier = threading.Barrier(8)
    results: list[bool] = []

    def write() -> None:
        writer = StoreWriter(tmp_path)
        barrier.wait()
        results.append(
            record_observation(writer, "run_status", "airflow:dag/x", {"state": "failed"}, source="t")
        )

    threads = [threading.Thread(target=write) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert len(observation_history(StoreReader(tmp_path), "run_status", "airflow:dag/x")) == 1
