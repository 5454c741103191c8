"""How far each replica lags: the files a litestream.yml names and the seconds each replica is behind.

`anima replication status`, `anima doctor` and GET /metrics all read it, so it sits below both the CLI
and the API (neither imports the other: tests/test_layering.py).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from daemon.replication import companion_files, lag_of, replicas_of_config
from engine.errors import InputError

DEFAULT_CONFIG = Path("/etc/anima/litestream.yml")


def config_path(explicit: str | None, environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The litestream.yml to read: `explicit`, else $ANIMA_LITESTREAM_CONFIG, else /etc/anima/litestream.yml."""
    return Path(explicit or environ.get("ANIMA_LITESTREAM_CONFIG") or DEFAULT_CONFIG)


def replication_rows(path: Path, folder: Path | None = None) -> list[dict[str, Any]]:
    """The lag of every file of the litestream.yml at `path` (InputError when it cannot be read); with
    `folder`, only its companions, and a row with an error for each one the file does not replicate (a
    companion added since the config was written)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read litestream config {path}: {exc.strerror}; write it with: "
                         "anima replication config --dir DIR --replica URL --out FILE") from None
    entries = replicas_of_config(text)
    if not entries:
        raise InputError(f"litestream config {path} names no database")
    missing: list[dict[str, Any]] = []
    if folder is not None:
        served = {f.absolute(): f for f in companion_files(folder)}
        entries = [(db, url) for db, url in entries if db.absolute() in served]
        named = {db.absolute() for db, _ in entries}
        missing = [{"companion": f.stem, "db": str(f), "replica": None, "lag_s": None,
                    "error": f"not replicated: {path} does not name it; regenerate it (anima replication config "
                             "--dir ... --out ...) and restart anima-litestream"}
                   for key, f in sorted(served.items()) if key not in named]
    # One `litestream ltx` per companion, mostly waiting on the replica's listing: a few at a time.
    with ThreadPoolExecutor(max_workers=8) as pool:
        lags = list(pool.map(lambda entry: lag_of(*entry), entries))
    rows = [{"companion": db.stem, **lag} for (db, _), lag in zip(entries, lags, strict=True)]
    return sorted(rows + missing, key=lambda r: r["companion"])
