"""Chaos for the HTTP API against a real daemon on its Unix socket: a fuzz battery and an idle-connection flood; JSON out.

run_fuzz(n): starts `python -m daemon run` on a fresh database (heartbeat 1 h, so nothing but the
requests writes), then sends n requests generated from the OpenAPI contract (valid bodies drawn from
each operation's schema, then mutated: a required field dropped, a wrong type, an unknown field, an
over-long string) and hostile bytes (lone surrogates, huge and infinite numbers, deep nesting, bad
UTF-8 and UTF-16, fake gzip, wrong or missing Content-Type, truncated bodies, non-ASCII digits and
surrogates in the query, odd path values, ts of 1970/2099/no offset, malformed HTTP on a raw socket,
clients that vanish mid-body). It counts statuses (5xx must be 0) and proves that rejected requests
change nothing: SQLite's `PRAGMA data_version` (read on the bench's own connection) says whether any
connection committed while the request ran, and every table is hashed (engine.snapshot.table_digests)
at each new version and whenever a rejected request coincided with a commit; after an accepted write
the bench waits for the vector indexer to finish so its commits are not charged to the next request.

run_idle_connections(n): starts the daemon with RLIMIT_NOFILE 1024, opens n connections that send
nothing and holds them, then times GET /v1/health on a fresh connection (must answer within 1 s),
and reports the daemon's log size (must stay under 1 MB) and what the connection gate did.

Usage: python bench/chaos_http.py [--fuzz 10000] [--idle 1100] [--nofile 1024] [--seed 11] [--only fuzz|idle]
The lead's bench/chaos.py driver calls run_fuzz() and run_idle_connections() directly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api import validation  # noqa: E402
from engine.snapshot import table_digests  # noqa: E402

DOC = validation.document()
SCHEMAS = DOC["components"]["schemas"]
OPERATIONS = sorted(validation.operations().values(), key=lambda o: (o.path, o.method))
WORDS = ["今天", "下雨", "我的猫", "芝麻", "生病", "湖边", "散步", "白鹭", "工作", "面试", "好累", "开心", "abc", "XYZ",
         "019", "！", "？", "。", " ", "\n", "\"", "\\", "😀"]
JSON_CT = {"Content-Type": "application/json"}
CANARY = "CANARY-chaos-77c1"  # planted in every hostile request; the daemon's log must never contain it


# ------------------------------------------------------------------------------------------------ the daemon


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    root: Path
    db: Path
    socket_path: str
    log_path: Path

    def log_bytes(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


def start_daemon(root: Path, *, nofile: int | None = None, config_extra: str = "", ready_s: float = 120) -> Daemon:
    """`python -m daemon run` on root/anima.db with its socket beside it; returns once /v1/health answers."""
    db = root / "anima.db"
    socket_path = str(root / "anima.db.sock")
    config = root / "config.toml"
    config.write_text(f"[heartbeat]\ninterval_s = 3600\n[log]\nlevel = \"info\"\n{config_extra}", encoding="utf-8")
    log_path = root / "daemon.log"

    def limit_fds() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                                stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=REPO, preexec_fn=limit_fds)
    daemon = Daemon(proc, root, db, socket_path, log_path)
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited {proc.returncode}: {log_path.read_text(errors='replace')[-2000:]}")
        if os.path.exists(socket_path) and _health_ok(socket_path):
            return daemon
        time.sleep(0.2)
    daemon.stop()
    raise RuntimeError("daemon did not answer /v1/health in time")


def _health_ok(path: str, timeout: float = 2.0) -> bool:
    try:
        status, _ = raw_request(path, b"GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", timeout)
    except OSError:
        return False
    return status == 200


def raw_request(path: str, data: bytes, timeout: float = 10.0, *, vanish: bool = False) -> tuple[int, bytes]:
    """Send bytes on a fresh Unix-socket connection; (status, body) of the answer, 0 when none came."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        with contextlib.suppress(OSError):
            sock.sendall(data)
        if vanish:
            return 0, b""
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    response = b"".join(chunks)
    if not response.startswith(b"HTTP/"):
        return 0, response
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


# ------------------------------------------------------------------------------------------------ generation


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def text(rng: random.Random, max_words: int = 6) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(1, max_words)))


def from_schema(rng: random.Random, schema: dict[str, Any], depth: int = 0) -> Any:
    """A value drawn from the subset of JSON Schema the contract uses (valid most of the time)."""
    schema = resolve(schema)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema and "properties" not in schema:
            return from_schema(rng, rng.choice(schema[key]), depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "null":
        return None
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", -1000)), int(schema.get("maximum", 10**6)))
    if kind == "number":
        return rng.uniform(float(schema.get("minimum", -1e6)), float(schema.get("maximum", 1e6)))
    if kind == "string":
        if schema is SCHEMAS.get("Timestamp"):
            day = rng.randint(1, 28)
            return f"2026-05-{day:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00+08:00"
        if schema is SCHEMAS.get("TurnId"):
            return f"fz{rng.randint(0, 400)}"
        value = text(rng)
        return value[: schema.get("maxLength", 10**9)] or "x"
    if kind == "array":
        return [from_schema(rng, schema.get("items", {}), depth + 1) for _ in range(rng.randint(0, 3))]
    props = schema.get("properties", {})
    required = list(schema.get("required", []))
    if "anyOf" in schema:  # TurnRequest: at least one of user/companion
        required += [rng.choice(sorted(schema["anyOf"][0]["required"] + schema["anyOf"][1]["required"]))]
    if depth > 3 or not props:
        return {text(rng, 2): text(rng, 2) for _ in range(rng.randint(0, 2))}
    out = {p: from_schema(rng, props[p], depth + 1) for p in required if p in props}
    for p in props:
        if p not in out and rng.random() < 0.5:
            out[p] = from_schema(rng, props[p], depth + 1)
    return out


def mutate(rng: random.Random, body: Any) -> Any:
    if not isinstance(body, dict) or not body:
        return rng.choice([None, 1, "x", [], {"a": 1}])
    key = rng.choice(sorted(body))
    roll = rng.randrange(5)
    if roll == 0:
        return {k: v for k, v in body.items() if k != key}
    if roll == 1:
        return {**body, key: rng.choice([None, True, 12, -1.5, "x", [], {}, [1, 2]])}
    if roll == 2:
        return {**body, "x_" + text(rng, 1): 1}
    if roll == 3:
        return {**body, key: "长" * 9000}
    return {**body, key: {"nested": body[key]}}


@dataclass
class Case:
    kind: str
    method: str
    path: str
    body: bytes | None = None
    headers: dict[str, str] | None = None
    raw: bytes | None = None  # sent as is on a raw socket
    vanish: bool = False


def pick_path(rng: random.Random, op: validation.Operation) -> str:
    path = op.path
    for param in ("share_id", "key"):
        if "{" + param + "}" in path:
            value = rng.choice(["sharing", "life", "nope", "sh_0", "..", "%00", "a" * 70, "芝麻", "%ED%A0%80",
                                text(rng, 2)])
            path = path.replace("{" + param + "}", value if "%" in value else urllib.parse.quote(value, safe=""))
    return path


HOSTILE_JSON = [
    b'{"turn_id": "h1", "user": "\\ud800", "ts": "2026-05-28T20:00:00+08:00"}',
    b'{"turn_id": "h1", "companion": "\\udfff\\ud800", "ts": "2026-05-28T20:00:00+08:00"}',
    b'{"query": "\\ud83d"}',
    b'{"query": "x", "budget": 1e999}',
    b'{"query": "x", "budget": ' + b"9" * 5000 + b"}",
    b'{"query": "x", "budget": -0.0}',
    b'{"query": NaN}',
    b'{"query": Infinity}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b'{"turn_id": "h2", "user": "a\\u0000b", "ts": "2026-05-28T20:00:00+08:00"}',
    b'{"turn_id": "h3", "user": "x", "ts": "1970-01-01T00:00:00Z"}',
    b'{"turn_id": "h3", "user": "x", "ts": "2099-01-01T00:00:00+08:00"}',
    b'{"turn_id": "h3", "user": "x", "ts": "2026-05-28T20:00:00"}',
    b'{"turn_id": "h3", "user": "x", "ts": "\xef\xbc\x92026-05-28T20:00:00Z"}',
    b'{"turn_id": "h4", "user": "x", "ts": 1780000000}',
    b"\xff\xfe{\x00}\x00",
    b'{"query": "\xc3\x28"}',
    b'{"query": "caf\xe9"}',
    b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
    b'{"query": "x"}{"query": "y"}',
    b'{"query": "x",}',
    b'{"turn_id": "h5", "turn_id": "h6", "user": "x", "ts": "2026-05-28T20:00:00+08:00", "salience": 2}',
    b"null",
    b"true",
    b'"just a string"',
]
BAD_HEADERS = [
    {"Content-Type": "text/plain"},
    {"Content-Type": "application/x-www-form-urlencoded"},
    {"Content-Type": "application/json; charset=latin-1"},
    {"Content-Type": "application/json", "Content-Encoding": "gzip"},
    {"Content-Type": "application/json", "Content-Encoding": "br"},
    {"Content-Type": "application/json", "Content-Encoding": "deflate, gzip"},
    {"Content-Type": "multipart/form-data; boundary=x"},
]
QUERIES = ["limit=²", "limit=٣", "limit=１２", "limit=0", "limit=1001", "limit=-1", "limit=" + "9" * 40,
           "since=１２３", "since=%ED%A0%80", "since=nan", "since=inf", "since=1e999", "since=2026-01-01T00:00:00",
           "since=" + "1" * 5000, "limit=5&limit=6", "since=%00", "other=%FF%FE"]
MALFORMED = [
    b"GARBAGE\r\n\r\n", b"GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n", b"POST /v1/turns HTTP/1.1\r\nContent-Length: x\r\n\r\n",
    b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZ\r\n"
    b"{}\r\n0\r\n\r\n",
    b"GET /v1/health HTTP/9.9\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\n\r\n", b"POST /v1/turns HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nxx",
    b"POST /v1/turns HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nxxxxx",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: a\r\n" % i for i in range(200)) + b"\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
]


def make_case(rng: random.Random) -> Case:
    roll = rng.randrange(100)
    op = rng.choice(OPERATIONS)
    path = pick_path(rng, op)
    if roll < 4:
        data = rng.choice(MALFORMED)
        data = data.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nX-Chat: " + CANARY.encode() + b"\r\n", 1)
        data = data.replace(b"GARBAGE", b"GARBAGE-" + CANARY.encode())
        if rng.random() < 0.5:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        return Case("malformed_http", "RAW", "-", raw=data + b"\r\n\r\n")
    if roll < 6:  # a client that sends half a body and goes away
        body = json.dumps(from_schema(rng, op.request_schema or {"type": "object"}), ensure_ascii=False).encode()
        head = (f"POST {op.path if '{' not in op.path else path} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json"
                f"\r\nContent-Length: {len(body) + 50}\r\n\r\n").encode()
        return Case("vanishing_client", "RAW", "-", raw=head + body[: len(body) // 2], vanish=True)
    if roll < 10:
        method = rng.choice(["DELETE", "PATCH", "PUT", "POST", "GET", "OPTIONS", "TRACE"])
        return Case("unknown_route", method, "/v1/" + urllib.parse.quote(text(rng, 2), safe=""),
                    body=rng.choice([None, b"{}", b"\x00\x01"]), headers=JSON_CT)
    if roll < 16:
        return Case("hostile_query", "GET", "/v1/life?" + rng.choice(QUERIES))
    if op.request_schema is None and rng.random() < 0.8:  # most of the battery goes to the operations with bodies
        op = rng.choice([o for o in OPERATIONS if o.request_schema is not None])
        path = pick_path(rng, op)
    if op.request_schema is None:
        return Case("no_body_op", op.method, path, body=rng.choice([None, None, b"{}"]), headers=JSON_CT)
    if roll < 30:
        hostile = rng.choice(HOSTILE_JSON).replace(b'"x"', b'"' + CANARY.encode() + b'"')
        return Case("hostile_json", op.method, path, body=hostile, headers=JSON_CT)
    valid = from_schema(rng, op.request_schema)
    encoded = json.dumps(valid, ensure_ascii=False).encode()
    if roll < 38:
        return Case("bad_headers", op.method, path, body=encoded, headers=rng.choice(BAD_HEADERS))
    if roll < 42:
        return Case("missing_content_type", op.method, path, body=encoded, headers={})
    if roll < 50:
        return Case("truncated_body", op.method, path, body=encoded[: rng.randint(0, max(0, len(encoded) - 1))],
                    headers=JSON_CT)
    if roll < 54:
        return Case("bad_utf8", op.method, path, body=encoded.replace(b'"', b'"\xff', 1), headers=JSON_CT)
    if roll < 56:
        return Case("utf16", op.method, path, body=json.dumps(valid).encode("utf-16"), headers=JSON_CT)
    if roll < 80:
        return Case("mutated", op.method, path, body=json.dumps(mutate(rng, valid), ensure_ascii=False).encode(),
                    headers=JSON_CT)
    return Case("valid", op.method, path, body=encoded, headers=JSON_CT)


# ------------------------------------------------------------------------------------------------ fuzz


class StateWitness:
    """Did anything change in the database? data_version per request, full table digests at each new version."""

    def __init__(self, db: Path):
        self.conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
        self.version = self._version()
        self.digests = table_digests(self.conn)
        self.hashes = 1

    def _version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def refresh(self) -> None:
        version = self._version()
        if version != self.version:
            self.version = version
            self.digests = table_digests(self.conn)
            self.hashes += 1

    def changed_since_refresh(self) -> list[str]:
        """Tables whose content differs from the last refresh (hashes again only if something committed)."""
        if self._version() == self.version:
            return []
        now = table_digests(self.conn)
        self.hashes += 1
        return sorted(t for t in set(now) | set(self.digests) if now.get(t) != self.digests.get(t))

    def close(self) -> None:
        self.conn.close()


async def _wait_indexed(session: aiohttp.ClientSession, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        async with session.get("http://anima/v1/health") as resp:
            body = await resp.json(content_type=None)
        if not body.get("vectors_pending"):
            return
        await asyncio.sleep(0.02)


async def _send(session: aiohttp.ClientSession, case: Case) -> tuple[int, Any]:
    headers = dict(case.headers or {})
    skip = ["Content-Type"] if "Content-Type" not in headers else []
    async with session.request(case.method, "http://anima" + case.path, data=case.body, headers=headers,
                               skip_auto_headers=skip) as resp:
        data = await resp.read()
        try:
            return resp.status, json.loads(data) if data else None
        except ValueError:
            return resp.status, data[:200]


def _error_shaped(body: Any) -> bool:
    return (isinstance(body, dict) and set(body) == {"error"} and isinstance(body["error"], dict)
            and set(body["error"]) == {"code", "message"})


async def _fuzz(daemon: Daemon, n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    witness = StateWitness(daemon.db)
    statuses: dict[str, int] = {}
    kinds: dict[str, int] = {}
    by_kind: dict[str, dict[str, int]] = {}
    examples_5xx: list[dict[str, Any]] = []
    not_error_shaped: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    rejected = 0
    started = time.monotonic()
    connector = aiohttp.UnixConnector(path=daemon.socket_path, limit=4)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        for i in range(n):
            case = make_case(rng)
            kinds[case.kind] = kinds.get(case.kind, 0) + 1
            witness.refresh()
            if case.raw is not None:
                status, raw_body = await asyncio.to_thread(raw_request, daemon.socket_path, case.raw, 15.0,
                                                           vanish=case.vanish)
                try:
                    body: Any = json.loads(raw_body) if raw_body else None
                except ValueError:
                    body = raw_body[:200]
            else:
                try:
                    status, body = await _send(session, case)
                except (TimeoutError, aiohttp.ClientError) as exc:
                    status, body = 0, type(exc).__name__
            if case.vanish:
                await asyncio.sleep(0.05)  # let the daemon notice and settle before the state check
            bucket = f"{status // 100}xx" if status else "no_answer"
            statuses[bucket] = statuses.get(bucket, 0) + 1
            by_kind.setdefault(case.kind, {})[bucket] = by_kind.setdefault(case.kind, {}).get(bucket, 0) + 1
            if status >= 500 and len(examples_5xx) < 10:
                examples_5xx.append({"i": i, "kind": case.kind, "method": case.method, "path": case.path[:80],
                                     "status": status, "body": str(body)[:200]})
            if status >= 400 and not _error_shaped(body) and len(not_error_shaped) < 10:
                not_error_shaped.append({"i": i, "kind": case.kind, "status": status, "body": str(body)[:120]})
            if status >= 400 or case.vanish or status == 0:
                rejected += 1
                changed = witness.changed_since_refresh()
                if changed:
                    changes.append({"i": i, "kind": case.kind, "status": status, "tables": changed})
            elif case.method in ("POST", "PUT", "DELETE"):
                await _wait_indexed(session)  # the indexer's commits belong to this accepted write
        async with session.get("http://anima/v1/health") as resp:
            health_status = resp.status
    witness.close()
    elapsed = time.monotonic() - started
    return {
        "requests": n, "seed": seed, "seconds": round(elapsed, 1), "requests_per_s": round(n / elapsed, 1),
        "statuses": dict(sorted(statuses.items())), "count_5xx": statuses.get("5xx", 0),
        "no_answer": statuses.get("no_answer", 0) - kinds.get("vanishing_client", 0),
        "kinds": {k: by_kind[k] for k in sorted(by_kind)}, "rejected": rejected, "rejected_that_changed_state": len(changes),
        "state_changes": changes[:10], "table_hashes": witness.hashes, "examples_5xx": examples_5xx,
        "errors_not_in_error_shape": not_error_shaped, "health_after": health_status,
    }


def run_fuzz(n: int = 10_000, *, seed: int = 11, root: Path | None = None) -> dict[str, Any]:
    """The fuzz battery against a real daemon; see the module docstring. Returns the figures as a dict."""
    with tempfile.TemporaryDirectory(prefix="chaos-http-", dir="/tmp") as tmp:
        base = root or Path(tmp)
        daemon = start_daemon(base)
        try:
            out = asyncio.run(_fuzz(daemon, n, seed))
        finally:
            out_code = daemon.stop()
        log_text = daemon.log_path.read_text(errors="replace")
        out.update({
            "daemon_exit": out_code, "log_bytes": daemon.log_bytes(),
            "log_tracebacks": log_text.count("Traceback"),
            "log_error_lines": sum(1 for line in log_text.splitlines() if "level=error" in line),
            "log_api_failed": log_text.count("api.failed"),
            "log_canary_hits": log_text.count(CANARY),
        })
        return out


# ------------------------------------------------------------------------------------------------ idle flood


def open_idle(path: str, n: int, within_s: float) -> tuple[list[socket.socket], int]:
    """n connected client sockets that never send a byte, and how many could not connect within `within_s`.

    A Unix socket's non-blocking connect() fails with EAGAIN while the listen backlog is full (it is not
    "in progress" as on TCP), so each is retried until the daemon has accepted enough to make room.
    """
    pending = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
    for sock in pending:
        sock.setblocking(False)
    connected: list[socket.socket] = []
    deadline = time.monotonic() + within_s
    while pending and time.monotonic() < deadline:
        waiting = []
        for sock in pending:
            try:
                sock.connect(path)
            except OSError:  # EAGAIN while the backlog is full, EINTR: try again next round
                waiting.append(sock)
            else:
                connected.append(sock)
        pending = waiting
        if pending:
            time.sleep(0.005)
    for sock in pending:
        sock.close()
    return connected, len(pending)


def run_idle_connections(n: int = 1100, *, nofile: int = 1024, root: Path | None = None,
                         health_within_s: float = 1.0, hold_s: float = 3.0,
                         connect_within_s: float = 10.0) -> dict[str, Any]:
    """n silent connections held open against a daemon at RLIMIT_NOFILE `nofile`; then time /v1/health."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:  # the bench itself holds n sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    with tempfile.TemporaryDirectory(prefix="chaos-idle-", dir="/tmp") as tmp:
        base = root or Path(tmp)
        daemon = start_daemon(base, nofile=nofile)
        held: list[socket.socket] = []
        try:
            log_before = daemon.log_bytes()
            started = time.monotonic()
            held, refused = open_idle(daemon.socket_path, n, connect_within_s)
            opened_s = time.monotonic() - started
            time.sleep(hold_s)  # let the daemon chew on the flood
            t0 = time.monotonic()
            try:
                status, body = raw_request(daemon.socket_path,
                                           b"GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                                           timeout=max(health_within_s, 5.0))
            except OSError as exc:
                status, body = 0, type(exc).__name__.encode()
            health_s = time.monotonic() - t0
            alive = daemon.proc.poll() is None
            closed_by_daemon = 0
            for sock in held:
                try:
                    if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        closed_by_daemon += 1  # EOF: the gate closed it as the oldest idle connection
                except BlockingIOError:
                    pass  # still open, silent on both sides
                except OSError:
                    closed_by_daemon += 1
            second_t0 = time.monotonic()
            second_status, _ = raw_request(daemon.socket_path,
                                           b"GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5.0)
            second_s = time.monotonic() - second_t0
            log_during = daemon.log_bytes() - log_before
        finally:
            for sock in held:
                sock.close()
            exit_code = daemon.stop()
        log_text = daemon.log_path.read_text(errors="replace")
        return {
            "connections": n, "nofile": nofile, "connected": len(held), "not_connected_in_time": refused,
            "open_seconds": round(opened_s, 2), "hold_seconds": hold_s,
            "health_status": status, "health_seconds": round(health_s, 3),
            "health_within_limit": status == 200 and health_s <= health_within_s,
            "second_health_status": second_status, "second_health_seconds": round(second_s, 3),
            "closed_by_daemon": closed_by_daemon, "daemon_alive": alive, "daemon_exit": exit_code,
            "log_bytes_during": log_during, "log_bytes_total": daemon.log_bytes(),
            "log_under_1mb": daemon.log_bytes() < 1_000_000,
            "log_tracebacks": log_text.count("Traceback"),
            "accept_failed_lines": log_text.count("api.accept_failed"),
            "connection_shed_lines": log_text.count("api.connection_shed"),
            "health_body": body[:200].decode(errors="replace") if status != 200 else None,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fuzz", type=int, default=10_000)
    parser.add_argument("--idle", type=int, default=1100)
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", choices=["fuzz", "idle"])
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.only in (None, "idle"):
        out["idle_connections"] = run_idle_connections(args.idle, nofile=args.nofile)
    if args.only in (None, "fuzz"):
        out["fuzz"] = run_fuzz(args.fuzz, seed=args.seed)
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
