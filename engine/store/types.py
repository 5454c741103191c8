"""The type of a connection to her file, for signatures: `conn: Conn` says what a function takes where `Any` hid it.

At run time the connection comes from engine/store/connect.py and is the standard library's
`sqlite3.Connection` or, where that cannot load extensions, pysqlite3's class of the same shape; both
have the same methods, so the standard library's class is the one named for the type checker.
"""

from __future__ import annotations

import sqlite3
from typing import TypeAlias

Conn: TypeAlias = sqlite3.Connection
