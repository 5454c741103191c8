"""GET /v1/state speaks one time rule (issue 12): every ISO string is local time in her zone with its offset."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from jsonschema import Draft202012Validator

from daemon.api import validation
from engine.store import life as store
from tests.api_support import ApiHarness


def _schema() -> Draft202012Validator:
    doc = validation.document()
    schema = {"$ref": "#/components/schemas/StateResponse", "components": doc["components"]}
    return Draft202012Validator(schema)


@pytest.mark.parametrize("tz", ["Asia/Shanghai", "America/New_York"])
async def test_state_times_are_local_with_offset_in_her_zone(tmp_path: Path, tz: str) -> None:
    harness = ApiHarness(tmp_path)
    harness.settings = dataclasses.replace(harness.settings, life=dataclasses.replace(harness.settings.life, tz=tz))
    await harness.start()
    try:
        now = harness.clock.now()
        # She is doing something (written as the life engine writes it), so activity times exist.
        await harness.db(lambda c: store.start_activity(c, kind="reading", label="看书", started_at=now - 600.0,
                                                        expected_end=now + 1800.0, why="curious", next_kind=None,
                                                        detail={}))
        status, state = await harness.call("GET", "/v1/state")
    finally:
        await harness.stop()
    assert status == 200
    assert list(_schema().iter_errors(state)) == []
    assert state["tz"] == tz
    now_local = datetime.fromisoformat(state["now_iso"])
    assert now_local.timestamp() == pytest.approx(state["now"], abs=1.0)
    expected = datetime.fromtimestamp(state["now"], ZoneInfo(tz)).utcoffset()
    assert now_local.utcoffset() == expected and not state["now_iso"].endswith("Z")
    activity = state["activity"]
    assert activity is not None
    for key in ("since", "until"):
        value = activity[key]
        parsed = datetime.fromisoformat(value)
        assert parsed.utcoffset() == datetime.fromtimestamp(parsed.timestamp(), ZoneInfo(tz)).utcoffset(), value
    assert datetime.fromisoformat(activity["since"]) <= now_local < datetime.fromisoformat(activity["until"])


def test_the_contract_rejects_a_utc_or_bare_time_in_state() -> None:
    ok = {"now": 0.0, "now_iso": "2026-12-01T20:15:00+08:00", "tz": "Asia/Shanghai",
          "mood": {"v": 0.0, "a": 0.0, "d": 0.0, "e": 0.5, "label": ""}, "energy": 0.5,
          "activity": {"kind": "reading", "label": "看书", "since": "2026-12-01T20:00:00+08:00",
                       "until": None, "why": "routine", "next": None},
          "controls": {}, "counts": {}, "daemon": {}}
    validator = _schema()
    assert list(validator.iter_errors(ok)) == []
    for path, bad in ((("now_iso",), "2026-12-01T12:15:00Z"), (("now_iso",), "2026-12-01T20:15:00"),
                      (("activity", "since"), "2026-12-01T12:00:00Z")):
        broken = {**ok, "activity": dict(ok["activity"])}
        target = broken if len(path) == 1 else broken["activity"]
        target[path[-1]] = bad
        assert list(validator.iter_errors(broken)), (path, bad)
    missing = {k: v for k, v in ok.items() if k != "tz"}
    assert list(validator.iter_errors(missing))
