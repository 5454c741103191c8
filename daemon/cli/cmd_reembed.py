"""`anima reembed`: rebuild every memory vector with the configured model, or (--pending) fill only missing ones.

Both run under her daemon lock (daemon/cli/exclusive.py): refused with one line next to a running
daemon, whose own indexer fills pending vectors anyway. A full rebuild embeds each distinct text once
and resumes after an interruption (engine/memory/reembed.py).
"""

from __future__ import annotations

import argparse

from daemon.cli.env import CliEnv
from daemon.cli.exclusive import exclusive
from engine.memory.embed import make_embedder
from engine.memory.importer import progress_bar
from engine.memory.indexer import index_all_pending
from engine.memory.reembed import checkpoint_path, reembed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reembed", help="re-embed all memories with the configured model")
    parser.add_argument("--pending", action="store_true",
                        help="only embed memories that have no vector yet (after anima ingest --defer-embedding)")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    with exclusive(env.db_path, "reembed"):
        conn = env.open_db(create=False)
        try:
            embedder = make_embedder(env.settings.memory, foreground=True)
            if args.pending:
                count = index_all_pending(conn, embedder, env.clock.now(), progress=progress_bar())
                print(f"embedded {count} pending memories with {embedder.name} (dim {embedder.dim})")
                return 0
            report = reembed(conn, embedder, env.clock.now(), progress=progress_bar(),
                             checkpoint=checkpoint_path(env.db_path))
        finally:
            conn.close()
    resumed = f", {report.resumed} taken from the interrupted run" if report.resumed else ""
    print(f"re-embedded {report.memories} memories ({report.distinct} distinct texts{resumed}) with "
          f"{embedder.name} (dim {embedder.dim})")
    return 0
