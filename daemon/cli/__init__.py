"""The `anima` command: global options, discovery of subcommands, and one place that maps errors to exit codes.

Each subcommand lives in `daemon/cli/cmd_*.py` with a `register(subparsers)` function that adds its
parser and sets `func=handler`; `handler(args, env) -> int`. Exit codes: 0 ok, 2 usage/input
errors, 1 runtime failures. Errors are one line on stderr: `anima: <what, value, fix>`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from daemon.cli.env import CliEnv
from daemon.logs import fatal_line
from engine.errors import AnimaError
from engine.usecases.files import fault_of

GLOBAL_VALUE_OPTIONS = ("--config", "--db")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (`only`) the global options and the one module `cmd_<only>.py`.

    Importing a command module imports what it runs (the model, the job runner ...); a command named on
    the line needs only its own, which keeps `anima status` or `anima simulate` from paying ~1 s for all.
    """
    parser = argparse.ArgumentParser(prog="anima", description="The inner-life daemon of an AI companion.")
    parser.add_argument("--version", action="version", version=f"anima {installed_version()}")
    parser.add_argument("--config", help="config file (default: $ANIMA_CONFIG, else ./config.toml if present)")
    parser.add_argument("--db", help="database file (default: [database] path from the config)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    package = importlib.import_module("daemon.cli")
    names = sorted(i.name for i in pkgutil.iter_modules(package.__path__) if i.name.startswith("cmd_"))
    if only is not None:
        names = [f"cmd_{only}"]
    for name in names:
        importlib.import_module(f"daemon.cli.{name}").register(subparsers)
    return parser


def installed_version() -> str:
    """The version pip installed (pyproject.toml's), or 'unknown' when run from a tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("anima")
    except PackageNotFoundError:
        return "unknown"


def named_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the line when it has a module of its own (cmd_<name>.py), else None."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in GLOBAL_VALUE_OPTIONS:
            skip = True
        elif not token.startswith("-"):
            package = importlib.import_module("daemon.cli")
            known = {i.name for i in pkgutil.iter_modules(package.__path__)}
            return token if f"cmd_{token}" in known else None
    return None


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    only = named_command(argv)
    if only is not None:
        parser = build_parser(only)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if only in sub.choices:  # the module registers the command of its name: the short parser is the same
            return parser
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser_for(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    db = getattr(args, "db", None) or ""
    try:
        env = CliEnv.from_args(args)
        db = str(env.db_path)
        return int(args.func(args, env) or 0)
    except AnimaError as exc:
        return _one_line(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        # A full disk, a damaged file or another SQLite error is a state to report, not a crash
        # (one mapping: engine.store.connect.store_fault); anything else is a bug and keeps its traceback.
        fault = fault_of(exc, db)
        if fault is None:
            raise
        return _one_line(fault)


def _one_line(exc: AnimaError) -> int:
    # One line, with <3> (err) under journald so that `journalctl -p warning` shows it.
    print(fatal_line(" ".join(str(exc).split())), file=sys.stderr)
    return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
