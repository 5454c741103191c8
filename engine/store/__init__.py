"""The one place that stores anima: connection, migrations, named queries, and the tables' accessors."""

from engine.store.connect import connect, driver_name, sqlite_module, transaction
from engine.store.migrate import code_schema_version, db_schema_version, migrate

__all__ = [
    "connect",
    "driver_name",
    "sqlite_module",
    "transaction",
    "migrate",
    "db_schema_version",
    "code_schema_version",
]
