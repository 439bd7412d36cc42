"""Writes of names in leak stacks: frames named from debug files at ingest, and renamed (with
their leaks regrouped) when a debug file arrives for a module after its reports.

A renamed stack is fingerprinted again by the same rules (`fingerprint.FINGERPRINT_VERSION`: the
rules do not change, the stack now names what it only located), so a leak that arrived by
address joins the group of the same leak that arrived by name, by the mechanism that regroups
leaks after a rules change (memdash.leaks.writes.regroup: groups re-keyed in place, or merged
with their triage carried over and a history entry). Records of groups made by older rules wait
for their regrouping (`regroup_old_rules`), which fingerprints their renamed stacks.
"""

from __future__ import annotations

from django.db import transaction

from memdash.core.models import App
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.logic.naming import image_ids, name_frames
from memdash.leaks.models import LeakRecord, UnnamedImage
from memdash.leaks.writes.regroup import BATCH, Regrouped, regroup_records, stack_of
from memdash.leaks.writes.reports import record_unnamed_images
from memdash.symbols import reads as symbols


def rename_leaks(app: App, debug_ids: list[str]) -> Regrouped:
    """Name the stored stacks with frames in the modules of these debug ids, and regroup."""
    result = Regrouped()
    with transaction.atomic():
        ids = UnnamedImage.objects.filter(app=app, debug_id__in=debug_ids).values("record_id")
        records = list(
            LeakRecord.objects.filter(app=app, pk__in=ids)  # one app's rows, as in regroup
            .select_related("build")
            .prefetch_related("group")
            .select_for_update(of=("self",))
            .order_by("pk")
        )
        stacks = {r.pk: stack_of(r) for r in records}
        resolve = symbols.symbolicator(app, {i for s in stacks.values() for i in image_ids(s)})
        changed = []
        for record in records:
            named = name_frames(stacks[record.pk], resolve)
            if named is not None:
                record.frames = [frame.as_dict() for frame in named]
                stacks[record.pk] = named
                changed.append(record)
        if not changed:
            return result
        result.records = len(changed)
        LeakRecord.objects.bulk_update(changed, ["frames"], batch_size=BATCH)
        UnnamedImage.objects.filter(record_id__in=[r.pk for r in changed]).delete()
        record_unnamed_images(app, changed)
        today = [
            r for r in changed if r.group and r.group.fingerprint_version == FINGERPRINT_VERSION
        ]
        regroup_records(app, today, stacks, result)
    return result
