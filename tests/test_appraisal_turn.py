"""A chat turn through engine.inner on a real SQLite file: concern for the user's bad news, bounded, no dominance from hostility."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.appraisal import turn_bound
from engine.companion import create_companion
from engine.inner import appraise_turn, inner_snapshot, mood_params, resume_after_gap
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store.core import get_companion

START = datetime(2025, 3, 3, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()
S = Settings()


@pytest.fixture
def her(tmp_path: Path):
    conn = connect(tmp_path / "anima.db")
    migrate(conn, now=START)
    create_companion(conn, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2,
                     now=START)
    persona = Persona.from_dict(get_companion(conn)["persona"])
    resume_after_gap(conn, S, persona, None, START)
    yield conn, persona
    conn.close()


def test_the_users_bad_news_stirs_her_with_concern_within_the_bound(her) -> None:
    conn, persona = her
    before = inner_snapshot(conn, S, persona, START)["mood"]
    after = appraise_turn(conn, S, persona, "我妈住院了，明天手术", "别怕，我陪着你", None, START)
    (v_up, v_down), (a_up, _), _ = turn_bound(mood_params(S, persona))
    assert after["a"] > before["a"] and after["v"] < before["v"]
    assert before["v"] - after["v"] <= v_down + 1e-3 and after["a"] - before["a"] <= a_up + 1e-3


def test_a_hostile_user_lowers_her_valence_and_does_not_raise_her_dominance(her) -> None:
    conn, persona = her
    before = inner_snapshot(conn, S, persona, START)["mood"]
    after = appraise_turn(conn, S, persona, "滚，你真烦", "……好吧", None, START)
    assert after["v"] < before["v"] and after["d"] <= before["d"]


def test_the_callers_affect_wins_over_the_words(her) -> None:
    conn, persona = her
    before = inner_snapshot(conn, S, persona, START)["mood"]
    after = appraise_turn(conn, S, persona, "我妈住院了", None, {"valence": 0.6}, START)
    assert after["v"] > before["v"] and after["a"] == pytest.approx(before["a"], abs=1e-3)
