"""The path of a snapshot upload stays short and cheap (docs/performance.md, "Path of an
upload"): door -> receive -> task -> handler -> store -> COPY, no memdash file on the way
entered more than twice, and the upload row written twice (INSERT, then its outcome with the
data), never read back; after the commit, the summary of the BRIN ranges the rows filled
(PostgreSQL), the build's summary for build compare (a task, run at
once by the embedded default) and one look for the uploads of dead workers (an index scan of the
`processing` ones). `-s` prints the chain and the statements."""

from __future__ import annotations

import pytest
from django.db import connection

from memdash.allocations.models import Snapshot
from memdash.ingest import tasks
from memdash.ingest.models import Upload
from tests.ingest.upload_path import UploadPath, trace_upload
from tests.samples import spec_example

# The files an upload passes through on its way to the store; these and every other file on
# the way (the store's helpers) are entered at most twice, but for the two engines every step
# uses: the bulk writes (categories: read and written; frames and stack nodes; rows) and the
# reads by many ids they look rows up through (`core.reads.where_in`, split from them), the
# columns they take (`core.logic.rows.ArrayRows`: the nodes, the rows, the totals) and the column
# toolkit (the rows checked; image usage, the nodes and their leaves, each over the stack tree).
ENGINES = {
    "memdash/core/writes/bulk.py": 4,
    "memdash/core/reads/where_in.py": 4,
    "memdash/core/logic/rows.py": 4,
    "memdash/allocations/logic/columns.py": 5,
}
CHAIN = {
    "memdash/ingest/web/views.py",
    "memdash/ingest/writes/uploads.py",
    "memdash/ingest/tasks.py",
    "memdash/core/logic/reading.py",
    "memdash/ingest/writes/formats.py",
    "memdash/ingest/writes/parsers/snapshot.py",
    "memdash/allocations/writes/snapshots.py",
    "memdash/core/writes/uploads.py",
    "memdash/core/writes/apps.py",
    "memdash/core/writes/bulk.py",
}


def statements(path: UploadPath, *words: str) -> list[str]:
    return [sql for sql in path.queries if all(word in sql for word in words)]


def check_path(path: UploadPath) -> None:
    assert path.result.status_code == 202
    assert path.result.json()["status"] == "done"
    assert path.hops[-1].callee == "memdash/core/writes/bulk.py:copy_rows"
    assert path.files >= CHAIN
    entries = path.entries
    for engine, most in ENGINES.items():
        assert entries.pop(engine) <= most, engine
    assert {name: count for name, count in entries.items() if count > 2} == {}
    # The upload row: inserted by the door, its outcome written with the data; never re-read.
    # Then, committed, the upload's pass looks for uploads of dead workers (tasks.requeue_stale).
    upload_sql = statements(path, '"ingest_upload"')
    assert [sql.split()[0] for sql in upload_sql] == ["INSERT", "UPDATE", "SELECT"]
    # The debug-file uploads' own look for dead workers (symbols.tasks.requeue_stale) is paced
    # alike, so it comes after or not, as its process's clock says.
    queries = [sql for sql in path.queries if '"symbols_debugfileupload"' not in sql]
    after = queries[queries.index(upload_sql[1]) + 1 :]
    assert after[0] == "COMMIT"  # the outcome written just before it, with the data
    # After it the look, the answer; then, once the answer is sent (the response closed), the
    # build's statistics tables and summary for build compare, made by tasks queued on commit
    # (the embedded default runs them at once; they read totals, never the upload).
    look = upload_sql[2]
    assert "lease_until" in look
    assert [sql for sql in after[1:] if '"ingest_upload"' in sql] == [look]
    follow_ups = after[after.index(look) + 1 :]
    assert any('"compare_buildsamples"' in sql for sql in follow_ups)
    # No savepoint, but on PostgreSQL around each COPY of new frames or stack nodes straight
    # into their tables (`bulk.insert_ignore`: one stored meanwhile by another upload sends
    # them the staged way instead): SAVEPOINT and RELEASE, twice at most.
    savepoints = statements(path, "SAVEPOINT")
    assert len(savepoints) <= (4 if connection.vendor == "postgresql" else 0)
    # One transaction holds the upload's data. After it, on PostgreSQL, the page ranges the
    # rows filled are summarised in a statement of its own (`partitions.summarize_after_commit`),
    # and a partition or the Allocations List's table without planner statistics analysed
    # (`core.writes.table_statistics`), each in a short transaction of its own.
    before = path.queries[: path.queries.index(upload_sql[1])]
    assert len([sql for sql in before if "BEGIN" in sql]) <= 1
    analyses = [sql for sql in path.queries if sql.startswith("ANALYZE ")]
    after_commit = (len(statements(path, "brin_summarize")) > 0) + len(analyses)
    assert len(statements(path, "BEGIN")) <= 1 + after_commit
    # On PostgreSQL the data's transaction does not wait for the disk at its commit (a lost
    # one is processed again), nor do the summary and statistics after it, when there are
    # (not within a second, or half a minute, of the last); the receipt does.
    unwaited = statements(path, "synchronous_commit")
    if connection.vendor == "postgresql":
        assert len(unwaited) == 1 + after_commit
        assert unwaited[0] in before and "brin_summarize" not in unwaited[0]
    else:
        assert unwaited == []
    # Nothing read again that the request already holds (the app, the key).
    assert not statements(path, 'FROM "core_app"')
    assert len(statements(path, 'FROM "core_ingestkey"')) == 1


# A real transaction per test (not the savepoint of a test case's transaction), so that the
# statements counted are those a production request makes.
@pytest.mark.django_db(transaction=True)
def test_a_snapshot_upload_takes_a_short_path(upload, monkeypatch):
    monkeypatch.setattr(tasks, "REQUEUE_EVERY_SECONDS", 0.0)  # each upload's pass looks
    upload(b"{")  # a refused upload first: modules imported, URLs resolved once
    first = trace_upload(lambda: upload(spec_example()))
    print("\n--- first snapshot of a build (new build, device, categories)\n" + first.report())
    check_path(first)
    # The next snapshot of the same build and device: build, device, categories are found.
    doc = spec_example(captured_at="2026-11-20T11:12:03+00:00")
    following = trace_upload(lambda: upload(doc))
    print("\n--- the next snapshot of that build\n" + following.report())
    check_path(following)
    stored = following.queries[: following.queries.index("COMMIT")]  # the upload's own work
    for table in ("core_build", "core_device", "snapshots_category"):
        assert len([sql for sql in stored if f'"{table}"' in sql]) == 1, table  # one SELECT each
    assert Snapshot.objects.count() == 2
    assert set(Upload.objects.values_list("status", flat=True)) == {"rejected", "done"}
