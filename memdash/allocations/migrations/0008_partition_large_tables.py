"""On PostgreSQL, the allocation rows and call-tree totals become tables partitioned by the month
they were stored in (`memdash.allocations.writes.partitions`), so that retention drops whole months.
The rows already there are moved into the partition of their snapshot's month. Nothing changes
on SQLite, nor in Django's view of the tables (the `month` column is the database's own)."""

from django.db import migrations

TABLES = ("snapshots_allocationrow", "snapshots_calltreenode")
MONTH_DEFAULT = "(to_char(now() AT TIME ZONE 'UTC', 'YYYYMM'))::integer"


def months(cursor):
    """Every month a snapshot was stored in, and this month and the next two."""
    cursor.execute(
        "SELECT DISTINCT (to_char(created_at AT TIME ZONE 'UTC', 'YYYYMM'))::integer "
        "FROM snapshots_snapshot"
    )
    found = {row[0] for row in cursor.fetchall()}
    cursor.execute(f"SELECT {MONTH_DEFAULT}")
    month = cursor.fetchone()[0]
    for _ in range(3):
        found.add(month)
        month = month + 89 if month % 100 == 12 else month + 1
    return sorted(found)


def renamed_indexes(cursor, table, old):
    """Rename the old table's indexes out of the way; their definitions, for the new table."""
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
        "AND indexname NOT LIKE '%%pkey'",
        [old],
    )
    definitions = []
    for name, definition in cursor.fetchall():
        cursor.execute(f'ALTER INDEX "{name}" RENAME TO "{name}_unpartitioned"')
        for on in (f" ON public.{old} ", f" ON ONLY public.{old} "):
            definition = definition.replace(on, f" ON public.{table} ")
        definitions.append(definition)
    return definitions


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        wanted = months(cursor)
        for table in TABLES:
            old = f"{table}_unpartitioned"
            cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{old}"')
            cursor.execute(f'ALTER TABLE "{old}" RENAME CONSTRAINT "{table}_pkey" TO "{old}_pkey"')
            definitions = renamed_indexes(cursor, table, old)
            cursor.execute(
                f'CREATE TABLE "{table}" (LIKE "{old}" INCLUDING DEFAULTS INCLUDING GENERATED, '
                f"month integer NOT NULL DEFAULT {MONTH_DEFAULT}) PARTITION BY RANGE (month)"
            )
            # An identity column cannot be on a partitioned table before PostgreSQL 17: the id
            # is drawn from a sequence instead, going on from the old table's last id.
            cursor.execute(f'CREATE SEQUENCE IF NOT EXISTS "{table}_rowid_seq"')
            cursor.execute(f'ALTER SEQUENCE "{table}_rowid_seq" OWNED BY "{table}".id')
            cursor.execute(
                f"SELECT setval('\"{table}_rowid_seq\"', coalesce((SELECT max(id) FROM \"{old}\"), 0) + 1, false)"
            )
            cursor.execute(
                f'ALTER TABLE "{table}" ALTER id SET DEFAULT nextval(\'"{table}_rowid_seq"\')'
            )
            cursor.execute(f'ALTER TABLE "{table}" ADD PRIMARY KEY (id, month)')
            for definition in definitions:
                cursor.execute(definition)
            cursor.execute(f'CREATE TABLE "{table}_default" PARTITION OF "{table}" DEFAULT')
            for month in wanted:
                following = month + 89 if month % 100 == 12 else month + 1
                cursor.execute(
                    f'CREATE TABLE "{table}_m{month}" PARTITION OF "{table}" '
                    f"FOR VALUES FROM ({month}) TO ({following})"
                )
            cursor.execute(
                f"SELECT string_agg(quote_ident(column_name), ', ') FROM information_schema.columns "
                f"WHERE table_name = %s AND table_schema = current_schema()",
                [old],
            )
            columns = cursor.fetchone()[0]
            prefixed = ", ".join(f"o.{c.strip()}" for c in columns.split(","))
            cursor.execute(
                f'INSERT INTO "{table}" ({columns}, month) SELECT {prefixed}, '
                f"coalesce((to_char(s.created_at AT TIME ZONE 'UTC', 'YYYYMM'))::integer, "
                f'{MONTH_DEFAULT}) FROM "{old}" o LEFT JOIN snapshots_snapshot s '
                "ON s.id = o.snapshot_id"
            )
            cursor.execute(f'DROP TABLE "{old}"')


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            old = f"{table}_partitioned"
            cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{old}"')
            cursor.execute(f'ALTER TABLE "{old}" RENAME CONSTRAINT "{table}_pkey" TO "{old}_pkey"')
            definitions = renamed_indexes(cursor, table, old)
            cursor.execute(f'CREATE TABLE "{table}" (LIKE "{old}" INCLUDING DEFAULTS)')
            cursor.execute(f'ALTER TABLE "{table}" DROP COLUMN month')
            cursor.execute(f'ALTER SEQUENCE "{table}_rowid_seq" OWNED BY "{table}".id')
            cursor.execute(f'ALTER TABLE "{table}" ADD PRIMARY KEY (id)')
            for definition in definitions:
                cursor.execute(definition)
            cursor.execute(
                f"SELECT string_agg(quote_ident(column_name), ', ') FROM information_schema.columns "
                f"WHERE table_name = %s AND table_schema = current_schema()",
                [table],
            )
            columns = cursor.fetchone()[0]
            cursor.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM "{old}"')
            cursor.execute(f'DROP TABLE "{old}" CASCADE')


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("allocations", "0007_category_name_hash_tool_figures"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
