"""The 2025 Spring Festival lived at her parents' (issue 24, acceptance 4), for two charts: the train home before
除夕's 年夜饭, at least two of 春晚/红包/守岁/拜年, meals with her parents while she is there, no studio in the
holiday, and the train back."""

from __future__ import annotations

from functools import cache

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.settings import Settings

S = Settings()
CHARTS = {"A": "1990-08-15 08:30", "B": "1985-12-01 22:10"}
HOLIDAY = ("2025-01-28", "2025-02-05")   # 除夕 to the last day off (chinese-calendar: 01-28 .. 02-04)


@cache
def holiday(chart: str) -> list[tuple[str, str]]:
    start = parse_start("2025-01-20T04:00", S.life.tz)
    report = simulate(S, days=18, start=start, birth=(CHARTS[chart], "Asia/Shanghai", 2), name="小安")
    return [(e["ts"], e["text"]) for e in report["life_events"] if HOLIDAY[0] <= e["ts"][:10] < HOLIDAY[1]]


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_the_train_home_comes_before_the_reunion_dinner(chart) -> None:
    said = holiday(chart)
    trip = next(ts for ts, text in said if "高铁" in text and "回老家" in text)
    dinner = next(ts for ts, text in said if "年夜饭" in text or "团圆饭" in text)
    assert trip[:10] == "2025-01-28" and trip < dinner


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_the_new_year_has_its_customs_and_no_studio(chart) -> None:
    text = "".join(t for _, t in holiday(chart))
    assert sum(1 for word in ("春晚", "红包", "守岁", "拜年") if word in text) >= 2
    assert "工作室" not in text and "上班路上" not in text
    assert "回城" in text   # and she goes back


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_meals_at_her_parents_are_theirs_not_her_own_cooking(chart) -> None:
    said = [t for ts, t in holiday(chart) if "2025-01-29" <= ts[:10] <= "2025-02-01"]
    assert not [t for t in said if "给自己做了" in t or "点了" in t or "楼下早餐店" in t]
    assert any("爸妈" in t or "妈妈" in t or "爸爸" in t for t in said)


@cache
def year_of(chart: str) -> list[tuple[str, str]]:
    start = parse_start("2025-03-31T04:00", S.life.tz)
    report = simulate(S, days=200, start=start, birth=(CHARTS[chart], "Asia/Shanghai", 2), name="小安", step_s=900.0)
    return [(e["ts"], e["text"]) for e in report["life_events"]]


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_qingming_and_mid_autumn_are_lived_not_a_sentence_prefix(chart) -> None:
    said = year_of(chart)
    qingming = "".join(t for ts, t in said if ts[:10] == "2025-04-04")
    zhongqiu = "".join(t for ts, t in said if ts[:10] == "2025-10-06" and ts[11:13] >= "12")
    assert "扫" in qingming and "青团" in qingming
    assert "中秋" in zhongqiu and "月饼" in zhongqiu and "月亮" in zhongqiu
    # away from her parents she calls them; in the 2025 golden week she may be at theirs (issue 24 item 4)
    assert "视频" in zhongqiu or "电话" in zhongqiu or "爸妈" in zhongqiu
