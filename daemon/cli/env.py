"""What every subcommand gets: settings, the database path, a clock, and helpers to open the DB and print."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.clock import Clock, clock_from_env
from daemon.config import load_settings
from engine.home import settings_in_file
from engine.settings import Settings
from engine.usecases.files import open_for_writing, open_readonly


@dataclass
class CliEnv:
    settings: Settings
    config_file: Path | None
    db_path: Path
    clock: Clock

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CliEnv:
        settings, config_file = load_settings(getattr(args, "config", None))
        db = getattr(args, "db", None) or settings.database.path
        return cls(settings=settings, config_file=config_file, db_path=Path(db), clock=clock_from_env())

    def open_db(self, *, create: bool = True) -> Any:
        """Open (and migrate) the database; works whether or not the daemon is running (WAL).

        From here on `settings` are hers: her city, zone and role from her file (engine/home.py)."""
        conn = open_for_writing(self.db_path, create=create)
        self.settings = settings_in_file(conn, self.settings)
        return conn

    def adopt_home(self) -> None:
        """Make `settings` hers before her file is opened (a command that reads times in her zone first).

        Read-only and quiet: a missing or unreadable file keeps the defaults, and open_db says what is wrong."""
        if not self.db_path.exists():
            return
        try:
            conn = open_readonly(self.db_path)
        except Exception:  # open_db reports it, with the fix
            return
        try:
            self.settings = settings_in_file(conn, self.settings)
        except Exception:  # no companion table yet (an empty or older file): the [life] defaults, as before
            pass
        finally:
            conn.close()

    @staticmethod
    def print_json(value: Any) -> None:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=None, sort_keys=False) + "\n")
