"""`anima life`, `anima life add`, `anima simulate`, `anima mood`: operator views, and untold life staying private."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from daemon.cli import main
from engine.companion import create_companion
from engine.control import Switches
from engine.inner import resume_after_gap, step_inner
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store import life as store

S = Settings()


@pytest.fixture
def lived_db(tmp_path: Path) -> tuple[Path, float]:
    """A companion who has lived the last 30 hours (real clock, so the CLI's 'now' is after all of it)."""
    db = tmp_path / "anima.db"
    now = time.time()
    start = now - 30 * 3600
    conn = connect(db)
    migrate(conn, now=start)
    companion = create_companion(conn, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None,
                                 sect=2, now=start)
    persona = Persona.from_dict(companion["persona"])
    resume_after_gap(conn, S, persona, None, start)
    t = start
    while t < now - 60:
        t = min(now - 60, t + 300)
        step_inner(conn, S, persona, t, Switches.defaults())
    conn.close()
    return db, start


def untold_texts(db: Path) -> list[str]:
    conn = connect(db)
    try:
        return [e["text"] for e in store.life_events(conn, told_only=False) if not e["told"]]
    finally:
        conn.close()


def test_life_view_shows_untold_events_marked(lived_db, capsys) -> None:
    db, start = lived_db
    assert main(["--db", str(db), "life", "--since", "1970-01-01T00:00:00+00:00", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["life_events"] and all(e["told"] is False for e in view["life_events"])
    assert view["activities"]
    assert main(["--db", str(db), "life", "--since", "1970-01-01T00:00:00+00:00"]) == 0
    text = capsys.readouterr().out
    assert "[UNTOLD]" in text and "<- now" in text


def test_life_add_untold_backstory(lived_db, capsys) -> None:
    db, _ = lived_db
    assert main(["--db", str(db), "life", "add", "小时候在外婆家养过一只猫", "--ts", "2001-05-01T10:00", "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    conn = connect(db)
    try:
        row = store.get_life_event(conn, added["id"])
        assert row["told"] == 0 and row["origin"] == "backstory"
        assert all(e["id"] != added["id"] for e in store.life_events(conn))  # default view: told only
        assert conn.execute("SELECT count(*) FROM mem_episodic WHERE life_event_id = ?", (added["id"],)).fetchone()[0] == 0
    finally:
        conn.close()


class FakeEmbedder:
    name = "fake"
    dim = 384

    def _vec(self, texts: list[str]) -> np.ndarray:
        rows = np.ones((len(texts), self.dim), dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._vec(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._vec(texts)


def test_life_add_told_becomes_memory(lived_db, capsys, monkeypatch) -> None:
    import engine.memory.embed as embed

    monkeypatch.setattr(embed, "make_embedder", lambda settings: FakeEmbedder())
    db, _ = lived_db
    assert main(["--db", str(db), "life", "add", "大学学的是中文", "--told", "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    conn = connect(db)
    try:
        assert store.get_life_event(conn, added["id"])["told"] == 1
        assert conn.execute("SELECT count(*) FROM mem_episodic WHERE life_event_id = ?", (added["id"],)).fetchone()[0] == 1
    finally:
        conn.close()


def test_bad_life_input_exits_2(lived_db, capsys) -> None:
    db, _ = lived_db
    assert main(["--db", str(db), "life", "--day", "yesterday"]) == 2
    assert main(["--db", str(db), "life", "add", "x", "--ts", "noon"]) == 2
    assert "ISO 8601" in capsys.readouterr().err


def test_status_shows_her_inner_state_but_no_untold_text(lived_db, capsys) -> None:
    db, _ = lived_db
    texts = untold_texts(db)
    assert texts
    assert main(["--db", str(db), "status", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["inner"]["activity"]["kind"]
    for text in texts:
        assert text not in out


def test_simulate_cli_is_byte_identical_and_chart_dependent(tmp_path: Path, capsys) -> None:
    db = tmp_path / "none.db"
    args = ["--db", str(db), "simulate", "--days", "2", "--start", "2025-01-06T04:00", "--json"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    assert main([*args, "--chart-birth", "1985-12-01 22:10"]) == 0
    assert capsys.readouterr().out != first
    assert not db.exists()  # the simulation never touches the real database
    assert main(["--db", str(db), "simulate", "--days", "1"]) == 0
    assert "daily summary" in capsys.readouterr().out


def test_mood_sparkline_and_plot(lived_db, tmp_path: Path, capsys) -> None:
    db, _ = lived_db
    assert main(["--db", str(db), "mood", "--days", "1"]) == 0
    out = capsys.readouterr().out
    assert "energy" in out and any(ch in out for ch in "▁▂▃▄▅▆▇█")
    png = tmp_path / "mood.png"
    assert main(["--db", str(db), "mood", "--plot", str(png), "--days", "1"]) == 0
    pytest.importorskip("matplotlib")  # without the [plot] extra the command falls back to the sparkline
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
