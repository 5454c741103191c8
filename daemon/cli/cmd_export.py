"""`anima export PATH`: a verified snapshot of the whole companion (safe while the daemon runs) plus its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from daemon.cli.env import CliEnv
from engine.snapshot import export, manifest_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="write a verified snapshot of the database and a manifest beside it")
    parser.add_argument("path", help="snapshot file to write (PATH.manifest.json is written beside it)")
    parser.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    dest = Path(args.path)
    manifest = export(env.db_path, dest, env.clock.now(), overwrite=args.force)
    if args.json:
        env.print_json({**manifest, "manifest": str(manifest_path(dest))})
        return 0
    contents = manifest["contents"]
    who = contents["companion"]["name"] if contents["companion"] else "(no companion)"
    print(f"exported {who} to {dest} ({manifest['file_bytes']} bytes, schema {manifest['schema_version']}, "
          f"integrity {manifest['integrity']})")
    print(f"  chats {contents['chats']['turns']} turns, memories {contents['memories']['episodic']}, "
          f"facts {contents['facts']['active']}, relations {contents['relations']['active']}, "
          f"life events {contents['life']['events']} ({contents['life']['told']} told)")
    print(f"  manifest {manifest_path(dest)} ({len(manifest['tables'])} tables hashed)")
    return 0
