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
from engine.settings import Settings
from engine.usecases.files import open_for_writing


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
        """Open (and migrate) the database; works whether or not the daemon is running (WAL)."""
        return open_for_writing(self.db_path, create=create)

    @staticmethod
    def print_json(value: Any) -> None:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=None, sort_keys=False) + "\n")
