"""`anima forget --turn ID | --since T --until T | --all`: remove turns everywhere they live, without racing a daemon.

When a daemon holds the database (its lock, engine/store/lock.py), the request goes to that daemon
over its Unix socket (DELETE /v1/turns...), so the forget runs on the daemon's own DB thread and its
in-RAM caches and indexer watermark are brought in line in the same process. Otherwise the file is
changed directly, under the same lock, so no daemon can start half-way. A range or --all asks for
confirmation on a terminal and needs --yes elsewhere: it cannot be undone.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from daemon.cli.env import CliEnv
from daemon.replication_forget import config_file, replication_of, start_over, take_out
from engine.errors import AnimaError, InputError, LockedError, NotFoundError, StoreError
from engine.memory import forget as forgetting
from engine.memory.reembed import checkpoint_path
from engine.times import parse_instant
from engine.usecases.files import DaemonLock, daemon_running
from engine.usecases.forget import forget_turns

API_TIMEOUT_S = 300.0  # FTS optimize of a big history inside the daemon can take a while


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("forget", help="remove turns from every place they live (cannot be undone)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--turn", metavar="ID", help="the turn id to forget")
    which.add_argument("--since", metavar="T", help="forget turns said at or after T (ISO 8601; her zone if no offset)")
    which.add_argument("--all", action="store_true", help="forget every turn")
    parser.add_argument("--until", metavar="T", help="with --since: turns said before T")
    parser.add_argument("--yes", action="store_true", help="do not ask (needed for a range or --all off a terminal)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    chosen = _selection(args, env)
    if not env.db_path.exists():
        raise StoreError(f"database {env.db_path} does not exist; nothing to forget")
    if chosen.is_bulk:
        _confirm(chosen, args.yes, env.settings.life.tz)
    report = _via_daemon(env, chosen) if daemon_running(env.db_path) else _direct_or_daemon(env, chosen)
    if args.json:
        env.print_json(report)
    elif report["already_forgotten"]:
        print(f"turn {chosen.turn_id} was already forgotten; nothing changed")
    elif not report["turns"]:
        print(f"no turn in {chosen.describe(env.settings.life.tz)}; nothing changed")
    else:
        counts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.items()
                           if isinstance(v, int) and not isinstance(v, bool) and k != "turns" and v)
        print(f"forgot {report['turns']} turn(s): {counts}")
        if not report["wal_truncated"]:
            print("  the WAL could not be truncated now (a reader held it): run the same anima forget again to finish")
        if report.get("replica_scrubbed") is False:
            print("anima: note: the s3:// replica still holds files from before the forget; delete <URL>/<handle>/ "
                  "with the bucket's tools (README 'Replication')", file=sys.stderr)
    if report["turns"]:  # an interrupted reembed's vectors may include the forgotten texts': it only loses progress
        checkpoint_path(env.db_path).unlink(missing_ok=True)
    kept = sorted(env.db_path.parent.glob(f"{env.db_path.name}.bak-*"))
    if kept and (report["turns"] or report["already_forgotten"]):
        # Copies this command does not touch: the files `anima restore` set aside, and earlier exports.
        print(f"anima: note: {len(kept)} file(s) kept by anima restore beside the database (e.g. {kept[0].name}) "
              "still hold what was forgotten; delete them if they should not", file=sys.stderr)
    return 0


def _selection(args: argparse.Namespace, env: CliEnv) -> forgetting.Selection:
    if args.until is not None and args.since is None:
        raise InputError("--until needs --since (use --since with a time far back for 'everything before')")
    env.adopt_home()  # --since/--until are in her zone
    tz = env.settings.life.tz
    since = parse_instant(args.since, "--since", tz) if args.since is not None else None
    until = parse_instant(args.until, "--until", tz) if args.until is not None else None
    return forgetting.selection(turn_id=args.turn, since=since, until=until, everything=args.all)


def _confirm(chosen: forgetting.Selection, yes: bool, tz: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise InputError(f"forgetting {chosen.describe(tz)} cannot be undone; pass --yes to confirm")
    answer = input(f"forget {chosen.describe(tz)} everywhere, for good? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise InputError("not confirmed; nothing was forgotten")


def _direct_or_daemon(env: CliEnv, chosen: forgetting.Selection) -> dict[str, Any]:
    """Forget in this process under the daemon lock; a daemon that took the lock meanwhile gets the request."""
    lock = DaemonLock(env.db_path)
    try:
        lock.acquire("database {db} was taken by an anima daemon (pid {pid})")
    except LockedError:
        return _via_daemon(env, chosen)
    replication = replication_of(env.db_path, config_file())  # as the route does: daemon/replication_forget.py
    report: forgetting.ForgetReport | None = None
    try:
        take_out(replication)
        conn = env.open_db(create=False)
        try:
            report = forget_turns(conn, chosen, env.clock.now(), actor="cli", tz=env.settings.life.tz)  # the API's use case
        finally:
            conn.close()
    finally:
        try:
            forgotten = report is not None and bool(report.turn_ids) and not report.already_forgotten
            again = start_over(replication, forgotten=forgotten)
        finally:
            lock.release()
    assert report is not None  # the forget raised otherwise
    _log(env, report)
    if again.get("resumed") is False:
        print(f"anima: note: Litestream did not take {env.db_path} back after the forget ({again['why_not_resumed']}); "
              "restart anima-litestream.service", file=sys.stderr)
    scrubbed = {"replica_scrubbed": again["replica_scrubbed"]} if again.get("replica_scrubbed") is not None else {}
    return {**report.to_json(), **scrubbed}


def _log(env: CliEnv, report: forgetting.ForgetReport) -> None:
    from daemon.logs import configure_logging, get_logger

    configure_logging(env.settings.log.format, env.settings.log.level)
    get_logger().info("memory.forgotten", actor="cli", turns=len(report.turn_ids), **report.counts(),
                      already_forgotten=report.already_forgotten, wal_truncated=report.wal_truncated)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("anima", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


def _request_path(chosen: forgetting.Selection) -> str:
    if chosen.turn_id is not None:
        return "/v1/turns/" + urllib.parse.quote(chosen.turn_id, safe="")
    if chosen.everything:
        return "/v1/turns?all=true"
    query = {k: repr(v) for k, v in (("since", chosen.since), ("until", chosen.until)) if v is not None
             and abs(v) != float("inf")}
    return "/v1/turns?" + urllib.parse.urlencode(query)


def _via_daemon(env: CliEnv, chosen: forgetting.Selection) -> dict[str, Any]:
    from daemon.api.listen import socket_path

    path = str(socket_path(env.settings.api, env.db_path, os.environ))
    if not Path(path).exists():
        raise StoreError(f"a daemon holds {env.db_path} but its socket {path} does not exist; "
                         "stop the daemon (or finish the restore) and run anima forget again")
    conn = _UnixConnection(path, API_TIMEOUT_S)
    try:
        conn.request("DELETE", _request_path(chosen))
        response = conn.getresponse()
        status, raw = response.status, response.read()
    except OSError as exc:
        raise StoreError(f"a daemon holds {env.db_path} but its socket {path} did not answer "
                         f"({type(exc).__name__}); is it still starting? try again") from None
    finally:
        conn.close()
    try:
        body = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise StoreError(f"the daemon answered {status} with a body that is not JSON") from None
    if status == 200:
        return dict(body)
    message = body.get("error", {}).get("message", f"status {status}") if isinstance(body, dict) else str(status)
    error: type[AnimaError] = NotFoundError if status == 404 else InputError if status < 500 else StoreError
    raise error(f"the daemon refused: {message}")
