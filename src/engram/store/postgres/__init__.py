"""The PostgreSQL + pgvector store (the ``postgres`` extra: psycopg 3 and psycopg-pool)."""

from engram.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
