"""Groups made by the fingerprint rules before `leaks-2027.02` are regrouped under today's rules,
as 0004 and 0006 did: `leaks-2027.02` tells apart the leaks of a stack that names no function (a
sanitizer run with `symbolize=0`: each frame its module and offset, where older rules merged
them by module), and reads a function name that an older parser stored with its module
(`lose_buffer (prog+0x401cb0)`, a module printed without a path) as the function. This
migration marks each such group in its history (by memdash); `regroup_leaks` runs once `migrate`
is done (`memdash.leaks.tasks.regroup_after_migrate`).

Self-contained, over historical models.
"""

import re

from django.db import migrations
from django.utils import timezone

RULES = "leaks-2027.02"  # written out: the rules these groups are to be regrouped under
VERSION = re.compile(r"^leaks-(\d{4})\.(\d{2})$")


def older(version):
    found, rules = VERSION.match(version), VERSION.match(RULES)
    return found is None or found.groups() < rules.groups()


def mark_old_groups(apps, schema_editor):
    db = schema_editor.connection.alias
    LeakGroup = apps.get_model("leaks", "LeakGroup")
    TriageEvent = apps.get_model("triage", "TriageEvent")
    ContentType = apps.get_model("contenttypes", "ContentType")
    groups = LeakGroup.objects.using(db).exclude(fingerprint_version=RULES)
    versions = set(groups.values_list("fingerprint_version", flat=True).order_by())
    marked = groups.filter(fingerprint_version__in=[v for v in versions if older(v)])
    rows = list(marked.order_by("pk").values_list("pk", "fingerprint_version"))
    if not rows:
        return
    kind, _ = ContentType.objects.using(db).get_or_create(app_label="leaks", model="leakgroup")
    now = timezone.now()
    TriageEvent.objects.using(db).bulk_create(
        [
            TriageEvent(
                content_type=kind,
                object_id=pk,
                at=now,
                actor=None,
                kind="change",
                changes=[
                    {"field": "fingerprint rules", "from": version, "to": f"{RULES}: to regroup"}
                ],
            )
            for pk, version in rows
        ],
        batch_size=2000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("leaks", "0007_leakcanary_traces"),
        ("triage", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(mark_old_groups, migrations.RunPython.noop, elidable=True),
    ]
