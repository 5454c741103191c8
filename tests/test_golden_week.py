"""国庆 and the minor festivals lived (issue 24 item 4): the 2025 golden week is a visit home or a trip, lived over
days (the train there, days there, the train back), with no studio in the holiday, for both charts and for a
chart whose year is a trip; 腊八 is one act (腊八粥) and named once, not a prefix on many sentences."""

from __future__ import annotations

import datetime as dt
import tempfile
from functools import cache
from pathlib import Path

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.life import trip as trip_model
from engine.life.catalogue import catalogue
from engine.life.grammar import grammar
from engine.life.record import seed_key
from engine.settings import Settings
from engine.store import connect

S = Settings()
CHARTS = {"A": "1990-08-15 08:30", "B": "1985-12-01 22:10", "trip": "1990-08-15 00:30"}
WEEK = ("2025-10-01", "2025-10-09")   # chinese-calendar: 10-01 .. 10-08 off


@cache
def run(chart: str) -> tuple[list[tuple[str, str]], str]:
    """Her golden week's sentences, and her seed key (from the kept file, as the daemon reads it)."""
    start = parse_start("2025-09-30T04:00", S.life.tz)
    with tempfile.TemporaryDirectory(prefix="anima-gw-") as tmp:
        kept = Path(tmp) / "run.db"
        report = simulate(S, days=10, start=start, birth=(CHARTS[chart], "Asia/Shanghai", 2), name="小安",
                          keep=str(kept))
        conn = connect(kept)
        try:
            key = seed_key(conn)
        finally:
            conn.close()
    return [(e["ts"], e["text"]) for e in report["life_events"] if WEEK[0] <= e["ts"][:10] < WEEK[1]], key


def golden_week(chart: str) -> list[tuple[str, str]]:
    return run(chart)[0]


def test_the_2025_golden_week_runs_from_the_first_to_the_eighth() -> None:
    assert trip_model.golden_week(2025) == (dt.date(2025, 10, 1), dt.date(2025, 10, 8))


def test_companions_spend_it_differently_and_never_travel_to_their_own_city() -> None:
    seen = [trip_model.away_in(f"k{i}", 2025, "杭州") for i in range(60)]
    assert all(a is not None and a.back == dt.date(2025, 10, 7) for a in seen)
    hows = [a.how for a in seen if a is not None]
    assert 15 <= hows.count("trip") <= 45
    cities = {a.trip.city for a in seen if a is not None and a.trip is not None}
    assert len(cities) >= 4 and "杭州" not in cities
    assert trip_model.away_on("k1", dt.date(2025, 10, 8), "杭州") is None   # the last day off is at home


def test_trip_places_are_no_place_of_her_everyday_life() -> None:
    everyday = {spec.place for spec in catalogue().values()} | set(grammar().words.get("spot", ()))
    spots = {s for t in trip_model.trips() for s in t.spots}
    assert not spots & everyday


@pytest.mark.parametrize("chart", ["A", "B", "trip"])
def test_the_golden_week_is_lived_over_days_away_and_without_the_studio(chart) -> None:
    said = golden_week(chart)
    text = "".join(t for _, t in said)
    assert "工作室" not in text and "去上班" not in text and "下班" not in text
    there = [ts for ts, t in said if "高铁" in t and ("回老家" in t or "到" in t or "去" in t)]
    back = [ts for ts, t in said if "高铁" in t and ("回城" in t or "回来" in t or "回家" in t)]
    assert there and there[0][:10] == "2025-10-01"
    assert back and back[-1][:10] == "2025-10-07"
    middle = [t for ts, t in said if "2025-10-02" <= ts[:10] <= "2025-10-06"]
    at_parents = sum(1 for t in middle if "爸妈" in t or "妈妈" in t or "爸爸" in t)
    sights = sum(1 for t in middle if any(s in t for tr in trip_model.trips() for s in tr.spots))
    assert at_parents >= 5 or sights >= 5
    assert not [t for t in middle if "给自己做了" in t or "楼下早餐店" in t]


def test_a_trip_goes_somewhere_and_eats_there() -> None:
    said, key = run("trip")
    away = trip_model.away_in(key, 2025, S.life.city)
    assert away is not None and away.trip is not None
    text = "".join(t for _, t in said)
    assert away.trip.city in text
    assert sum(1 for s in away.trip.spots if s in text) >= 3
    assert any(f in text for f in away.trip.food)
    assert "沙发" not in "".join(t for ts, t in said if "2025-10-02" <= ts[:10] <= "2025-10-06")


@cache
def laba(chart: str) -> list[str]:
    start = parse_start("2025-01-06T04:00", S.life.tz)
    report = simulate(S, days=2, start=start, birth=(CHARTS[chart], "Asia/Shanghai", 2), name="小安")
    return [e["text"] for e in report["life_events"] if e["ts"][:10] == "2025-01-07"]


@pytest.mark.parametrize("chart", ["A", "B"])
def test_laba_is_one_act_named_once_not_a_prefix(chart) -> None:
    said = laba(chart)
    named = [t for t in said if "腊八" in t]
    assert len(named) == 1 and "腊八粥" in named[0]
    assert not [t for t in said if t.startswith("今天是")]


MINOR = {"腊八节": ("腊八", "腊八粥"), "元宵节": ("元宵", "汤圆"), "端午节": ("端午", "粽"), "七夕节": ("七夕", "七夕"),
         "重阳节": ("重阳", "重阳"), "冬至": ("冬至", "冬至")}


@cache
def year(chart: str) -> dict[str, list[str]]:
    start = parse_start("2025-01-06T04:00", S.life.tz)
    report = simulate(S, days=365, start=start, birth=(CHARTS[chart], "Asia/Shanghai", 2), name="小安",
                      step_s=3600.0)
    out: dict[str, list[str]] = {}
    for e in report["life_events"]:
        out.setdefault(e["ts"][:10], []).append(e["text"])
    return out


@pytest.mark.parametrize("chart", ["A", "B"])
def test_minor_festivals_are_one_act_named_at_most_once(chart) -> None:
    days = year(chart)
    from engine.life.calendar import festival_on

    lived = 0
    for when in (dt.date(2025, 1, 6) + dt.timedelta(days=i) for i in range(365)):
        name = festival_on(when)
        if name not in MINOR:
            continue
        word, act = MINOR[name]
        said = [t for t in days.get(when.isoformat(), []) if word in t]
        assert len(said) <= 1, (when, said)
        lived += bool(said and act in said[0])
    assert lived >= 4   # most are lived (a dinner out with a friend may take the place of the act)
