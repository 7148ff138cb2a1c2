"""The PostgreSQL store: several daemons on one database (``store.backend = "postgresql"``).

The only package besides ``store/sqlite`` that imports a database driver
(psycopg 3, with psycopg_pool) or writes SQL. Optional: its driver comes
with the ``postgresql`` extra, and nothing imports this package unless the
config asks for it.
"""

from readdod.store.postgresql.executor import PostgresUnitOfWork
from readdod.store.postgresql.schema import SCHEMA_VERSION
from readdod.store.postgresql.store import PostgresStore, StoreClosed

__all__ = ["SCHEMA_VERSION", "PostgresStore", "PostgresUnitOfWork", "StoreClosed"]
