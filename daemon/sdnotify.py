"""The sd_notify protocol: one datagram per message to $NOTIFY_SOCKET (READY=1, WATCHDOG=1, STATUS=, STOPPING=1).

Twenty lines of stdlib; the PyPI `sdnotify` package is unmaintained since 2017 and adds nothing.
Without NOTIFY_SOCKET (not under systemd) every call is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import socket

from engine.errors import ConfigError


class Notifier:
    def __init__(self, address: str | None = None):
        address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]  # abstract namespace
        self.address = address or None
        self.sock: socket.socket | None = None
        if self.address:
            # Non-blocking: a datagram to a supervisor whose queue is full (net.unix.max_dgram_qlen,
            # 10 by default) would otherwise block the event loop, and with it every beat and request.
            # A dropped ping is harmless; the next beat sends another.
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)

    def notify(self, *lines: str) -> None:
        if self.sock is None or self.address is None:
            return
        with contextlib.suppress(OSError):  # the supervisor went away or is not reading; nothing useful to do
            self.sock.sendto("\n".join(lines).encode(), self.address)

    def watchdog_usec(self) -> int | None:
        """WATCHDOG_USEC, when systemd's watchdog is on for this process (WATCHDOG_PID is us or unset)."""
        usec = os.environ.get("WATCHDOG_USEC", "").strip()
        pid = os.environ.get("WATCHDOG_PID")
        if not usec or (pid and pid != str(os.getpid())):
            return None
        try:
            value = int(usec)
        except ValueError:
            return None  # not ours to judge: systemd always writes digits
        return value if value > 0 else None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def refuse_if_watchdog_too_tight(notifier: Notifier, interval_s: float) -> None:
    """systemd kills us when no WATCHDOG=1 comes within WatchdogSec: two beats of `interval_s` must fit in it.

    A permanent mismatch, so it is refused at start (ConfigError, exit 2) before anything is touched.
    """
    usec = notifier.watchdog_usec()
    if usec is None:
        return
    watchdog_s = usec / 1_000_000
    if 2 * interval_s > watchdog_s:
        raise ConfigError(
            f"[heartbeat] interval_s = {interval_s:g} is too long for the systemd watchdog of {watchdog_s:g} s "
            f"(WatchdogSec); it must be at most {watchdog_s / 2:g} s: lower interval_s or raise WatchdogSec"
        )
