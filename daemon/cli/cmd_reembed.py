"""`anima reembed`: rebuild every memory vector with the configured model, or (--pending) fill only missing ones."""

from __future__ import annotations

import argparse

from daemon.cli.env import CliEnv
from engine.memory.embed import make_embedder
from engine.memory.importer import progress_bar
from engine.memory.indexer import index_all_pending
from engine.memory.reembed import reembed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reembed", help="re-embed all memories with the configured model")
    parser.add_argument("--pending", action="store_true",
                        help="only embed memories that have no vector yet (after anima ingest --defer-embedding)")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    conn = env.open_db()
    embedder = make_embedder(env.settings.memory, foreground=True)
    if args.pending:
        count = index_all_pending(conn, embedder, env.clock.now(), progress=progress_bar())
        print(f"embedded {count} pending memories with {embedder.name} (dim {embedder.dim})")
        return 0
    count = reembed(conn, embedder, env.clock.now(), progress=progress_bar())
    print(f"re-embedded {count} memories with {embedder.name} (dim {embedder.dim})")
    return 0
