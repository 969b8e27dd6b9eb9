"""pgvector storage: one untyped ``vector`` column, with its ``dim`` beside it.

Models differ in dimension, so ``memory_vectors`` keeps an untyped ``embedding``; search scans
each process's in-memory copy (:mod:`.vector_copy`) and asks PostgreSQL only for the exact
cosines of the rows it kept, by key. Queries name the model and dimension as literals.
"""

from __future__ import annotations

import struct

import numpy as np
from psycopg import pq, sql
from psycopg.adapt import AdaptersMap, Dumper

from engram.store.protocol import Vector


class Embedding:
    """A vector sent as a query parameter in pgvector's binary form (dimension, then big-endian
    float32s): about a hundred times cheaper than its text form, ``[x,y,...]``, whose float
    formatting cost milliseconds per vector. The SQL casts it (``%s::vector``), which tells
    the server its type."""

    __slots__ = ("vector",)

    def __init__(self, vector: Vector) -> None:
        self.vector = vector


class _EmbeddingDumper(Dumper):
    format = pq.Format.BINARY

    def dump(self, obj: Embedding) -> bytes:
        floats = np.asarray(obj.vector, dtype=">f4")
        return struct.pack(">HH", floats.shape[0], 0) + floats.tobytes()


def register(adapters: AdaptersMap) -> None:
    """Let a connection send :class:`Embedding` parameters."""
    adapters.register_dumper(Embedding, _EmbeddingDumper)


def distance(model_id: str, dim: int, *, exact: bool = False) -> tuple[sql.Composed, sql.Composed]:
    """The (filter, cosine-distance expression) for vectors of one model. The distance takes
    the query vector as its one parameter; ``exact`` wraps it (``+ 0``) so that no index over
    the expression could answer it."""
    cond = sql.SQL("v.model_id = {} AND v.dim = {}").format(sql.Literal(model_id), sql.Literal(dim))
    dist = sql.SQL("(v.embedding::vector({}) <=> %s::vector({}))").format(
        sql.Literal(dim), sql.Literal(dim)
    )
    if exact:
        dist = sql.SQL("({} + 0)").format(dist)
    return cond, sql.Composed([dist])
