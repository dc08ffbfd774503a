"""The durable store: SQLAlchemy Core over SQLite (default) or PostgreSQL (HA)."""

from gpubot.backends.store.sqlstore import SqlStore, open_store

__all__ = ["SqlStore", "open_store"]
