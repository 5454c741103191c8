"""Forget under Litestream replication: take her file out of Litestream's hands, forget, then start her replica over.

Why: Litestream holds a read transaction on the file it replicates, so the forget's `wal_checkpoint(TRUNCATE)`
was always busy and the forgotten text stayed in `-wal` until the daemon stopped; and every LTX file it had
shipped (locally in `.<file>-litestream/`, remotely under `<URL>/<handle>`) still held the old pages, so a
point-in-time restore brought the turn back (issue 25, defect 1).

How, through the control socket the litestream.yml enables (daemon/replication.py):
1. `litestream unregister DB`: Litestream does its final sync and lets go of the file (its read transaction
   ends), so the forget's WAL truncation succeeds;
2. the forget runs (one transaction, secure_delete, then TRUNCATE);
3. her history is cut at the forget: the local LTX state and every file of her replica are deleted, so no
   generation from before the forget remains for a restore to reach (`--at` a time before the forget is
   then refused: the replica starts at the forget);
4. `litestream register DB -replica URL`: replication starts over with a fresh snapshot of the file as it
   is after the forget. Writes made meanwhile are in that snapshot (nothing acknowledged is lost). If
   Litestream does not answer (it was stopped, its socket is stale), the forget still stands and is
   reported; the `replication.not_resumed` warning says to restart anima-litestream.service.
Until anima-litestream restarts, the re-registered file replicates with Litestream's default intervals
(1 s) instead of the litestream.yml's: `register` takes only the URL.

A file:// replica's folder is deleted; an s3:// replica's objects under `<URL>/<handle>/` are deleted with
boto3 (the optional `s3` extra, Apache-2.0), with Litestream's own credentials (litestream.env). Without
boto3, or when the store refuses, the report says `replica_scrubbed: false` and the operator deletes
`<URL>/<handle>/` with the bucket's tools (README "Replication"). A versioned bucket keeps old versions:
its lifecycle must expire them. A file not named by the litestream.yml,
or a litestream.yml without a control socket, is not replicated as far as this module knows: nothing to do.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.replication import ReplicaUrl, _run, litestream_env, replica_url_of, socket_of_config
from engine.errors import StoreError
from engine.store.lock import real_path

DEFAULT_CONFIG = Path("/etc/anima/litestream.yml")
CONTROL_TIMEOUT_S = 30


@dataclass(frozen=True)
class Replication:
    """Her file as the running Litestream replicates it."""

    db: Path
    url: ReplicaUrl
    socket: Path


def config_file(environ: Mapping[str, str] = os.environ) -> Path:
    """The litestream.yml anima wrote: $ANIMA_LITESTREAM_CONFIG, else /etc/anima/litestream.yml."""
    return Path(environ.get("ANIMA_LITESTREAM_CONFIG") or DEFAULT_CONFIG)


def replication_of(db: Path, config: Path) -> Replication | None:
    """How `db` is replicated by the litestream.yml at `config`, when it names the file and has a control socket
    that a Litestream process listens on; None otherwise."""
    url = replica_url_of(db, config)
    if url is None:
        return None
    socket = socket_of_config(config.read_text(encoding="utf-8"))
    if socket is None or not socket.exists():
        return None
    return Replication(real_path(db), url, socket)


def take_out(replication: Replication | None, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Step 1: Litestream lets go of the file (final sync, read transaction ended)."""
    if replication is None:
        return {"replicated": False}
    done = _run(["unregister", "-socket", str(replication.socket), "-timeout", str(CONTROL_TIMEOUT_S),
                 str(replication.db)], CONTROL_TIMEOUT_S + 5, environ)
    # 0.5.17 can answer an error about its own local state while it does drop the file; the forget's WAL
    # truncation (wal_truncated in the report) is the check that it let go.
    return {"replicated": True, "unregistered": done.returncode == 0}


def start_over(replication: Replication | None, *, forgotten: bool,
               environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Steps 3 and 4: cut her replica's history at the forget (when something was forgotten), then replicate
    again from a fresh snapshot. Returns what was done, for the forget's report and log."""
    if replication is None:
        return {"replicated": False}
    scrubbed = False
    if forgotten:
        meta = replication.db.with_name(f".{replication.db.name}-litestream")
        shutil.rmtree(meta, ignore_errors=True)
        if replication.url.scheme == "file":
            shutil.rmtree(replication.url.location, ignore_errors=True)
            scrubbed = not Path(replication.url.location).exists()
        else:
            scrubbed = _scrub_s3(replication.url, environ)
    try:
        done = _run(["register", "-socket", str(replication.socket), "-timeout", str(CONTROL_TIMEOUT_S),
                     "-replica", replication.url.for_command(), str(replication.db)], CONTROL_TIMEOUT_S + 5, environ)
        resumed, why = done.returncode == 0, (done.stderr or done.stdout).strip()[-200:]
    except StoreError as exc:  # no answer: the forget is done all the same, and must be reported as done
        resumed, why = False, str(exc)
    return {"replicated": True, "replica_scrubbed": scrubbed if forgotten else None, "resumed": resumed,
            "why_not_resumed": None if resumed else why}


def _scrub_s3(url: ReplicaUrl, environ: Mapping[str, str]) -> bool:
    """Delete every object under the replica's prefix; True when none is left (False without boto3)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        return False
    env = litestream_env(environ)
    options = dict(url.options)
    bucket, _, prefix = url.location.partition("/")
    path_style = options.get("force-path-style", "").lower() == "true"
    try:
        client = boto3.session.Session(
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or env.get("LITESTREAM_ACCESS_KEY_ID"),
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or env.get("LITESTREAM_SECRET_ACCESS_KEY"),
            region_name=options.get("region") or env.get("AWS_REGION") or "us-east-1",
        ).client("s3", endpoint_url=options.get("endpoint") or None,
                 config=Config(s3={"addressing_style": "path"} if path_style else {}))
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/")
        for page in pages:
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        left = client.list_objects_v2(Bucket=bucket, Prefix=prefix.rstrip("/") + "/", MaxKeys=1)
        return not left.get("Contents")
    except Exception:  # unreachable store, refused credentials: reported as not scrubbed, never a failed forget
        return False
