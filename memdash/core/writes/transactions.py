"""Settings of the transaction that calls them (PostgreSQL's `SET LOCAL`): they end with it, and
do nothing on SQLite; and a write tried again when the database cancelled it for a deadlock."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

from django.db import OperationalError, connection, transaction

DEADLOCK_TRIES = 5


def is_deadlock(error: BaseException) -> bool:
    """PostgreSQL's 40P01: the database cancelled this transaction to break a deadlock (on Citus
    also one between nodes); nothing of it is written, and doing it again is safe."""
    return getattr(error.__cause__, "sqlstate", None) == "40P01"


def retried_on_deadlock[T](
    write: Callable[[], T], tries: int = DEADLOCK_TRIES, *, one_statement: bool = False
) -> T:
    """`write()` in a transaction of its own (a savepoint inside the caller's), done again at
    once when the database cancelled it to break a deadlock: on Citus a write of a reference
    table locks its copy on every node, in the order the transactions reach them, so two writes
    of one row can meet the other way round. The last try's error is raised. A write of
    `one_statement` outside the caller's transaction is a transaction by itself: no BEGIN and
    COMMIT around it (the door's INSERT of each upload)."""
    for attempt in range(1, tries + 1):
        own = not one_statement or connection.in_atomic_block
        try:
            with transaction.atomic() if own else nullcontext():
                return write()
        except OperationalError as error:
            if not is_deadlock(error) or attempt == tries:
                raise
    raise AssertionError("not reached: the last try returns or raises")


def without_jit() -> None:
    """No JIT compilation for the rest of the transaction (PostgreSQL): set-based statements
    over many rows look costly enough to the planner to compile, which takes longer than
    running them."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")


def commit_without_waiting_for_the_disk() -> None:
    """This transaction's COMMIT returns once its WAL is written, before the disk has it
    (PostgreSQL's `synchronous_commit = off`, for this transaction only): the flush costs the
    database a few milliseconds of CPU a commit, and the worker the wait (issue 19). Only for
    work that is done again when lost: a crash within the WAL writer's delay (a fraction of a
    second) loses the whole transaction, never part of it, and the database stays consistent;
    the next synchronous commit on the server (the task queue's own, a moment later) makes it
    durable with it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
