"""Change or reset one runtime switch (life_control), for the API and the CLI alike, and say what changed.

The write and its event_log record are one transaction (engine/store/core.set_control). What comes
back names the switch by its current name, the name the caller used when it was an old one (so the
caller can note the deprecation), and every switch's value after the change, read in the same call,
so the daemon's cached Switches can be replaced rather than patched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import control
from engine.store.core import read_switches, set_control, stored_controls
from engine.store.oplog import reset_control


@dataclass(frozen=True)
class SwitchChange:
    key: str  # the current name
    old: Any
    new: Any
    actor: str  # api, cli
    alias: str | None  # the old name the caller used, if it used one
    switches: control.Switches  # every switch after the change

    def log_fields(self) -> dict[str, Any]:
        """The fields of the one `control.changed` event (values only: switches hold no chat or life text)."""
        fields = {"key": self.key, "old": self.old, "new": self.new, "actor": self.actor}
        return fields | ({"alias": self.alias} if self.alias else {})


def current_switches(conn: Any) -> control.Switches:
    """Every switch's value now (GET /v1/control, `anima control list|get`)."""
    return read_switches(conn)


def set_switches(conn: Any) -> set[str]:
    """The switches with a stored value (current names; the others are at their defaults)."""
    return set(stored_controls(conn))


def change_switch(conn: Any, key: str, value: Any, now: float, *, actor: str) -> SwitchChange:
    """Validate (unknown key or bad value: InputError, nothing written) and write one switch."""
    name = control.canonical(key)
    old, new = set_control(conn, key, value, now, actor)
    return SwitchChange(name, old, new, actor, key if key != name else None, read_switches(conn))


def reset_switch(conn: Any, key: str, now: float, *, actor: str) -> SwitchChange:
    """Forget the stored value of one switch: its default applies again."""
    name = control.canonical(key)
    old, new = reset_control(conn, key, now, actor)
    return SwitchChange(name, old, new, actor, key if key != name else None, read_switches(conn))
