"""Acceptance 1: the real daemon, driven over its Unix socket through a scripted 20-turn conversation with injected time.

Her mood responds to what is said; context blocks cite the right turns; a life event offered on the
sharing channel and receipted becomes told and recallable; one offered without a receipt expires
and stays untold; one never offered never appears. No untold text appears in any response outside
the offer's `text`, nor in the daemon's log.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from engine.store import connect
from engine.store.life import add_life_event
from tests.api_support import SocketClient
from tests.conftest import write_config

pytestmark = pytest.mark.e2e

CST = timezone(timedelta(hours=8))
SHARED = "下午去植物园看了睡莲，还给一只橘猫拍了照片"
EXPIRES = "傍晚在阳台上练了半小时尤克里里，弹错了好多"
NEVER = "上个月去海边捡了很多贝壳，装满了一个玻璃瓶"

SCRIPT = [  # (user, companion): 1-5 everyday and warm, 6-10 hard news, 11-20 recovering
    ("早上好呀，今天阳光很好", "早上好！阳光好的日子心情也会好"),
    ("我昨天做了红烧肉，第一次做居然成功了", "太厉害了！下次教教我"),
    ("我的猫芝麻今天去打疫苗了，一点都没哭", "芝麻好勇敢！打完疫苗要奖励小鱼干"),
    ("周末打算去爬山，好期待", "爬山好呀，记得带水"),
    ("刚刚收到朋友寄来的明信片，好开心", "真好，被惦记的感觉很温暖"),
    ("我被公司裁员了，好难过，不知道怎么办", "我在这里，先别急，慢慢说"),
    ("下周还要去上海面试，但我好害怕又失败", "你已经很努力了，我陪你准备"),
    ("晚上一个人哭了很久，觉得自己很失败", "抱抱你，你一点都不失败"),
    ("房租也快交不起了，压力好大", "我们一起想办法，一步一步来"),
    ("今天什么都不想做，好累好绝望", "累了就休息，我一直都在"),
    ("谢谢你一直陪着我", "能陪着你我也很开心"),
    ("我决定先把简历改一改", "好主意，需要帮忙就说"),
    ("你今天下午去哪里玩了？", "我下午去植物园看睡莲啦，还拍到一只橘猫"),
    ("哇，橘猫可爱吗", "超可爱，胖乎乎的"),
    ("我也想去植物园走走", "等你面试完我们一起去"),
    ("芝麻今天在窗台上晒太阳", "芝麻真会享受"),
    ("面试准备得差不多了", "你一定可以的"),
    ("今天心情好多了", "太好了，看到你开心我也开心"),
    ("晚上吃了一碗热汤面", "热汤面最治愈了"),
    ("晚安，明天见", "晚安，做个好梦"),
]


class HerClock:
    def __init__(self, path: Path):
        self.path = path
        self.offset = 0.0
        path.write_text("0")

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds
        self.path.write_text(str(self.offset))

    def iso(self) -> str:
        return datetime.fromtimestamp(self.now(), CST).isoformat(timespec="seconds")


def db_rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = connect(db)
    try:
        return [tuple(r) for r in conn.execute(sql, args).fetchall()]
    finally:
        conn.close()


def wait_until(predicate: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


async def test_scripted_conversation_over_the_socket(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "anima.db"
    clock = HerClock(tmp_path / "clock-offset")
    config = write_config(tmp_path / "config.toml", heartbeat_s=1.0,
                          extra="[api]\nshare_min_willingness = 0.0\nshare_threshold = 0.05\n")
    daemon = start_daemon(db, config=config, env={"ANIMA_TEST_CLOCK_FILE": str(clock.path)})

    conn = connect(db)
    try:
        now = clock.now()
        ids = {
            "shared": add_life_event(conn, SHARED, now - 1800, told=False, origin="life", kind="completed"),
            "expires": add_life_event(conn, EXPIRES, now - 1200, told=False, origin="life", kind="completed"),
            "never": add_life_event(conn, NEVER, now - 30 * 86400, told=False, origin="life", kind="completed"),
        }
    finally:
        conn.close()

    async with SocketClient(str(tmp_path / "anima.db.sock")) as her:
        moods = []
        for i, (user, companion) in enumerate(SCRIPT, start=1):
            clock.advance(120)
            status, out = await her.call("POST", "/v1/turns", {"turn_id": f"t{i:02d}", "user": user,
                                                                "companion": companion, "ts": clock.iso()})
            assert status == 200 and out["created"] is True and len(out["memory_ids"]) == 2
            moods.append(out["mood"])
            if i == 12:
                # Before telling: nothing of her afternoon in context or life.
                _, ctx = await her.call("POST", "/v1/context", {"query": "植物园 睡莲 橘猫", "turn_id": "t13"})
                assert all(h["source"] != "self_life" for h in ctx["hits"])
                _, offer = await her.call("POST", "/v1/share", {"turn_id": "t13", "query": "你今天下午去植物园看睡莲了吗"})
                assert offer["reason"] == "offered" and offer["offer"]["text"] == SHARED
                shared_offer = offer["offer"]["share_id"]
            if i == 13:
                status, told = await her.call("POST", f"/v1/share/{shared_offer}/receipt", {"turn_id": "t13"})
                assert status == 200 and told["told"] is True and told["memory_id"]
            if i == 15:
                clock.advance(31 * 60)  # past the minimum gap between offers
                _, offer = await her.call("POST", "/v1/share", {"turn_id": "t16", "query": "阳台 尤克里里 练琴"})
                assert offer["reason"] == "offered" and offer["offer"]["text"] == EXPIRES
                expiring_offer = offer["offer"]["share_id"]
                clock.advance(31 * 60)  # past its time to live; the next heartbeat expires it
                wait_until(lambda sid=expiring_offer: db_rows(db, "SELECT status FROM share_offer WHERE id = ?",
                                                              sid) == [("expired",)])
                status, _ = await her.call("POST", f"/v1/share/{expiring_offer}/receipt", {"turn_id": "t16"})
                assert status == 409

        # Her mood responds: the run of hard news (turns 6-10) leaves her lower than the warm start (1-5).
        assert moods[9]["v"] < moods[4]["v"] - 0.05

        # Context blocks cite the right turns, on an indexed history: under load the indexer can trail the
        # script, and a context only embeds the newest pending turns itself (read-your-writes has its own test).
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and (await her.call("GET", "/v1/health"))[1].get("vectors_pending"):
            await asyncio.sleep(0.05)
        _, cat = await her.call("POST", "/v1/context", {"query": "芝麻打疫苗", "turn_id": "q1"})
        assert "t03" in cat["context"] and cat["injection_id"]
        _, job = await her.call("POST", "/v1/context", {"query": "上海面试", "turn_id": "q2"})
        assert "t07" in job["context"]

        # The receipted event is now told and recallable; the other two are not.
        _, garden = await her.call("POST", "/v1/context", {"query": "植物园的睡莲和橘猫", "turn_id": "q3"})
        assert any(h["source"] == "self_life" and h["text"] == SHARED for h in garden["hits"])
        _, life = await her.call("GET", "/v1/life")
        assert [e["text"] for e in life["events"] if e["text"] in (SHARED, EXPIRES, NEVER)] == [SHARED]
        for path in ("/v1/state", "/v1/persona", "/v1/health", "/v1/control"):
            assert (await her.call("GET", path))[0] == 200
        await her.call("POST", "/v1/context", {"query": "阳台 尤克里里 海边 贝壳 玻璃瓶"})

        told = dict(db_rows(db, "SELECT id, told FROM life_event WHERE id IN (?, ?, ?)", *ids.values()))
        assert told == {ids["shared"]: 1, ids["expires"]: 0, ids["never"]: 0}
        untold_now = [r[0] for r in db_rows(db, "SELECT text FROM life_event WHERE told = 0")]
        seen = her.outside_offers()
        for text in [*untold_now, EXPIRES, NEVER]:
            assert text not in seen and text[:16] not in seen
        assert NEVER not in json.dumps([b for _, _, b in her.seen], ensure_ascii=False)

    assert daemon.stop() == 0
    log = daemon.log_text()
    for text in (SHARED, EXPIRES, NEVER, SCRIPT[5][0]):
        assert text not in log
