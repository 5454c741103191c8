"""GET /metrics is Prometheus text a real parser reads: requests by route and status, recall latency, beats,
pending vectors, jobs by state, storage faults; per companion in directory mode (issue 25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine.jobs import enqueue
from engine.settings import ApiSettings
from tests.api_support import ApiHarness, DirectoryHarness, turn


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{sample name: [(labels, value)]} as prometheus_client's own parser reads the exposition."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(found: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    matching = [v for lab, v in found.get(name, []) if all(lab.get(k) == want for k, want in labels.items())]
    assert len(matching) == 1, (name, labels, found.get(name))
    return matching[0]


async def scrape(session: aiohttp.ClientSession, base: str = "http://anima",
                 headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    async with session.get(base + "/metrics", headers=headers) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), (await resp.read()).decode()


async def test_metrics_count_requests_by_route_and_read_her_figures(tmp_path: Path) -> None:
    api = await ApiHarness(tmp_path).start()
    try:
        assert api.session is not None
        for n in range(3):
            assert (await api.call("POST", "/v1/turns", turn(f"m{n}", f"今天去了西湖 {n}", "好呀")))[0] == 200
        assert (await api.call("POST", "/v1/turns", {"turn_id": "bad"}))[0] == 400
        status, _ = await api.call("POST", "/v1/context", {"query": "西湖"})
        assert status == 200
        await api.db(lambda conn: enqueue(conn, "consolidate", {}, api.clock.now()))
        await api.beat(15)

        status, content_type, text = await scrape(api.session)
        assert status == 200 and content_type.startswith("text/plain")
        found = samples(text)
        assert value(found, "anima_http_requests_total", op="recordTurn", status="200") == 3
        assert value(found, "anima_http_requests_total", op="recordTurn", status="400") == 1
        assert value(found, "anima_recall_seconds_count") == 1
        assert value(found, "anima_recall_seconds_sum") > 0
        assert value(found, "anima_companion_up", companion="anima") == 1
        assert value(found, "anima_jobs", companion="anima", state="queued") >= 1
        assert value(found, "anima_vectors_pending", companion="anima") >= 0
        assert value(found, "anima_storage_fault", companion="anima") == 0
        assert value(found, "anima_heartbeat_last_timestamp_seconds", companion="anima") == api.clock.now()
        # The scrape itself is counted once it was written: the next one sees it.
        found = samples((await scrape(api.session))[2])
        assert value(found, "anima_http_requests_total", op="metrics", status="200") == 1
        assert "今天" not in text and "西湖" not in text  # numbers and names, never chat text
    finally:
        await api.stop()


async def test_directory_mode_labels_each_companion_and_a_faulted_one(tmp_path: Path) -> None:
    many = await DirectoryHarness(tmp_path, ["a1", "b2"]).start()
    try:
        await many.unserve("b2", reason="the file is not a database")
        assert many.session is not None
        status, _, text = await scrape(many.session)
        found = samples(text)
        assert status == 200
        assert value(found, "anima_companion_up", companion="a1") == 1
        assert value(found, "anima_companion_up", companion="b2") == 0
        assert {lab["companion"] for lab, _ in found["anima_heartbeat_age_seconds"]} == {"a1"}
    finally:
        await many.stop()


@pytest.mark.parametrize("token, expected", [(None, 401), ("wrong-token-0123456789", 401), ("listener", 200)])
async def test_metrics_over_tcp_need_the_listener_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        token: str | None, expected: int) -> None:
    from tests.test_api_security import free_port

    monkeypatch.setenv("ANIMA_TEST_TOKEN", "listener-token-0123456789abcdef")
    port = free_port()
    api = await ApiHarness(tmp_path, api=ApiSettings(tcp_host="127.0.0.1", tcp_port=port,
                                                     token_env="ANIMA_TEST_TOKEN")).start()
    try:
        headers: dict[str, Any] = {}
        if token is not None:
            headers["Authorization"] = "Bearer " + ("listener-token-0123456789abcdef" if token == "listener" else token)
        async with aiohttp.ClientSession() as session:
            status, _, _ = await scrape(session, f"http://127.0.0.1:{port}", headers)
        assert status == expected
    finally:
        await api.stop()


async def test_replication_lag_is_reported_for_each_file_the_litestream_config_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica that holds nothing yet has no lag to give: NaN, so a graph shows a gap and an alert can fire."""
    import math

    from daemon.replication import litestream_config, parse_replica_url

    api = await ApiHarness(tmp_path).start()
    try:
        replica = tmp_path / "replica"
        replica.mkdir()
        config = tmp_path / "litestream.yml"
        config.write_text(litestream_config([api.db_path], parse_replica_url(f"file://{replica}")), encoding="utf-8")
        monkeypatch.setenv("ANIMA_LITESTREAM_CONFIG", str(config))
        assert api.session is not None
        found = samples((await scrape(api.session))[2])
        assert math.isnan(value(found, "anima_replication_lag_seconds", companion="anima"))
    finally:
        await api.stop()
