"""`anima life` places each life event under its own activity (issue 12 acceptance 6), not the next one."""

from __future__ import annotations

import json
from pathlib import Path

from daemon.cli import main
from daemon.cli.cmd_simulate import parse_start
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store import life as store

S = Settings()
T0 = parse_start("2025-03-03T08:00", S.life.tz)   # a past morning in her zone, so --day shows it whole


def _activity(conn, kind: str, label: str, t0: float, t1: float, detail: dict | None = None) -> int:
    aid = store.start_activity(conn, kind=kind, label=label, started_at=t0, expected_end=t1, why="routine",
                               next_kind=None, detail=detail or {})
    store.end_activity(conn, aid, "done", t1, detail or {})
    return aid


def _owner_of_each_event(text: str) -> dict[str, str]:
    """Event text -> the activity line above it in the printed day (indented event lines follow their activity)."""
    owner: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("      "):
            owner[line.split("] ", 1)[1]] = current
        elif line.startswith("  ") and "] " not in line:
            current = line.split("  ")[2].split("（")[0]
        else:
            current = ""   # a loose event line: nothing may be read as placed under it
    return owner


def test_each_completion_is_printed_under_the_activity_it_completes(tmp_path: Path, capsys) -> None:
    db = tmp_path / "anima.db"
    conn = connect(db)
    migrate(conn, now=T0)
    h = 3600.0
    read = _activity(conn, "reading", "看书", T0, T0 + h)
    walk = _activity(conn, "walk", "散步", T0 + h, T0 + 2 * h)
    cook = _activity(conn, "cook", "做饭", T0 + 2 * h, T0 + 3 * h)
    # Each completion is written at its activity's end, the very instant the next activity starts.
    store.add_life_event(conn, "看完了第三章", T0 + h, origin="life", kind="completed", activity_id=read)
    store.add_life_event(conn, "河边走了一圈", T0 + 2 * h, origin="life", kind="completed", activity_id=walk)
    store.add_life_event(conn, "小时候的事", T0 + 2 * h, origin="backstory", kind="backstory")
    conn.commit()
    conn.close()

    assert main(["--db", str(db), "life", "--day", "2025-03-03"]) == 0
    out = capsys.readouterr().out
    owner = _owner_of_each_event(out)
    assert owner == {"看完了第三章": "看书", "河边走了一圈": "散步"}, out
    # The loose backstory event stands on its own line at its time, before the activity that starts then.
    lines = out.splitlines()
    loose = next(i for i, line in enumerate(lines) if "小时候的事" in line)
    assert lines[loose].startswith("  ") and not lines[loose].startswith("      ")
    assert "做饭" in lines[loose + 1]

    assert main(["--db", str(db), "life", "--day", "2025-03-03", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    by_text = {e["text"]: e["activity_id"] for e in view["life_events"]}
    assert by_text == {"看完了第三章": read, "河边走了一圈": walk, "小时候的事": None}
    assert cook in {a["id"] for a in view["activities"]}


def test_a_resumption_is_printed_under_the_activity_that_carries_on(tmp_path: Path, capsys) -> None:
    db = tmp_path / "anima.db"
    conn = connect(db)
    migrate(conn, now=T0)
    m = 60.0
    read = _activity(conn, "reading", "看书", T0, T0 + 20 * m)
    _activity(conn, "chat", "聊天", T0 + 20 * m, T0 + 40 * m)
    again = _activity(conn, "reading", "接着看书", T0 + 40 * m, T0 + 70 * m, {"resumed_from": read})
    store.add_life_event(conn, "接着看，还剩半小时", T0 + 40 * m, origin="life", kind="resumed", activity_id=read)
    store.add_life_event(conn, "看完了", T0 + 70 * m, origin="life", kind="completed", activity_id=again)
    conn.commit()
    conn.close()
    assert main(["--db", str(db), "life", "--day", "2025-03-03"]) == 0
    out = capsys.readouterr().out
    assert _owner_of_each_event(out) == {"接着看，还剩半小时": "接着看书", "看完了": "接着看书"}, out


def test_a_lived_day_prints_no_event_under_a_foreign_activity(tmp_path: Path, capsys) -> None:
    """On a simulated, kept day every event with an activity sits under that activity's line."""
    kept = tmp_path / "sim.db"
    assert main(["--db", str(tmp_path / "none.db"), "simulate", "--days", "1", "--keep", str(kept), "--json"]) == 0
    capsys.readouterr()
    assert main(["--db", str(kept), "life", "--day", "2025-01-06", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    labels = {a["id"]: a["label"] for a in view["activities"]}
    placed = [e for e in view["life_events"] if e["activity_id"] in labels]
    assert len(placed) > 5
    assert main(["--db", str(kept), "life", "--day", "2025-01-06"]) == 0
    out = capsys.readouterr().out
    owner = _owner_of_each_event(out)
    for e in placed:
        assert owner[e["text"]] == labels[e["activity_id"]], e
