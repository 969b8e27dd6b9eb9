"""The lifecycle review queue on SQLite: one row per item, resolved in place."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.store.accounts import Audit
from engram.store.sqlite.audit import insert_audit

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase

_COLS = (
    "id, environment_id, memory_id, other_id, kind, reason, similarity, created_at, status, "
    "resolved_at, resolved_by"
)


def _item(row: Sequence[Any]) -> ReviewItem:
    return ReviewItem(
        id=row[0],
        environment_id=row[1],
        memory_id=row[2],
        other_id=row[3],
        kind=row[4],
        reason=row[5],
        similarity=row[6],
        created_at=datetime.fromtimestamp(row[7], UTC),
        status=row[8],
        resolved_at=None if row[9] is None else datetime.fromtimestamp(row[9], UTC),
        resolved_by=row[10],
    )


class SQLiteReviewStore:
    """Implements :class:`engram.store.reviews.ReviewStore` on the store's database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def put_review(self, item: ReviewItem, audit: Audit = ()) -> None:
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO review_items ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
                    item.created_at.timestamp(),
                    item.status.value,
                    None if item.resolved_at is None else item.resolved_at.timestamp(),
                    item.resolved_by,
                ),
            )

    def get_review(self, review_id: str) -> ReviewItem | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_COLS} FROM review_items WHERE id = ?", (review_id,))
            .fetchone()
        )
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
            cond.append(f"environment_id IN ({','.join('?' * len(environment_ids))})")
            params.extend(environment_ids)
        if statuses:
            cond.append(f"status IN ({','.join('?' * len(statuses))})")
            params.extend(s.value for s in statuses)
        sql = f"SELECT {_COLS} FROM review_items"
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        rows = self._db.reader().execute(sql + " ORDER BY seq LIMIT ?", [*params, limit])
        return [_item(r) for r in rows.fetchall()]
