"""PostgreSQL aborts a transaction for a deadlock (40P01) or a serialization failure (40001);
the transaction machinery runs it again instead of surfacing the error. Provoked for real on
the pgserver PostgreSQL: two connections locking rows in opposite order, and two SERIALIZABLE
transactions in write skew."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

import psycopg
import pytest

from engram import LOCAL, Engram, NewMemory
from engram.errors import StorageError
from engram.store.postgres import PostgresStore
from engram.store.postgres.db import ATTEMPTS, Connection, PostgresDatabase

TIMEOUT = 30.0


@pytest.fixture
def db(pg_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(pg_url, migrate=False)
    with database.tx() as conn:
        conn.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
        conn.execute("INSERT INTO accounts VALUES (1, 100), (2, 100)")
    yield database
    database.close()


def _both(first: Callable[[], object], second: Callable[[], object]) -> list[BaseException]:
    """Run two callables on two threads; the exceptions they raised."""
    errors: list[BaseException] = []

    def run(fn: Callable[[], object]) -> None:
        try:
            fn()
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 2)
    assert not any(t.is_alive() for t in threads), "a transaction hung"
    return errors


def _balances(db: PostgresDatabase) -> dict[int, int]:
    with db.reader() as conn:
        return dict(conn.execute("SELECT id, balance FROM accounts").fetchall())


def test_a_deadlock_is_retried_until_both_transfers_commit(db: PostgresDatabase) -> None:
    # each transfer locks its source row, waits until the other has locked its own, then locks
    # the other row: a cycle PostgreSQL breaks by aborting one of them (40P01)
    both_locked = threading.Barrier(2, timeout=TIMEOUT)
    attempts: Counter[str] = Counter()

    def transfer(name: str, source: int, target: int) -> Callable[[], None]:
        def work(conn: Connection) -> None:
            attempts[name] += 1
            conn.execute("SET LOCAL deadlock_timeout = '100ms'")
            conn.execute("UPDATE accounts SET balance = balance - 10 WHERE id = %s", (source,))
            if attempts[name] == 1:
                both_locked.wait()
            conn.execute("UPDATE accounts SET balance = balance + 10 WHERE id = %s", (target,))

        return lambda: db.run(work)

    errors = _both(transfer("a", 1, 2), transfer("b", 2, 1))

    assert errors == []
    assert sorted(attempts.values()) == [1, 2]  # one was aborted once, and ran again
    assert _balances(db) == {1: 100, 2: 100}  # both transfers happened, each once


def test_a_serialization_failure_is_retried(db: PostgresDatabase) -> None:
    # write skew: each reads the total, then takes 150 from its own row if the total allows;
    # run one after the other, only the first may take. Under SERIALIZABLE PostgreSQL aborts
    # one of the overlapping pair (40001); its retry sees the other's commit and takes nothing.
    both_read = threading.Barrier(2, timeout=TIMEOUT)
    attempts: Counter[int] = Counter()

    def withdraw(account: int) -> Callable[[], None]:
        def work(conn: Connection) -> None:
            attempts[account] += 1
            row = conn.execute("SELECT sum(balance) FROM accounts").fetchone()
            assert row is not None
            if attempts[account] == 1:
                both_read.wait()
            if row[0] >= 200:
                conn.execute(
                    "UPDATE accounts SET balance = balance - 150 WHERE id = %s", (account,)
                )

        return lambda: db.run(work, serializable=True)

    errors = _both(withdraw(1), withdraw(2))

    assert errors == []
    assert sorted(attempts.values()) == [1, 2]
    assert sorted(_balances(db).values()) == [-50, 100]  # as if one ran after the other


def test_contention_left_after_the_retries_is_a_storage_error(db: PostgresDatabase) -> None:
    runs = 0

    def always_aborted(conn: Connection) -> None:
        nonlocal runs
        runs += 1
        conn.execute("DO $$ BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = '40001'; END $$")

    with pytest.raises(StorageError, match="40001"):
        db.run(always_aborted)
    assert runs == ATTEMPTS


def test_store_writes_are_retried_after_a_deadlock(pg_url: str) -> None:
    """Through the store: the first two inserts of a memory are aborted with 40P01 by a trigger
    (a sequence counts them, outside the aborted transactions); the write still succeeds."""
    store = PostgresStore(pg_url)
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CREATE SEQUENCE aborted_inserts")
            conn.execute(
                "CREATE FUNCTION abort_twice() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "IF nextval('aborted_inserts') <= 2 THEN "
                "RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01'; END IF; "
                "RETURN NEW; END $$"
            )
            conn.execute(
                "CREATE TRIGGER abort_twice BEFORE INSERT ON memories "
                "FOR EACH ROW EXECUTE FUNCTION abort_twice()"
            )
        engram = Engram(store)
        memory = engram.memories.add(NewMemory(content="written after two deadlocks"), LOCAL)
        assert [m.id for m in store.get([memory.id])] == [memory.id]
        assert len(store.versions(memory.id)) == 1  # stored once
        with psycopg.connect(pg_url, autocommit=True) as conn:
            row = conn.execute("SELECT last_value FROM aborted_inserts").fetchone()
        assert row is not None and row[0] == 3  # two aborted runs, then the one that committed
    finally:
        store.close()
