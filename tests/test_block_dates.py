"""Defect 13 of issue 25: the memory block dates a turn in her zone, not in the offset the front end sent,
and `anima forget --since DATE` (read in the same zone) removes exactly the turns the block dated DATE or later.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from engine.control import Switches
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import LifeSettings, Settings
from engine.store import connect
from engine.usecases.context import recall_for
from tests.api_support import HashEmbedder, make_database
from tests.conftest import run_anima

EMBEDDER = HashEmbedder()
NOW = 1_796_000_000.0  # 2026-11-30, before every turn's window check matters (record_turn takes `now`)
TURNS = [
    # (turn id, what the front end sent): a minute apart across her midnight, with two different offsets
    ("late-utc", "2026-12-04T16:00:00+00:00"),   # 2026-12-05 00:00 in Shanghai
    ("late-cst", "2026-12-05T00:01:00+08:00"),   # one minute later
    ("before", "2026-12-04T23:00:00+08:00"),     # the evening before, in her zone
]


def block_dates(db: Path, tz: str) -> dict[str, str]:
    settings = dataclasses.replace(Settings(), life=dataclasses.replace(LifeSettings(), tz=tz))
    conn = connect(db, readonly=True)
    try:
        result = recall_for(conn, EMBEDDER, "芝麻吃小鱼干", settings, Switches.defaults(), NOW + 400 * 86400)
    finally:
        conn.close()
    return {m.group(2): m.group(1) for m in re.finditer(r"\[(\d{4}-\d\d-\d\d) · ([\w-]+)\]", result.context)}


def her_turns(db: Path) -> Path:
    make_database(db)
    conn = connect(db)
    for turn_id, sent in TURNS:
        record_turn(conn, EMBEDDER, TurnInput(turn_id, f"{turn_id}：我的猫芝麻最爱吃小鱼干", "芝麻真馋", sent), NOW)
    conn.close()
    return db


def test_the_block_dates_turns_in_her_zone_whatever_offset_was_sent(tmp_path: Path) -> None:
    db = her_turns(tmp_path / "her.db")
    assert block_dates(db, "Asia/Shanghai") == {"late-utc": "2026-12-05", "late-cst": "2026-12-05",
                                                 "before": "2026-12-04"}
    # Her zone decides: the same instants in a zone eight hours behind UTC are all the 4th.
    assert block_dates(db, "America/Los_Angeles") == dict.fromkeys(("late-utc", "late-cst", "before"), "2026-12-04")


def test_forget_since_a_date_removes_the_turns_the_block_dated_from_it(tmp_path: Path) -> None:
    db = her_turns(tmp_path / "her.db")
    dated = block_dates(db, "Asia/Shanghai")
    config = tmp_path / "config.toml"
    config.write_text('[life]\ntz = "Asia/Shanghai"\n', encoding="utf-8")
    done = run_anima("--config", str(config), "--db", str(db), "forget", "--since", "2026-12-05", "--yes", "--json")
    assert done.code == 0, done.err
    gone = set(json.loads(done.out)["turn_ids"])
    assert gone == {turn for turn, date in dated.items() if date >= "2026-12-05"} == {"late-utc", "late-cst"}
