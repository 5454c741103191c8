"""`anima simulate --chat FILE` (issue 24 item 2, acceptance 3): a conversation played through the POST /v1/turns
use case leaves a mark on her days, measured against the same run without it."""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.errors import InputError
from engine.settings import Settings
from engine.store import connect
from engine.store import life as store
from tests.conftest import run_anima

S = Settings()
TZ = ZoneInfo(S.life.tz)
START = parse_start("2025-01-06T04:00", S.life.tz)
CHARTS = {"A": ("1990-08-15 08:30", "Asia/Shanghai", 2), "B": ("1985-12-01 22:10", "Asia/Shanghai", 2)}
GRIEF = [
    {"ts": "2025-01-08T23:40:00+08:00", "turn_id": "g1", "role": "user", "text": "我外婆今天下午走了…我一直在哭"},
    {"ts": "2025-01-08T23:41:00+08:00", "turn_id": "g1", "role": "companion", "text": "抱抱你，我在这儿陪着你"},
]
NEXT_EVENING = datetime(2025, 1, 9, 20, 0, tzinfo=TZ).timestamp()


def _script(tmp: Path, lines: list[dict]) -> str:
    path = tmp / "chat.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return str(path)


@cache
def _run(chart: str, told: bool, tmp: str) -> tuple[dict, float, int]:
    """(report, valence at 20:00 the next day, chat messages recorded) for one chart, with or without the chat."""
    folder = Path(tmp) / f"{chart}-{told}"
    folder.mkdir()
    kept = folder / "run.db"
    report = simulate(S, days=4, start=START, birth=CHARTS[chart], name="小安", keep=str(kept),
                      chat=_script(folder, GRIEF) if told else None)
    conn = connect(kept, readonly=True)
    try:
        points = store.trace(conn, NEXT_EVENING - 600, NEXT_EVENING + 600)
        messages = conn.execute("SELECT count(*) FROM chat_message").fetchone()[0]
    finally:
        conn.close()
    nearest = min(points, key=lambda p: abs(p["ts"] - NEXT_EVENING))
    return report, float(nearest["v"]), int(messages)


@pytest.fixture(scope="module")
def tmp_runs(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("chat-runs"))


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_a_grief_chat_at_2340_lowers_tomorrow_evening_and_delays_her_sleep(chart, tmp_runs) -> None:
    control, v_control, none = _run(chart, False, tmp_runs)
    grief, v_grief, recorded = _run(chart, True, tmp_runs)
    assert none == 0 and recorded == 2                    # the turn went through the use case of POST /v1/turns
    assert v_grief <= v_control - 0.08                    # valence at 20:00 the next day
    night = {d["day"]: d for d in control["daily"]}["2025-01-08"]
    later = {d["day"]: d for d in grief["daily"]}["2025-01-08"]
    assert later["main_sleep_t0"] - night["main_sleep_t0"] >= 20 * 60   # sleep onset at least 20 min later
    # the same life before the chat: the mark is the chat's, not a different run
    assert [e for e in control["life_events"] if e["ts"] < "2025-01-08T23"] == \
        [e for e in grief["life_events"] if e["ts"] < "2025-01-08T23"]


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_a_sentence_of_the_next_day_refers_to_it_and_the_control_has_none(chart, tmp_runs) -> None:
    control, _, _ = _run(chart, False, tmp_runs)
    grief, _, _ = _run(chart, True, tmp_runs)

    def next_day(report: dict) -> list[str]:
        return [e["text"] for e in report["life_events"] if "2025-01-09T04" <= e["ts"] < "2025-01-10T04"]

    assert any("你家里人走了的事" in text for text in next_day(grief))
    assert not any("你家里人走了的事" in text for text in next_day(control))
    assert not any("外婆" in text for text in next_day(grief))   # her cause, never the user's words


def test_a_turn_outside_the_run_or_a_bad_line_changes_nothing(tmp_path: Path) -> None:
    outside = _script(tmp_path, [{**GRIEF[0], "ts": "2024-12-31T23:40:00+08:00"}])
    with pytest.raises(InputError, match="outside the simulated run"):
        simulate(S, days=2, start=START, birth=CHARTS["A"], name="小安", chat=outside)
    (tmp_path / "bad.jsonl").write_text('{"ts": "2025-01-06T23:40:00+08:00", "turn_id": "x"}\n', encoding="utf-8")
    kept = tmp_path / "kept.db"
    result = run_anima("--db", str(tmp_path / "none.db"), "simulate", "--days", "2", "--chat",
                       str(tmp_path / "bad.jsonl"), "--keep", str(kept))
    assert result.code == 2 and "line 1" in result.err and "missing key 'role'" in result.err
    assert not kept.exists()
