"""Where the API listens: the Unix socket (path, mode, group) and the optional loopback-only TCP port.

The socket is created, chmod-ed and chown-ed BEFORE listen(), so there is no moment at which it
accepts connections with looser permissions. TCP is refused at start for any non-loopback host:
the API speaks plain HTTP, and the token is only a second lock on a port nobody else can reach.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import shutil
import socket
import stat
from collections.abc import Mapping
from pathlib import Path

from engine.errors import ConfigError
from engine.settings import ApiSettings

MAX_SOCKET_PATH_BYTES = 107  # sun_path is 108 bytes on Linux, NUL included


def socket_path(api: ApiSettings, db_path: Path, environ: Mapping[str, str]) -> Path:
    """[api] socket_path, else systemd's $RUNTIME_DIRECTORY/anima.sock, else $STATE_DIRECTORY/anima.sock,
    else '<db>.sock' beside the database.

    RuntimeDirectory= comes first because with DynamicUser= the state directory sits under
    /var/lib/private (mode 0700), which a chat server in the socket's group cannot traverse.
    """
    return _chosen(api, environ) or db_path.with_name(db_path.name + ".sock")


def _chosen(api: ApiSettings, environ: Mapping[str, str]) -> Path | None:
    if api.socket_path:
        return Path(api.socket_path)
    for variable in ("RUNTIME_DIRECTORY", "STATE_DIRECTORY"):
        folder = environ.get(variable, "").split(":")[0]
        if folder:
            return Path(folder) / "anima.sock"
    return None


def bind_unix(path: Path, mode: str, group: str) -> socket.socket:
    """A bound (not yet listening) Unix stream socket at `path` with `mode` and `group` applied."""
    encoded = os.fsencode(path)
    if len(encoded) > MAX_SOCKET_PATH_BYTES:
        raise ConfigError(
            f"socket path {path} is {len(encoded)} bytes; a Unix socket path must be at most "
            f"{MAX_SOCKET_PATH_BYTES}; set [api] socket_path to a shorter path"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # no permission, a file in the way, a read-only filesystem
        raise ConfigError(f"cannot create the socket's directory {path.parent} ({exc.strerror}); create it for "
                          "the daemon's user or set [api] socket_path") from None
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ConfigError(f"{path} exists and is not a socket; move it away or set [api] socket_path")
        if _answers(path):
            raise ConfigError(f"socket {path} is in use by another process (another companion's daemon?); "
                              "set [api] socket_path to a path of its own")
        path.unlink()  # a stale socket of a previous run
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.bind(str(path))
        except OSError as exc:  # EACCES, EROFS: the folder is not ours to write in
            raise ConfigError(f"cannot create the socket {path} ({exc.strerror}); give the daemon's user write "
                              "access to its folder or set [api] socket_path") from None
        os.chmod(path, int(mode, 8))
        if group:
            try:
                shutil.chown(path, group=group)
            except LookupError:
                raise ConfigError(f"[api] socket_group {group!r} is not a group on this host; create it or "
                                  "leave socket_group empty") from None
            except PermissionError:
                raise ConfigError(f"[api] socket_group {group!r}: this user may not give the socket to that group; "
                                  "add the daemon's user to it or leave socket_group empty") from None
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                # EINVAL: the group exists but is not mapped into our user namespace (systemd's
                # PrivateUsers=yes maps only root, the service user and nobody).
                raise ConfigError(f"[api] socket_group {group!r} is not mapped into this process's user namespace "
                                  "(systemd PrivateUsers=yes); set PrivateUsers=no in a drop-in "
                                  "(see systemd/examples/socket-group.conf) or leave socket_group empty") from None
    except BaseException:
        sock.close()
        path.unlink(missing_ok=True)
        raise
    sock.setblocking(False)
    return sock


def bind_tcp(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) non-blocking TCP socket on a loopback `host`:`port`; ConfigError if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"[api] cannot listen on {host}:{port} ({exc.strerror}); pick another "
                          "tcp_port or set tcp_port = 0") from None
    sock.setblocking(False)
    return sock


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    else:
        return True
    finally:
        probe.close()


def tcp_address(api: ApiSettings, environ: Mapping[str, str]) -> tuple[str, int, str] | None:
    """(host, port, token) of the TCP listener, or None when [api] tcp_port is 0.

    Refuses (ConfigError) a non-loopback host and a missing token: the daemon does not start.
    """
    if api.tcp_port == 0:
        return None
    if not 0 < api.tcp_port < 65536:
        raise ConfigError(f"[api] tcp_port must be 1..65535 (or 0 for no TCP), got {api.tcp_port}")
    host = api.tcp_host or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"[api] tcp_host must be a loopback address such as 127.0.0.1 or ::1, got {api.tcp_host!r}; "
            "the API has no TLS: use the Unix socket, or a reverse proxy with TLS in front of a loopback port"
        )
    token = environ.get(api.token_env, "") if api.token_env else ""
    if len(token) < 16:
        raise ConfigError(
            f"[api] tcp_port is set but the bearer token in ${api.token_env or '(token_env)'} is missing or shorter "
            "than 16 characters; set it (e.g. openssl rand -hex 24) or set tcp_port = 0"
        )
    return host, api.tcp_port, token
