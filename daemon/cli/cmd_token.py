"""`anima token`: make (or replace) her API bearer token, printed once; `--revoke` removes it. Only its sha256 is stored.

The token lives in her own file (engine/store/tokens.py), so it moves with her: `--db FILE` for a file
served on its own, `--dir DIR --id HANDLE` for DIR/HANDLE.db of a companions directory. A running
daemon reads it at her next heartbeat; from then on every request to her paths needs
`Authorization: Bearer <token>` (daemon/api/companions.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from daemon.cli.env import CliEnv
from daemon.registry import valid_handle
from engine.errors import InputError
from engine.usecases.tokens import issue_token, revoke


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("token", help="make, replace or revoke her API bearer token (printed once)")
    parser.add_argument("--db", dest="token_db", help="her database file (default: the global --db / config)")
    parser.add_argument("--dir", dest="token_dir", help="a companions directory (with --id): the file DIR/ID.db")
    parser.add_argument("--id", dest="token_id", help="her handle in --dir")
    parser.add_argument("--revoke", action="store_true", help="remove her token: her paths are open again")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def target_file(args: argparse.Namespace, env: CliEnv) -> Path:
    """The file whose token is made: --dir/--id, else --db, else the global database (InputError when unclear)."""
    if args.token_dir or args.token_id:
        if not (args.token_dir and args.token_id):
            raise InputError("token: give --dir DIR and --id HANDLE together (or --db FILE)")
        if args.token_db:
            raise InputError("token: give --db FILE or --dir DIR --id HANDLE, not both")
        if not valid_handle(args.token_id):
            raise InputError(f"token: --id {args.token_id[:70]!r} is not a handle: lowercase letters, digits, "
                             "'_' and '-', starting with a letter or digit, at most 64 characters")
        return Path(args.token_dir) / f"{args.token_id}.db"
    return Path(args.token_db) if args.token_db else env.db_path


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    path = target_file(args, env)
    if not path.is_file():
        raise InputError(f"token: {path} does not exist; create her first with anima init")
    conn = dataclasses.replace(env, db_path=path).open_db(create=False)
    try:
        if args.revoke:
            removed = revoke(conn, env.clock.now(), str(path))
        else:
            token, replaced = issue_token(conn, env.clock.now(), str(path))
    finally:
        conn.close()
    if args.revoke:
        if args.json:
            env.print_json({"db": str(path), "revoked": removed})
        else:
            print(f"revoked {removed} token(s) of {path}" if removed else f"{path} has no token; nothing changed")
        return 0
    if args.json:
        env.print_json({"db": str(path), "token": token, "replaced": replaced})
    else:
        print(token)
        note = "replaced her previous token (it stops working); " if replaced else ""
        print(f"anima: {note}only its sha256 is stored in {path}; this is the one time it is shown. A running daemon "
              "asks for it from her next heartbeat: send 'Authorization: Bearer <token>'", file=sys.stderr)
    return 0
