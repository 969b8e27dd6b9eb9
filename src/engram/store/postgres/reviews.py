"""The lifecycle review queue on PostgreSQL: one row per item, resolved in place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.store.accounts import Audit
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import PostgresDatabase, retried

_COLS = (
    "id, environment_id, memory_id, other_id, kind, reason, similarity, created_at, status, "
    "resolved_at, resolved_by"
)


def _item(row: Sequence[Any]) -> ReviewItem:
    return ReviewItem(**dict(zip([c.strip() for c in _COLS.split(",")], row, strict=True)))


class PostgresReviewStore:
    """Implements :class:`engram.store.reviews.ReviewStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def put_review(self, item: ReviewItem, audit: Audit = ()) -> None:
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO review_items ({_COLS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
                "reason = excluded.reason, resolved_at = excluded.resolved_at, "
                "resolved_by = excluded.resolved_by",
                (
                    item.id,
                    item.environment_id,
                    item.memory_id,
                    item.other_id,
                    item.kind,
                    item.reason,
                    item.similarity,
                    item.created_at,
                    item.status.value,
                    item.resolved_at,
                    item.resolved_by,
                ),
            )

    def get_review(self, review_id: str) -> ReviewItem | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_COLS} FROM review_items WHERE id = %s", (review_id,)
            ).fetchone()
        return _item(row) if row else None

    def list_reviews(
        self,
        environment_ids: Sequence[str],
        statuses: Sequence[ReviewStatus] = (ReviewStatus.OPEN,),
        *,
        limit: int = 100,
    ) -> list[ReviewItem]:
        cond: list[str] = []
        params: list[Any] = []
        if environment_ids:
            cond.append("environment_id = ANY(%s)")
            params.append(list(environment_ids))
        if statuses:
            cond.append("status = ANY(%s)")
            params.append([s.value for s in statuses])
        query = f"SELECT {_COLS} FROM review_items"
        if cond:
            query += " WHERE " + " AND ".join(cond)
        with self._db.reader() as conn:
            rows = conn.execute(query + " ORDER BY seq LIMIT %s", [*params, limit]).fetchall()
        return [_item(r) for r in rows]
