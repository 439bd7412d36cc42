"""Categories are found by a 64-bit hash of their name (`models.category_hash`) instead of a
btree over the name itself, which PostgreSQL refuses past ~2,700 bytes; snapshots keep what the
producing tool reported beyond the rows (`tool_figures`)."""

import hashlib
import struct

from django.db import migrations, models


def category_hash(name):
    # models.category_hash as of this migration (hash64("category", name)), written out so that
    # a later change of the model's function cannot change what this migration computes.
    digest = hashlib.blake2b("\x1f".join(["category", name]).encode(), digest_size=8).digest()
    return struct.unpack("<q", digest)[0]


def fill_hashes(apps, schema_editor):
    Category = apps.get_model("allocations", "Category")
    batch = []
    for category in Category.objects.only("pk", "name").iterator(chunk_size=2000):
        category.name_hash = category_hash(category.name)
        batch.append(category)
        if len(batch) >= 2000:
            Category.objects.bulk_update(batch, ["name_hash"])
            batch = []
    Category.objects.bulk_update(batch, ["name_hash"])


class Migration(migrations.Migration):

    dependencies = [
        ("allocations", "0006_snapshot_one_per_upload"),
    ]

    operations = [
        migrations.AddField(
            model_name="category",
            name="name_hash",
            field=models.BigIntegerField(null=True),
        ),
        migrations.RunPython(fill_hashes, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="category",
            name="name_hash",
            field=models.BigIntegerField(),
        ),
        migrations.RemoveConstraint(
            model_name="category",
            name="category_identity",
        ),
        migrations.AddConstraint(
            model_name="category",
            constraint=models.UniqueConstraint(
                fields=("app", "name_hash"), name="category_identity_hash"
            ),
        ),
        migrations.AddField(
            model_name="snapshot",
            name="tool_figures",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
