"""On Citus, the large tables distributed by app and co-located, the rest reference or local
tables (`memdash.site.writes.citus`); nothing on PostgreSQL without the extension or SQLite.
Last of every app's migrations of its time; tables made by later migrations are placed by the
same function after each `migrate` (`SiteConfig`)."""

from django.db import migrations

from memdash.site.writes.citus import distribute


def forwards(apps, schema_editor):
    distribute(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("axes", "0010_accessattemptexpiration"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
        ("sessions", "0001_initial"),
        ("alerts", "0001_initial"),
        ("allocations", "0015_app_in_large_tables"),
        ("churn", "0003_app_in_large_tables"),
        ("compare", "0001_build_samples"),
        ("core", "0005_cache_table"),
        ("cycles", "0007_app_in_unique_keys"),
        ("foom", "0006_app_in_unique_keys"),
        ("ingest", "0004_upload_claims"),
        ("leaks", "0009_app_in_large_tables"),
        ("snapshots", "0006_models_moved_to_allocations"),
        ("symbols", "0003_debug_upload_lease"),
        ("triage", "0002_tracker"),
    ]

    # Undistributing (`undistribute_table`) is a step an operator takes by hand, if ever.
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
