"""The exception hierarchy: every error anima raises names the thing, the value and the fix."""


class AnimaError(Exception):
    """Base of every error anima raises on purpose; the CLI and API map subclasses to exit codes and statuses."""

    exit_code = 1
    http_status = 500
    code = "internal"


class ConfigError(AnimaError):
    """A setting in config.toml (or the environment) is missing, unknown or of the wrong type."""

    exit_code = 2
    http_status = 500
    code = "config"


class InputError(AnimaError):
    """Bad input from a user or client: malformed, oversized, unknown key. Nothing was changed."""

    exit_code = 2
    http_status = 400
    code = "bad_request"


class NotFoundError(InputError):
    """The named thing does not exist."""

    http_status = 404
    code = "not_found"


class ConflictError(InputError):
    """The request conflicts with the current state (for example a receipt for an expired offer)."""

    http_status = 409
    code = "conflict"


class StoreError(AnimaError):
    """The database cannot be used: newer schema, failed integrity check, missing extension."""

    exit_code = 1
    http_status = 503
    code = "store"


class LockedError(StoreError):
    """Another daemon already owns this database file."""

    exit_code = 2
    code = "locked"


class StorageFullError(StoreError):
    """The disk (or quota) holding the database is full: writes are refused until space is freed; reads go on."""

    code = "storage_full"


class DamagedStoreError(StoreError):
    """The database file is not a usable anima database: corrupt pages, not SQLite at all, truncated, empty."""

    exit_code = 2
    code = "damaged"


class SchemaTooNewError(StoreError):
    """The file was written by a newer anima (a migration this code lacks): an operator's fix, not a crash to retry."""

    exit_code = 2
    code = "schema_newer"


class StoreAccessError(StoreError):
    """The database's folder or file cannot be written (read-only filesystem, permissions): restarting cannot help."""

    exit_code = 2
    code = "store_access"
