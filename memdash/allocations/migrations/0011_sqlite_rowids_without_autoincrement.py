"""On SQLite, the two large tables keep their rowid as id without AUTOINCREMENT.

AUTOINCREMENT makes SQLite read and write its `sqlite_sequence` row for every row inserted, so
that an id is never used twice: a million allocation rows took 1.49 s to insert with it and
1.09 s without (measured on SQLite 3.40, the table and its (snapshot, category) index as they
are). Nothing reads these rows by id, nor keeps an id anywhere (PostgreSQL gave up their
sequence in 0010), so an id used again after its snapshot was deleted harms nothing; a plain
INTEGER PRIMARY KEY is then the rowid itself, max + 1.

SQLite cannot drop AUTOINCREMENT in place: each table is made again under its own definition
without the word, its rows copied across and its indexes made again. Django's models are
unchanged (a later migration that remakes one of these tables on SQLite brings the word back:
do this again after it). Nothing changes on PostgreSQL.
"""

from django.db import migrations

TABLES = ("snapshots_allocationrow", "snapshots_calltreenode")


def _definitions(cursor, table: str) -> tuple[str, list[str]]:
    cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
    (create,) = cursor.fetchone()
    cursor.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s AND sql IS NOT NULL",
        [table],
    )
    return create, [row[0] for row in cursor.fetchall()]


def _remake(schema_editor, table: str, autoincrement: bool) -> None:
    with schema_editor.connection.cursor() as cursor:
        create, indexes = _definitions(cursor, table)
        if autoincrement == ("AUTOINCREMENT" in create):
            return  # already so
        if autoincrement:
            create = create.replace("PRIMARY KEY", "PRIMARY KEY AUTOINCREMENT", 1)
        else:
            create = create.replace(" AUTOINCREMENT", "", 1)
        remade = f"{table}__remade"
        cursor.execute(create.replace(f'"{table}"', f'"{remade}"', 1))
        cursor.execute(f'INSERT INTO "{remade}" SELECT * FROM "{table}"')
        cursor.execute(f'DROP TABLE "{table}"')
        cursor.execute(f'ALTER TABLE "{remade}" RENAME TO "{table}"')
        for index in indexes:
            cursor.execute(index)


def without_autoincrement(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for table in TABLES:
            _remake(schema_editor, table, autoincrement=False)


def with_autoincrement(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for table in TABLES:
            _remake(schema_editor, table, autoincrement=True)


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0010_large_tables_own_ids"),
    ]

    operations = [migrations.RunPython(without_autoincrement, with_autoincrement)]
