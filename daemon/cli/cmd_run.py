"""`anima run`: the daemon in the foreground (what systemd starts); `--dir DIR` serves every companion of a directory."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from daemon.cli.env import CliEnv
from daemon.logs import configure_logging
from engine.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run the daemon in the foreground")
    parser.add_argument("--dir", default=None,
                        help="serve every <handle>.db in this directory (default: [daemon] companions_dir; "
                             "neither = the one --db file)")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    configure_logging(env.settings.log.format, env.settings.log.level)
    folder = args.dir or env.settings.daemon.companions_dir
    if folder:
        if getattr(args, "db", None):
            raise InputError("anima run: pass --db (one companion) or --dir (a companions directory), not both")
        from daemon.host import Host

        host = Host(env.settings, Path(folder), env.clock, env.config_file)
        return asyncio.run(host.run())
    from daemon.app import Daemon

    daemon = Daemon(env.settings, env.db_path, env.clock, env.config_file)
    return asyncio.run(daemon.run())
