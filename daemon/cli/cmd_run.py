"""`anima run`: the daemon in the foreground (what systemd starts)."""

from __future__ import annotations

import argparse
import asyncio

from daemon.cli.env import CliEnv
from daemon.logs import configure_logging


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run the daemon in the foreground")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    from daemon.app import Daemon

    configure_logging(env.settings.log.format, env.settings.log.level)
    daemon = Daemon(env.settings, env.db_path, env.clock, env.config_file)
    return asyncio.run(daemon.run())
