"""`anima ingest FILE.jsonl`: import chat history (ts, turn_id, role, text) with batched embedding and a progress bar."""

from __future__ import annotations

import argparse

from daemon.cli.env import CliEnv
from daemon.cli.exclusive import exclusive
from engine.memory.embed import make_embedder
from engine.memory.importer import import_history, progress_bar
from engine.usecases.oplog import note_cli_write


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ingest", help="import a history.jsonl file (all lines or none)")
    parser.add_argument("file", help="JSON Lines: {ts, turn_id, role: user|companion, text[, salience]}")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--defer-embedding", action="store_true",
                        help="commit the messages without vectors (keyword-searchable at once); the daemon indexes "
                             "them when it runs, or run `anima reembed --pending`")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    with exclusive(env.db_path, "ingest"):  # never beside a running daemon (daemon/cli/exclusive.py)
        conn = env.open_db()
        try:
            embedder = make_embedder(env.settings.memory, foreground=True)
            summary = import_history(conn, embedder, args.file, env.clock.now(),
                                     max_text_chars=env.settings.memory.max_text_chars, progress=progress_bar(),
                                     embed=not args.defer_embedding)
            # Counts only: the daemon logs it as history.ingested (the CLI has no log of its own).
            note_cli_write(conn, env.clock.now(), "ingest", turns=summary["turns"],
                           messages=summary["messages"], new_memories=summary["new_memories"],
                           vectors_pending=summary["vectors_pending"])
        finally:
            conn.close()
    if args.json:
        env.print_json(summary)
    else:
        rate = f" ({summary['messages_per_s']} messages/s)" if summary["messages_per_s"] is not None else ""
        print(f"imported {summary['turns']} turns, {summary['messages']} messages "
              f"({summary['new_memories']} new, {summary['skipped_existing']} already there) "
              f"in {summary['seconds']} s{rate}")
        if summary["vectors_pending"]:
            print(f"{summary['vectors_pending']} memories wait for vectors: the daemon indexes them when it runs, "
                  "or run: anima reembed --pending")
    return 0
