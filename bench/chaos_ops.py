"""Operator chaos, JSON out: kill -9 inside `anima restore` and `anima export --force`, and forget under replication.

restore kills (`run_restore_kills`): the target is an anima file whose last 30 commits live only in its
-wal (its writer was killed); `anima restore SNAPSHOT --db TARGET` is killed with SIGKILL at each named
step (ANIMA_TEST_KILL_AT, engine/faults.py) and, --random times, at a random moment from outside (between
the first kill point and the end: before it, Python is still importing). After
each kill: is there a database at the path (`path_empty` counts the cases without), is it the old file
(with its 30 WAL commits) or the new one, and are the old commits still somewhere (the path or the .bak).

export kills (`run_export_kills`): `anima export --force` over an existing export, killed the same way;
after each kill the pair at the path (file + manifest) must verify as a snapshot restore accepts
(`unrestorable` counts those that do not).

forget under replication (`run_forget_replication`): a real daemon on one file, a real `litestream
replicate` to a file:// replica (the config `anima replication config` writes), a client posting turns
while canary turns are posted and forgotten (DELETE /v1/turns/{id}) one after another. After the last
forget: the canaries' bytes in the file, -wal, -shm, Litestream's local state and every replica file
(`forgotten_bytes_reachable`, 0 expected), a restore from the replica, and a restore `--at` the moment
before the first forget (both must hold no canary); every acknowledged ordinary turn must be in the
restored file (`acknowledged_lost`, 0 expected).

Only processes this script starts are signalled; everything lives in a temporary directory.

Usage: python bench/chaos_ops.py [--random 20] [--forgets 5] [--only restore,export,forget]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.chaos_storage import Daemon, _config, _get  # noqa: E402
from engine.companion import create_companion  # noqa: E402
from engine.faults import KILL_AT_ENV  # noqa: E402
from engine.memory.ingest import TurnInput, record_turn  # noqa: E402
from engine.snapshot import export, inspect, verify  # noqa: E402
from engine.store import connect, migrate  # noqa: E402

RESTORE_STEPS = ("restore.copied", "restore.verified", "restore.backed_up", "restore.sides_removed",
                 "restore.replaced")
EXPORT_STEPS = ("export.copied", "export.manifest_written", "export.replaced")
WAL_COMMITS = 30
T0 = 1_780_000_000.0
WAL_WRITER = """
import os, signal, sys
from engine.store import connect
conn = connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    conn.execute("INSERT INTO event_log (ts, kind) VALUES (?, 'wal_marker')", (i,))
os.kill(os.getpid(), signal.SIGKILL)
"""


class _Embedder:
    """Hash vectors (the bench measures files, not recall): deterministic, no model to load."""

    name = "bench-hash"
    dim = 384

    def embed(self, texts: list[str], kind: str = "passage") -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text:
                out[row, hash(ch) % self.dim] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out


def _anima(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _companion(db: Path, turns: int = 0) -> None:
    conn = connect(db)
    try:
        migrate(conn, T0)
        create_companion(conn, name="小安", birth_local="1998-04-12 09:30", tz="Asia/Shanghai", place="杭州",
                         sect=2, now=T0)
        for i in range(turns):
            record_turn(conn, _Embedder(), TurnInput(f"s{i}", f"第{i}句：我的猫芝麻今天很乖", "真好",
                                                     "2026-05-28T20:00:00+08:00"), T0 + i, embed=False)
    finally:
        conn.close()


def _markers(path: Path) -> int:
    conn = connect(path, readonly=True)
    try:
        return int(conn.execute("SELECT count(*) FROM event_log WHERE kind = 'wal_marker'").fetchone()[0])
    finally:
        conn.close()


def _killed(args: list[str], step: str | None, delay_s: float | None) -> int:
    """Run `anima ARGS`, killed at `step` (the hook) or after `delay_s` (from outside); its exit status."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **({KILL_AT_ENV: step} if step else {})}
    proc = subprocess.Popen([sys.executable, "-m", "daemon", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if delay_s is not None:
        try:
            proc.wait(timeout=delay_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    return proc.wait(timeout=120)


def _window(args: list[str], first_step: str, again: list[str] | None = None) -> tuple[float, float]:
    """(seconds until the command reaches its first kill point, seconds it takes whole): random kills land
    between the two, where the command works on files (before it, Python is still importing)."""
    started = time.monotonic()
    _killed(args, first_step, None)
    first_s = time.monotonic() - started
    started = time.monotonic()
    _anima(*(again or args))
    return first_s, max(first_s, time.monotonic() - started)


# ---------------------------------------------------------------- restore


def run_restore_kills(randoms: int = 20, seed: int = 25) -> dict[str, Any]:
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="anima-chaos-ops-"))
    out: dict[str, Any] = {"cases": 0, "killed": 0, "path_empty": 0, "old_at_path": 0, "new_at_path": 0,
                           "old_wal_commits_lost": 0}
    try:
        source, snap = root / "her.db", root / "her.snapshot"
        _companion(source, turns=20)
        export(source, snap, T0)
        snap_tables = {t: d for t, d in inspect(snap)["tables"].items() if t != "event_log"}
        made = root / "made" / "other.db"
        made.parent.mkdir()
        _companion(made)
        subprocess.run([sys.executable, "-c", WAL_WRITER, str(made), str(WAL_COMMITS)], cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=60)
        first_s, full_s = _window(["restore", str(snap), "--db", str(root / "timing.db")], RESTORE_STEPS[0])
        plan: list[tuple[str | None, float | None]] = [(s, None) for s in RESTORE_STEPS]
        plan += [(None, rng.uniform(first_s, full_s)) for _ in range(randoms)]
        for n, (step, delay) in enumerate(plan):
            case = root / f"case-{n}"
            shutil.copytree(made.parent, case)
            target = case / "other.db"
            code = _killed(["restore", str(snap), "--db", str(target)], step, delay)
            out["cases"] += 1
            out["killed"] += int(code == -signal.SIGKILL)
            if not target.exists():
                out["path_empty"] += 1
                continue
            tables = {t: d for t, d in inspect(target)["tables"].items() if t != "event_log"}
            if tables == snap_tables:
                out["new_at_path"] += 1
                backups = [b for b in case.glob("other.db.bak-*") if not b.name.endswith(".tmp")]
                kept = max((_markers(b) for b in backups), default=0)
            else:
                out["old_at_path"] += 1
                kept = _markers(target)
            out["old_wal_commits_lost"] += int(kept != WAL_COMMITS)
        out["restore_full_s"] = round(full_s, 3)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


# ---------------------------------------------------------------- export


def run_export_kills(randoms: int = 20, seed: int = 26) -> dict[str, Any]:
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="anima-chaos-ops-"))
    out: dict[str, Any] = {"cases": 0, "killed": 0, "unrestorable": 0, "old_kept": 0, "new_in_place": 0}
    try:
        source = root / "her.db"
        _companion(source, turns=200)
        first_s, full_s = _window(["--db", str(source), "export", str(root / "timing.snapshot")], EXPORT_STEPS[0],
                                  again=["--db", str(source), "export", "--force", str(root / "timing.snapshot")])
        plan: list[tuple[str | None, float | None]] = [(s, None) for s in EXPORT_STEPS]
        plan += [(None, rng.uniform(first_s, full_s)) for _ in range(randoms)]
        for n, (step, delay) in enumerate(plan):
            folder = root / f"case-{n}"
            folder.mkdir()
            snap = folder / "her.snapshot"
            old = export(source, snap, T0)
            conn = connect(source)
            conn.execute("INSERT INTO event_log (ts, kind) VALUES (?, 'between_exports')", (n,))
            conn.close()
            code = _killed(["--db", str(source), "export", "--force", str(snap)], step, delay)
            out["cases"] += 1
            out["killed"] += int(code == -signal.SIGKILL)
            try:
                seen = verify(snap)
            except Exception:
                out["unrestorable"] += 1
                continue
            newer = seen["tables"]["event_log"]["rows"] > old["tables"]["event_log"]["rows"]
            out["new_in_place" if newer else "old_kept"] += 1
        out["export_full_s"] = round(full_s, 3)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


# ---------------------------------------------------------------- forget under replication


def _needles(n: int) -> list[bytes]:
    return [f"CANARY{n:03d}QZX".encode(), f"紫藤花巷{n:03d}号的秘密".encode()]


def _holding(paths: list[Path], needles: list[bytes]) -> int:
    count = 0
    for path in paths:
        if path.is_file():
            data = path.read_bytes()
            count += sum(1 for needle in needles if needle in data)
    return count


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


async def _delete(sock: Path, turn_id: str) -> tuple[int, Any]:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session, \
            session.delete(f"http://anima/v1/turns/{turn_id}") as resp:
        return resp.status, await resp.json(content_type=None)


async def _forget_round(sock: Path, forgets: int, acked: list[str], replica: Path) -> dict[str, Any]:
    import aiohttp

    from bench.chaos_storage import _stream

    stop = asyncio.Event()
    statuses: dict[int, int] = {}
    writer = asyncio.create_task(_stream(sock, "ordinary", 2, stop, acked, statuses))
    answers: list[dict[str, Any]] = []
    first_forget_at: str | None = None
    seen_before = 0  # canaries the byte search finds in the replica before their forget: the search can see them
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session:
        for n in range(forgets):
            canary, place = (needle.decode() for needle in _needles(n))
            body = {"turn_id": f"canary-{n}", "user": f"暗号{canary}，住在{place}", "companion": "记住啦",
                    "ts": datetime.now(UTC).isoformat(timespec="seconds")}
            async with session.post("http://anima/v1/turns", json=body) as resp:
                await resp.read()
            await asyncio.sleep(1.5)  # Litestream ships it (sync-interval 0.2 s), so the forget has work to do
            seen_before += int(_holding(_files(replica), _needles(n)) > 0)
            if first_forget_at is None:
                first_forget_at = datetime.now(UTC).isoformat(timespec="seconds")
                await asyncio.sleep(1.1)  # --at resolution is one second
            status, answer = await _delete(sock, f"canary-{n}")
            answers.append({"status": status, "wal_truncated": answer.get("wal_truncated"),
                            "replica_scrubbed": answer.get("replica_scrubbed")})
    await asyncio.sleep(1.0)
    stop.set()
    await writer
    return {"answers": answers, "first_forget_at": first_forget_at, "writer_statuses": statuses,
            "canaries_found_in_replica_before_forget": seen_before}


def run_forget_replication(forgets: int = 5) -> dict[str, Any]:
    from daemon.replication import litestream_binary, litestream_env

    root = Path(tempfile.mkdtemp(prefix="anima-chaos-ops-", dir="/tmp"))
    out: dict[str, Any] = {"forgets": forgets}
    litestream: subprocess.Popen[bytes] | None = None
    daemon: Daemon | None = None
    try:
        db, sock = root / "her.db", root / "her.sock"
        _companion(db)
        config = root / "litestream.yml"
        base = f"file://{root / 'replica'}"
        made = _anima("--db", str(db), "replication", "config", "--replica", base, "--out", str(config))
        if made.returncode != 0:
            return {"error": made.stderr.strip()[-300:]}
        log = open(root / "litestream.log", "wb")  # noqa: SIM115 - closed with the process
        litestream = subprocess.Popen([str(litestream_binary()), "replicate", "-config", str(config)], stdout=log,
                                      stderr=subprocess.STDOUT, env=litestream_env(os.environ))
        os.environ["ANIMA_LITESTREAM_CONFIG"] = str(config)
        daemon = Daemon(root, db, _config(root, sock), 1)
        daemon.wait_ready()
        acked: list[str] = []
        round_ = asyncio.run(_forget_round(sock, forgets, acked, root / "replica"))
        out.update({k: v for k, v in round_.items() if k != "first_forget_at"})
        needles = [needle for n in range(forgets) for needle in _needles(n)]
        time.sleep(1.0)
        places = {
            "file_wal_shm": [db, Path(f"{db}-wal"), Path(f"{db}-shm")],
            "litestream_local": _files(root / ".her.db-litestream"),
            "replica_files": _files(root / "replica"),
        }
        out["forgotten_bytes"] = {where: _holding(paths, needles) for where, paths in places.items()}
        restored = root / "restored" / "her.db"
        restored.parent.mkdir()
        done = _anima("restore", "--from-replica", base, "--db", str(restored))
        out["restore_rc"] = done.returncode
        out["forgotten_bytes"]["restored"] = _holding([restored], needles)
        at = root / "at" / "her.db"
        at.parent.mkdir()
        done = _anima("restore", "--from-replica", base, "--at", str(round_["first_forget_at"]), "--db", str(at))
        out["restore_at_before_forget_rc"] = done.returncode
        out["forgotten_bytes"]["restored_at_before_forget"] = _holding([at], needles)
        out["forgotten_bytes_reachable"] = sum(out["forgotten_bytes"].values())
        asyncio.run(_get(sock, "/v1/health"))
        out["acknowledged_turns"] = len(acked)
        if restored.exists():
            conn = connect(restored, readonly=True)
            have = {r[0] for r in conn.execute("SELECT DISTINCT turn_id FROM chat_message")}
            conn.close()
            # What the replica held at restore time: turns acknowledged before the last forget's snapshot
            # at least; the stream stopped a second before, so every acknowledged turn should be there.
            out["acknowledged_lost_in_replica"] = len(set(acked) - have)
    finally:
        if daemon is not None:
            code, took = daemon.term()
            out["daemon_exit"] = code
        if litestream is not None:
            litestream.kill()
            litestream.wait(timeout=10)
        os.environ.pop("ANIMA_LITESTREAM_CONFIG", None)
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=20, help="kills at a random moment, per command")
    parser.add_argument("--forgets", type=int, default=5)
    parser.add_argument("--only", default="restore,export,forget")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    report: dict[str, Any] = {}
    if "restore" in parts:
        report["restore_kills"] = run_restore_kills(args.random)
    if "export" in parts:
        report["export_kills"] = run_export_kills(args.random)
    if "forget" in parts:
        report["forget_replication"] = run_forget_replication(args.forgets)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
