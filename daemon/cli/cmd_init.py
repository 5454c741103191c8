"""`anima init`: create her (name, birth instant, time zone, place; her city, zone and role) in a new database, or as HANDLE in a companions directory."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from daemon.cli.env import CliEnv
from daemon.registry import HANDLE_PATTERN, valid_handle
from engine.companion import create_companion
from engine.errors import InputError
from engine.home import Home, choose_home
from engine.life.place import cities
from engine.life.week import role
from engine.usecases.files import open_new, set_handle

DEFAULT_BIRTH_TZ = "Asia/Shanghai"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("init", help="create the companion: name, birth instant, time zone")
    parser.add_argument("--name", required=True)
    parser.add_argument("--birth", required=True, help='local birth time "YYYY-MM-DD HH:MM"')
    parser.add_argument("--tz", default=None, help="IANA time zone of the birth (default Asia/Shanghai); without "
                        "--city also where she lives (a city of her world in that zone)")
    parser.add_argument("--place", default=None, help="birth place; a city of her world is also where she lives")
    parser.add_argument("--city", default=None, help="her home city (engine/life/data/cities.toml; default [life] city)")
    parser.add_argument("--role", default=None, help="her work, e.g. 插画师 程序员 中学老师 护士 "
                        "(engine/life/data/roles.toml; default [life] role)")
    parser.add_argument("--dir", default=None, help="companions directory: create DIR/HANDLE.db (with --id)")
    parser.add_argument("--id", dest="handle", default=None, help="her handle in that directory (with --dir)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def _home(args: argparse.Namespace, env: CliEnv) -> Home:
    """Her home from --city/--place/--tz/--role, checked before anything is written (InputError: exit 2)."""
    city_name = args.city
    if city_name is None and args.place in cities():
        city_name = args.place
    return choose_home(env.settings, city_name=city_name, tz=args.tz, role_name=args.role)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    home = _home(args, env)
    if args.tz is None:
        args.tz = DEFAULT_BIRTH_TZ
    if args.dir is not None or args.handle is not None:
        companion, db_path = _init_in_directory(args, env, home)
    else:
        conn = env.open_db()
        try:
            companion = create_companion(conn, name=args.name, birth_local=args.birth, tz=args.tz, place=args.place,
                                         sect=env.settings.companion.bazi_sect, now=env.clock.now(), home=home)
        finally:
            conn.close()
        db_path = env.db_path
    pillars = companion["chart"].get("pillars", {})
    if args.json:
        out = {"name": companion["name"], "db": str(db_path), "chart": companion["chart"], "home": home.to_dict()}
        if args.handle is not None:
            out["handle"] = args.handle
        env.print_json(out)
    else:
        four = " ".join(pillars.get(k, "?") for k in ("year", "month", "day", "time"))
        print(f"created {companion['name']} in {db_path}: {four}, day master {companion['chart'].get('day_master')}; "
              f"lives in {home.city} ({home.tz}), {role(home.role).title}")
    return 0


def _init_in_directory(args: argparse.Namespace, env: CliEnv, home: Home) -> tuple[dict, Path]:
    """Create DIR/HANDLE.db whole or not at all: built under a name the host ignores, then linked into place.

    A running host watching the directory must never see a half-made companion, and an existing file is
    never overwritten (os.link refuses an existing name atomically, where a rename would replace it).
    """
    if args.dir is None or args.handle is None:
        raise InputError("--dir and --id go together (a companions directory and her handle in it)")
    if getattr(args, "db", None):
        raise InputError("pass --db (one file) or --dir/--id (a companions directory), not both")
    if not valid_handle(args.handle):
        raise InputError(f"--id {args.handle!r} is not a valid handle; it must match "
                         f"{HANDLE_PATTERN.pattern} (lower-case letters, digits, - and _)")
    folder = Path(args.dir)
    if not folder.is_dir():
        raise InputError(f"companions directory {folder} does not exist; create it first (mkdir -p)")
    final = folder / f"{args.handle}.db"
    if final.exists():
        raise InputError(f"{final} already exists; she is there already (pick another --id)")
    temp = folder / f".{args.handle}.db.{os.getpid()}.init"
    try:
        conn = open_new(temp)
        try:
            companion = create_companion(conn, name=args.name, birth_local=args.birth, tz=args.tz, place=args.place,
                                         sect=env.settings.companion.bazi_sect, now=env.clock.now(), home=home)
            set_handle(conn, args.handle)
            companion["handle"] = args.handle
        finally:
            conn.close()
        try:
            os.link(temp, final)
        except FileExistsError:
            raise InputError(f"{final} already exists; she is there already (pick another --id)") from None
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return companion, final
