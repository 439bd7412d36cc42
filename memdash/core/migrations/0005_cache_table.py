"""The shared cache's table (settings.CACHE_TABLE): where call trees built by workers reach the
web processes when there is no Redis (settings, CACHES). Made whatever the settings of the run
that migrates, so that a deployment can move between Redis and the database by its settings."""

from django.core.management import call_command
from django.db import migrations

TABLE = "memdash_cache"


def create(apps, schema_editor):
    call_command("createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0)


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("core", "0004_ingest_key_over_quota")]

    operations = [migrations.RunPython(create, drop)]
