"""`anima doctor`: check what an operator would check by hand, one line each, and exit 1 when something is wrong.

Config, the chat model ([model]: where, and whether its key is there), the database files' owner and mode, the socket, the lock, the schema (its version, and no object
anima's migrations do not make), integrity (quick_check),
installed systemd units against the heartbeat, pending vectors, the clock, and the replication lag of
every companion of the litestream.yml (daemon/replication.py). It only reads: the
database is opened read-only and nothing is migrated, so it is safe next to a running daemon.
Statuses: ok, warn (worth a look, not broken), fail (exit 1), skip (does not apply here).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon.api.listen import socket_path
from daemon.cli.env import CliEnv
from daemon.cli.served import UNKNOWN, ServedBy, served_by
from engine.errors import AnimaError
from engine.usecases.files import daemon_running, open_readonly, schema_versions
from engine.usecases.inspect import clock_steps_since_start, daemon_record, foreign_objects, integrity

UNIT_DIRS = (Path("/etc/systemd/system"), Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
Check = dict[str, str]
LITESTREAM_UNIT = "anima-litestream.service"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("doctor", help="check config, files, socket, lock, schema, integrity, units, clock")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument("--litestream-config",
                        help="litestream.yml to read replication lag from (default $ANIMA_LITESTREAM_CONFIG, "
                             "else /etc/anima/litestream.yml; skipped when absent)")
    parser.add_argument("--dir", help="companions directory: the replication lag of each of its companions "
                                      "(and which the litestream.yml does not replicate)")
    parser.set_defaults(func=handle)


def _check(name: str, status: str, detail: str) -> Check:
    return {"check": name, "status": status, "detail": detail}


def check_config(env: CliEnv) -> Check:
    source = str(env.config_file) if env.config_file else "embedded defaults (no config file)"
    return _check("config", "ok", f"loaded {source}; database {env.db_path}")


def check_model(settings: Any, environ: Any = None) -> Check:
    """The chat model ([model]): where it is (scheme, host and port only: a URL may carry a key) and whether its
    key is there; nothing is sent to it (doctor only reads)."""
    from urllib.parse import urlsplit

    from engine import model_config

    config = model_config.resolve(settings, os.environ if environ is None else environ)
    if not config.configured:
        return _check("model", "skip", "no [model] base_url: POST /v1/chat/completions answers 503 and "
                                       "consolidation runs on its rules")
    where = urlsplit(config.base_url)
    detail = f"{config.name} at {where.scheme}://{where.hostname or '?'}{f':{where.port}' if where.port else ''}"
    if config.from_deprecated:
        return _check("model", "warn", f"{detail}, from the deprecated [consolidation] model_* keys: move them to "
                                       "[model] base_url, name, api_key_env, timeout_s")
    if config.api_key is None:
        return _check("model", "warn", f"{detail}; no key: neither ${config.api_key_env} nor a credential of "
                                       "that name is set (fine for a local server that needs none)")
    return _check("model", "ok", f"{detail}; key from {config.api_key_env}")


def check_files(db: Path) -> list[Check]:
    """Each of the DB, -wal and -shm: exists, readable and writable by us, not readable by others."""
    out = []
    if not db.exists():
        return [_check("files", "fail", f"{db} does not exist; create it with: anima init (or anima run)")]
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if not path.exists():
            continue
        st = path.lstat()
        mode = stat.S_IMODE(st.st_mode)
        problems = []
        if not os.access(path, os.R_OK | os.W_OK):
            problems.append(f"not readable and writable by uid {os.getuid()} (owner uid {st.st_uid})")
        if mode & 0o007:
            problems.append(f"mode {mode:04o} lets every user read her (want 0600 or 0640)")
        if st.st_uid != os.getuid() and os.getuid() != 0 and not problems:
            problems.append(f"owned by uid {st.st_uid}, not {os.getuid()}")
        if path == db and stat.S_ISLNK(st.st_mode):
            problems.append("is a symbolic link")
        status = "fail" if any("not readable" in p for p in problems) else ("warn" if problems else "ok")
        out.append(_check(f"file {path.name}", status, "; ".join(problems) or f"mode {mode:04o}, owner uid {st.st_uid}"))
    return out


def check_lock(db: Path) -> tuple[Check, bool]:
    locked = daemon_running(db)
    detail = "held: a daemon (or a restore) has the file" if locked else "free: no daemon runs on this file"
    return _check("lock", "ok", detail), locked


def check_socket(env: CliEnv, running: bool, served: ServedBy = UNKNOWN) -> Check:
    """Her socket answers her health: beside her file, or the directory host's (then her scoped health)."""
    path = socket_path(env.settings.api, env.db_path, os.environ)
    if served.mode == "directory" and served.socket is not None:
        path = served.socket
    if not path.exists():
        status = "fail" if running else "skip"
        return _check("socket", status, f"{path} does not exist" + (" although the daemon holds the lock" if running else ""))
    st = path.lstat()
    if not stat.S_ISSOCK(st.st_mode):
        return _check("socket", "fail", f"{path} is not a socket")
    mode = stat.S_IMODE(st.st_mode)
    answer = _health(path, served.health_path())
    if answer is None:
        status = "fail" if running else "warn"
        return _check("socket", status, f"{path} (mode {mode:04o}) does not answer GET /v1/health"
                      + ("" if running else " (stale socket of a stopped daemon)"))
    alive = answer.get("alive") is True
    age = answer.get("last_beat_age_s")
    beat = "no beat yet" if age is None else f"last beat {age} s ago"
    # Words, not Python values (issue 25: "alive=True" in human output).
    return _check("socket", "ok" if alive else "fail",
                  f"{path} mode {mode:04o} answers: {'alive' if alive else 'not alive'}, {beat}")


def _health(path: Path, target: str = "/v1/health", timeout: float = 3.0) -> dict[str, Any] | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            s.sendall(f"GET {target} HTTP/1.1\r\nHost: anima\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        return None
    try:
        return dict(json.loads(body))
    except ValueError:
        return None


def _served(db: Path) -> ServedBy:
    """How her file says she is served (daemon/cli/served.py); UNKNOWN when it cannot be read (the database
    checks say why)."""
    if not db.exists():
        return UNKNOWN
    try:
        conn = open_readonly(db)
    except Exception:
        return UNKNOWN
    try:
        return served_by(conn)
    except Exception:
        return UNKNOWN
    finally:
        conn.close()


def check_database(db: Path, env: CliEnv, running: bool) -> list[Check]:
    try:
        conn = open_readonly(db)
    except Exception as exc:
        return [_check("schema", "fail", f"cannot open {db}: {type(exc).__name__}: {exc}")]
    try:
        return _database_checks(conn, env, running)
    except Exception as exc:  # a page the schema reads is damaged
        return [_check("integrity", "fail", f"{db} cannot be read: {type(exc).__name__}: {exc}")]
    finally:
        conn.close()


def _database_checks(conn: Any, env: CliEnv, running: bool) -> list[Check]:
    out = []
    have, want = schema_versions(conn)
    if have > want:
        out.append(_check("schema", "fail", f"database schema {have} is newer than this code's {want}: upgrade anima"))
    elif have < want:
        out.append(_check("schema", "warn", f"database schema {have}, code {want}: migrated at the next start"))
    else:
        out.append(_check("schema", "ok", f"version {have}"))
    try:
        rows = integrity(conn)
    except Exception as exc:  # too damaged even to check (e.g. "database disk image is malformed")
        rows = [f"{type(exc).__name__}: {exc}"]
    out.append(_check("integrity", "ok", "quick_check ok") if rows == ["ok"] else
               _check("integrity", "fail", f"quick_check found {len(rows)} problem(s); restore a snapshot "
                                           "(anima restore) and see README 'Backups'"))
    for name, step in (("schema objects", lambda: _schema_objects(conn)), ("vectors", lambda: _pending(conn, running)),
                       ("clock", lambda: _clock(conn, env))):
        try:
            out.append(step())
        except Exception as exc:  # a damaged file: say which check could not read it, keep the others
            out.append(_check(name, "fail", f"cannot read: {type(exc).__name__}: {exc}"))
    return out


def _schema_objects(conn: Any) -> Check:
    """Only the tables, indexes, triggers and views anima's migrations make (a foreign trigger can keep
    forgotten text or reveal untold life, and no other check sees it)."""
    foreign = foreign_objects(conn)
    if not foreign:
        return _check("schema objects", "ok", "exactly what anima's migrations make")
    return _check("schema objects", "fail", f"{len(foreign)} not made by anima's migrations: "
                                            f"{', '.join(foreign[:5])}; restore a clean snapshot (anima restore)")


def _pending(conn: Any, running: bool) -> Check:
    from engine.memory.indexer import count_pending

    try:
        n = count_pending(conn)
    except Exception as exc:  # a schema without the memory tables yet
        return _check("vectors", "skip", f"not counted ({type(exc).__name__})")
    if n == 0:
        return _check("vectors", "ok", "every memory has its vector")
    if running:
        return _check("vectors", "ok", f"{n} memories wait for a vector; the running daemon indexes them")
    return _check("vectors", "warn", f"{n} memories wait for a vector; start the daemon or run: anima reembed --pending")


def _clock(conn: Any, env: CliEnv) -> Check:
    """The wall clock against the last recorded beat, and the steps the daemon saw since its last start."""
    state = daemon_record(conn)
    steps = clock_steps_since_start(conn)
    last_wall = state.get("last_beat_wall")
    wall = time.time()
    notes = []
    status = "ok"
    if last_wall is not None and last_wall > wall + 5:
        status = "warn"
        notes.append(f"the last beat is {last_wall - wall:.0f} s in the future: the wall clock was set back")
    if steps:
        status = "warn"
        sizes = [s["detail"].get("step_s", -s["detail"].get("seconds", 0)) for s in steps]
        notes.append(f"{len(steps)} wall-clock step(s) since the last start (s: {', '.join(f'{x:+.0f}' for x in sizes)})")
    return _check("clock", status, "; ".join(notes) or "the wall clock agrees with her last beat")


def check_units(env: CliEnv, unit_dirs: tuple[Path, ...] = UNIT_DIRS) -> list[Check]:
    units = [p for d in unit_dirs if d.is_dir() for p in sorted(d.glob("anima*.service"))]
    if not units:
        return [_check("units", "skip", "no anima systemd unit installed")]
    out = []
    interval = env.settings.heartbeat.interval_s
    for unit in units:
        text = unit.read_text(errors="replace")
        if unit.name == LITESTREAM_UNIT:  # not a daemon of hers: no heartbeat, no watchdog to compare
            out.append(_check(f"unit {unit.name}", "ok", str(unit)))
            continue
        problems = []
        watchdog = _seconds(_directive(text, "WatchdogSec"))
        if watchdog is not None and watchdog > 0 and 2 * interval > watchdog:
            problems.append(f"WatchdogSec={watchdog:g}s is shorter than two heartbeats ({interval:g} s): it will refuse to start")
        if "2" not in (_directive(text, "RestartPreventExitStatus") or "").split():
            problems.append("no RestartPreventExitStatus=2: a config error restarts every RestartSec forever")
        if "OMP_NUM_THREADS=1" in text:
            problems.append("Environment=OMP_NUM_THREADS=1 pins query embedding to one core")
        out.append(_check(f"unit {unit.name}", "warn" if problems else "ok", "; ".join(problems) or str(unit)))
    return out


def check_replication(config: Path, folder: Path | None = None) -> list[Check]:
    """The replication lag of every companion of the litestream.yml (anima replication status, one line each)."""
    from daemon.cli.cmd_replication import LAG_WARN_S
    from daemon.replication_status import replication_rows

    if not config.exists():
        return [_check("replication", "skip", f"no {config}: replication not set up (anima replication config)")]
    try:
        rows = replication_rows(config, folder)
    except AnimaError as exc:
        return [_check("replication", "fail", str(exc))]
    out = []
    for row in rows:
        name = f"replica {row['companion']}"
        if row["lag_s"] is None:
            out.append(_check(name, "fail", f"{row['replica'] or row['db']}: {row.get('error', 'no position')}"))
        elif row["lag_s"] > LAG_WARN_S:
            out.append(_check(name, "warn", f"lag {row['lag_s']:.1f} s behind her newest commit ({row['replica']}); "
                                            "is anima-litestream.service running?"))
        else:
            out.append(_check(name, "ok", f"lag {row['lag_s']:.1f} s, replica txid {row['replica_txid']} "
                                          f"({row['replica']})"))
    out.append(_forget_reach(config))
    return out


def _forget_reach(config: Path) -> Check:
    """Whether a forget can reach the replica: the litestream.yml must enable Litestream's control socket
    (daemon/replication_forget.py); an older one leaves forgotten turns in the WAL and the replica."""
    from daemon.replication import socket_of_config

    try:
        socket = socket_of_config(config.read_text(encoding="utf-8"))
    except OSError:
        socket = None
    if socket is None:
        return _check("forget reach", "warn", f"{config} enables no Litestream control socket: a forget cannot take "
                                              "her file out of replication, so the WAL and the replica keep what was "
                                              "forgotten; run anima replication config ... --out again and restart "
                                              "anima-litestream")
    if not socket.exists():
        return _check("forget reach", "warn", f"no Litestream listens on {socket}: is anima-litestream.service "
                                              "running (with the regenerated litestream.yml)?")
    return _check("forget reach", "ok", f"a forget takes her file out of replication through {socket}")


def _directive(text: str, key: str) -> str | None:
    found = None
    for line in text.splitlines():
        m = re.match(rf"\s*{key}\s*=\s*(.*)$", line)
        if m:
            found = m.group(1).strip()
    return found


def _seconds(value: str | None) -> float | None:
    """A systemd time span as seconds ("60", "60s", "2min", "1min 30s"); None when unset or unknown."""
    if not value:
        return None
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "ms": 0.001, "us": 1e-6}
    total = 0.0
    for number, unit in re.findall(r"([0-9.]+)\s*([a-z]*)", value):
        if unit not in units:
            return None
        total += float(number) * units[unit]
    return total


def run_checks(env: CliEnv) -> list[Check]:
    checks = [check_config(env), *check_files(env.db_path)]
    lock, running = check_lock(env.db_path)
    checks.append(lock)
    checks.append(check_socket(env, running, _served(env.db_path)))
    if env.db_path.exists():
        checks.extend(check_database(env.db_path, env, running))
    checks.extend(check_units(env))
    checks.append(check_model(env.settings))
    return checks


def handle(args: argparse.Namespace, env: CliEnv, runner: Callable[[CliEnv], list[Check]] = run_checks) -> int:
    from daemon.replication_status import config_path

    folder = Path(args.dir) if getattr(args, "dir", None) else None
    checks = runner(env) + check_replication(config_path(getattr(args, "litestream_config", None)), folder)
    failed = [c for c in checks if c["status"] == "fail"]
    if args.json:
        env.print_json({"ok": not failed, "checks": checks})
    else:
        for c in checks:
            print(f"{c['status']:<4}  {c['check']:<18} {c['detail']}")
        print("all checks passed" if not failed else f"{len(failed)} check(s) failed")
    return 1 if failed else 0
