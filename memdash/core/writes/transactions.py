"""Settings of the transaction that calls them (PostgreSQL's `SET LOCAL`): they end with it, and
do nothing on SQLite."""

from __future__ import annotations

from django.db import connection


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
