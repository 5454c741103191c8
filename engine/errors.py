"""The exception hierarchy: every error anima raises names the thing, the value and the fix."""

from typing import Any


class AnimaError(Exception):
    """Base of every error anima raises on purpose; the CLI and API map subclasses to exit codes and statuses."""

    exit_code = 1
    http_status = 500
    code = "internal"

    def __init_subclass__(cls, *, exit_code: int | None = None, http_status: int | None = None,
                          code: str | None = None, **kwargs: Any) -> None:
        """A subclass states on its class line what it changes (`class X(StoreError, code="x")`), so the
        hierarchy reads as one table of exit codes, statuses and codes; what it leaves out it inherits."""
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code
        if http_status is not None:
            cls.http_status = http_status
        if code is not None:
            cls.code = code


class ConfigError(AnimaError, exit_code=2, http_status=500, code="config"):
    """A setting in config.toml (or the environment) is missing, unknown or of the wrong type."""


class InputError(AnimaError, exit_code=2, http_status=400, code="bad_request"):
    """Bad input from a user or client: malformed, oversized, unknown key. Nothing was changed."""


class NotFoundError(InputError, http_status=404, code="not_found"):
    """The named thing does not exist."""


class ConflictError(InputError, http_status=409, code="conflict"):
    """The request conflicts with the current state (for example a receipt for an expired offer)."""


class StoreError(AnimaError, exit_code=1, http_status=503, code="store"):
    """The database cannot be used: newer schema, failed integrity check, missing extension."""


class LockedError(StoreError, exit_code=2, code="locked"):
    """Another daemon already owns this database file."""


class StorageFullError(StoreError, code="storage_full"):
    """The disk (or quota) holding the database is full: writes are refused until space is freed; reads go on."""


class DamagedStoreError(StoreError, exit_code=2, code="damaged"):
    """The database file is not a usable anima database: corrupt pages, not SQLite at all, truncated, empty."""


class SchemaTooNewError(StoreError, exit_code=2, code="schema_newer"):
    """The file was written by a newer anima (a migration this code lacks): an operator's fix, not a crash to retry."""


class StoreAccessError(StoreError, exit_code=2, code="store_access"):
    """The database's folder or file cannot be written (read-only filesystem, permissions): restarting cannot help."""
