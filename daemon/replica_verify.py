"""The periodic restore-and-verify of her replica: a backup nobody restored is a hope, not a backup.

The calendar (daemon/scheduler.py) queues a `replica_verify` job on `[maintenance] replica_verify_cron`;
the job's handler (engine/jobs/maintenance.py) calls the verifier the daemon hands it, this module's
`verify_replica`, because restoring needs the litestream binary and the replication config that only
the daemon side knows (engine never imports daemon/).

What it does is what an operator would do on a bad day, without touching her file: `litestream
restore` of her replica into a private folder beside her, then PRAGMA integrity_check, the schema
version, and her identity (the same companion uid), and how far the replica lags. A file that no
litestream.yml names is "not replicated" (the job is done, nothing to verify); a replica that cannot be
restored, is damaged or is someone else fails the job, which `anima jobs` shows and the next run retries.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from daemon.replication import check_identity, companion_of, lag_of, replica_url_of, restore_replica
from daemon.replication_forget import config_file
from engine.errors import DamagedStoreError, StoreError

RESTORE_TIMEOUT_S = 600.0


def verify_replica(db: Path, now: float, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Restore her replica into a scratch folder and check it; the report of a good one, else StoreError."""
    from engine.snapshot import inspect
    from engine.store.migrate import code_schema_version

    config = config_file(environ)
    url = replica_url_of(db, config)
    if url is None:
        return {"replicated": False, "config": str(config)}
    work = db.parent / f".{db.name}.verify-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o700)  # she is readable only by anima while she is checked
    try:
        copy = work / db.name
        restore_replica(url, copy, timeout=RESTORE_TIMEOUT_S, environ=environ)
        seen = inspect(copy)
        if seen["integrity"] != "ok":
            raise DamagedStoreError(f"the copy restored from {url} fails PRAGMA integrity_check: "
                                    f"{str(seen['integrity'])[:200]}; rebuild the replica (restart anima-litestream)")
        if seen["schema_version"] > code_schema_version():
            raise StoreError(f"replica {url} has schema version {seen['schema_version']}, newer than this anima")
        check_identity(companion_of(copy), db, url)
        restored_bytes = copy.stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lag = lag_of(db, url, environ=environ)
    return {"replicated": True, "replica": str(url), "integrity": "ok", "schema_version": seen["schema_version"],
            "bytes": restored_bytes, "tables": len(seen["tables"]), "lag_s": lag.get("lag_s")}
