"""`anima simulate --keep/--plot` and the plot for people (issue 12, views): kept runs, long-run means, graceful fonts."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from daemon.cli import main
from daemon.cli.cmd_simulate import parse_start, simulate
from engine.settings import Settings
from engine.store import connect
from engine.store import life as store

S = Settings()
START = parse_start("2025-01-06T04:00", S.life.tz)
BIRTH = ("1990-08-15 08:30", "Asia/Shanghai", 2)
PNG = b"\x89PNG\r\n\x1a\n"


def test_keep_writes_the_run_to_a_new_database_that_the_views_read(tmp_path: Path, capsys) -> None:
    kept = tmp_path / "run.db"
    args = ["--db", str(tmp_path / "none.db"), "simulate", "--days", "2", "--json"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--keep", str(kept)]) == 0
    assert capsys.readouterr().out == plain          # keeping the file changes nothing in the report
    report = json.loads(plain)
    conn = connect(kept)
    try:
        rows = store.activities(conn, -1e18, 1e18)
        assert [round(r["started_at"], 3) for r in rows][:len(report["timeline"])] == \
            [a["t0"] for a in report["timeline"]]
        assert len(store.life_events(conn, told_only=False)) == len(report["life_events"])
    finally:
        conn.close()
    # A second run never overwrites it: a clear error, exit 2, the file unchanged.
    before = kept.read_bytes()
    assert main([*args, "--keep", str(kept)]) == 2
    assert "exists" in capsys.readouterr().err
    assert kept.read_bytes() == before
    assert main([*args, "--keep", str(tmp_path / "no" / "such" / "dir.db")]) == 2


def test_means_stay_valid_past_the_trace_retention(tmp_path: Path) -> None:
    """Retention counts back from the simulated now; a run longer than it must still have every day's mean."""
    import dataclasses

    short = dataclasses.replace(S, life=dataclasses.replace(S.life, trace_retention_days=2.0))
    kept = tmp_path / "run.db"
    report = simulate(short, days=5, start=START, birth=BIRTH, name="小安", keep=str(kept))
    assert all(d["mood_v_mean"] is not None for d in report["daily"]), [d["mood_v_mean"] for d in report["daily"]]
    assert report == simulate(S, days=5, start=START, birth=BIRTH, name="小安")   # the same life, the same means
    conn = connect(kept)
    try:
        assert store.trace(conn, START, START + 86400.0)               # the kept file still has day one
    finally:
        conn.close()


def test_plot_of_a_run_is_written(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "run.png"
    assert main(["--db", str(tmp_path / "none.db"), "simulate", "--days", "1", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG


def _day(t0: float) -> tuple[list[dict], list[dict]]:
    points = [{"ts": t0 + i * 600.0, "v": 0.1, "a": -0.1, "d": 0.05, "e": min(1.0, i / 100)} for i in range(144)]
    acts = [{"kind": "sleep", "started_at": t0, "ended_at": t0 + 7 * 3600, "expected_end": None},
            {"kind": "breakfast", "started_at": t0 + 7 * 3600, "ended_at": t0 + 8 * 3600, "expected_end": None},
            {"kind": "chat", "started_at": t0 + 8 * 3600, "ended_at": t0 + 9 * 3600, "expected_end": None},
            {"kind": "a_kind_no_catalogue_knows", "started_at": t0 + 9 * 3600, "ended_at": None,
             "expected_end": t0 + 10 * 3600}]
    return points, acts


def test_plot_groups_activities_by_category_and_marks_chats_and_told_events(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from daemon.plot import draw_life

    points, acts = _day(START)
    shown = draw_life(str(tmp_path / "p.png"), points, acts, [{"ts": START + 8.5 * 3600}], S.life.tz, name="小安")
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG
    assert shown["categories"] == ["sleep", "meal", "chat", "a_kind_no_catalogue_knows"]  # one row per category
    assert shown["chats"] == 1 and shown["told"] == 1


def test_plot_without_a_cjk_font_says_so_in_one_line_and_still_draws(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    import io

    import daemon.plot as plot

    monkeypatch.setattr(plot, "cjk_font", lambda: None)
    points, acts = _day(START)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shown = plot.draw_life(str(tmp_path / "p.png"), points, acts, [], S.life.tz, name="小安")
    assert shown["font"] is None
    assert not [w for w in caught if "CJK" in str(w.message)]  # issue 25: a warning printed a source line
    said = io.StringIO()
    plot.note_missing_font(shown, said)
    assert said.getvalue().count("\n") == 1 and said.getvalue().startswith("anima: note: no CJK font")
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG


def test_a_long_run_is_drawn_per_day_with_hours_summing_to_the_day(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    import daemon.plot as plot

    points, acts = [], []
    for day in range(40):
        p, a = _day(START + day * 86400.0)
        points += p
        acts += a[:3]
    drawn: list = []
    real = plot._draw_daily
    monkeypatch.setattr(plot, "_draw_daily", lambda *args: (drawn.append(args), real(*args)))
    shown = plot.draw_life(str(tmp_path / "p.png"), points, acts, [], S.life.tz)
    assert drawn and shown["points"] == len(points)      # 40 days: the daily view, not 5,760 raw points
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG


def test_hours_per_day_split_at_local_midnight_and_sum_to_the_day() -> None:
    pytest.importorskip("matplotlib")
    from datetime import date
    from zoneinfo import ZoneInfo

    from daemon.plot import hours_per_day

    midnight = parse_start("2025-03-03T00:00", "Asia/Shanghai")
    h = 3600.0
    spans = {"sleep": [(midnight - 2 * h, midnight + 7 * h), (midnight + 22 * h, midnight + 31 * h)],
             "rest": [(midnight + 7 * h, midnight + 22 * h)]}
    days = [date(2025, 3, 3), date(2025, 3, 4)]
    hours = hours_per_day(spans, ["sleep", "rest"], days, ZoneInfo("Asia/Shanghai"))
    assert hours == {"sleep": [9.0, 7.0], "rest": [15.0, 0.0]}
    assert hours["sleep"][0] + hours["rest"][0] == 24.0


def test_mood_reads_a_kept_run_with_until(tmp_path: Path, capsys) -> None:
    kept = tmp_path / "run.db"
    assert main(["--db", str(tmp_path / "none.db"), "simulate", "--days", "2", "--keep", str(kept), "--json"]) == 0
    capsys.readouterr()
    assert main(["--db", str(kept), "mood", "--days", "1", "--until", "2025-01-07T12:00", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert len(view["points"]) > 100 and view["activities"]
    assert main(["--db", str(kept), "mood", "--until", "noon"]) == 2


def test_plot_without_matplotlib_fails_before_the_run(tmp_path: Path, capsys, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    kept = tmp_path / "run.db"
    code = main(["--db", str(tmp_path / "none.db"), "simulate", "--days", "1", "--keep", str(kept),
                 "--plot", str(tmp_path / "p.png")])
    assert code != 0 and "matplotlib" in capsys.readouterr().err
    assert not kept.exists()        # nothing was run or written
