"""Writes of names in leak stacks: frames named from debug files at ingest, and renamed (with
their leaks regrouped) when a debug file arrives for a module after its reports.

A renamed stack is fingerprinted again by the same rules (`fingerprint.FINGERPRINT_VERSION`: the
rules do not change, the stack now names what it only located), so a leak that arrived by
address joins the group of the same leak that arrived by name. A group whose records all go to
a fingerprint no group has yet is re-keyed in place (its triage and history stay); records
joining an existing group move there, and a group they leave empty is merged into it: its
triage carried over where the target has none (recorded in the target's history), then
deleted. Groups of older fingerprint versions keep their records: old results never change.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count

from memdash.core.models import App, Build
from memdash.leaks import reports as plain
from memdash.leaks.fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint
from memdash.leaks.models import LeakGroup, LeakRecord, UnnamedImage
from memdash.leaks.naming import image_ids, name_frames
from memdash.leaks.services import (
    MAX_TITLE,
    groups_for,
    record_unnamed_images,
    refresh_group_counts,
    symbolicated_frames,
)
from memdash.symbols import selectors as symbols
from memdash.triage.models import Status
from memdash.triage.services import TriageError, note_seen_in_build, update_triage

BATCH = 2_000


@dataclass
class Renamed:
    records: int = 0  # whose stacks changed
    moved: int = 0  # to another group
    groups_rekeyed: int = 0
    groups_merged: int = 0


def rename_leaks(app: App, debug_ids: list[str]) -> Renamed:
    """Name the stored stacks with frames in the modules of these debug ids, and regroup."""
    result = Renamed()
    with transaction.atomic():
        ids = UnnamedImage.objects.filter(app=app, debug_id__in=debug_ids).values("record_id")
        records = list(
            LeakRecord.objects.filter(pk__in=ids)
            .select_related("group", "build")
            .select_for_update(of=("self",))
            .order_by("pk")
        )
        stacks = {r.pk: [plain.StackFrame.from_dict(f) for f in r.frames] for r in records}
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
        _regroup(app, changed, stacks, result)
    return result


def _regroup(
    app: App,
    records: list[LeakRecord],
    stacks: dict[int, list[plain.StackFrame]],
    result: Renamed,
) -> None:
    moving: dict[str, list[LeakRecord]] = defaultdict(list)
    prints: dict[str, Fingerprint] = {}
    for record in records:
        group = record.group
        if group is None or group.fingerprint_version != FINGERPRINT_VERSION:
            continue
        print_ = fingerprint(
            plain.LeakRecord(record.kind, record.bytes, record.allocations,
                             stacks[record.pk], record.size)
        )  # fmt: skip
        if print_.key != group.fingerprint:
            moving[print_.key].append(record)
            prints[print_.key] = print_
    if not moving:
        return
    sources = {r.group_id for rs in moving.values() for r in rs if r.group_id is not None}
    sizes = dict(
        LeakRecord.objects.filter(group_id__in=sources)
        .values("group_id")
        .annotate(n=Count("id"))
        .values_list("group_id", "n")
        .order_by()
    )
    existing = {
        g.fingerprint: g
        for g in LeakGroup.objects.filter(
            app=app, fingerprint_version=FINGERPRINT_VERSION, fingerprint__in=list(moving)
        )
    }
    targets: dict[str, LeakGroup] = {}
    joining: dict[str, tuple[Fingerprint, list[dict[str, Any]]]] = {}
    for key, moved in moving.items():
        stack = max((r.frames for r in moved), key=symbolicated_frames)
        whole = moved[0].group  # all of one group's records go here: it is that leak, named
        if (
            key not in existing
            and whole is not None
            and sizes.get(whole.pk) == len(moved)
            and all(r.group_id == whole.pk for r in moved)
        ):
            _rekey(whole, prints[key], stack)
            result.groups_rekeyed += 1
            targets[key] = whole
        else:
            joining[key] = (prints[key], stack)
    made, _ = groups_for(app, joining)  # the existing groups, and new ones for the rest
    better = []
    for key, (_, stack) in joining.items():
        targets[key] = made[key]
        if symbolicated_frames(stack) > symbolicated_frames(made[key].stack):
            made[key].stack = stack
            better.append(made[key])
    LeakGroup.objects.bulk_update(better, ["stack"])
    _move_records(app, moving, targets, sources, result)


def _rekey(group: LeakGroup, print_: Fingerprint, stack: list[dict[str, Any]]) -> None:
    group.fingerprint, group.title = print_.key, print_.title[:MAX_TITLE]
    group.by_size, group.frame_keys, group.stack = print_.by_size, list(print_.frames), stack
    group.save(update_fields=["fingerprint", "title", "by_size", "frame_keys", "stack"])


def _move_records(
    app: App,
    moving: dict[str, list[LeakRecord]],
    targets: dict[str, LeakGroup],
    sources: set[int],
    result: Renamed,
) -> None:
    builds: dict[int, dict[int, Build]] = defaultdict(dict)  # target group id: its new builds
    into: dict[int, LeakGroup] = {}  # source group id: the group its records went to
    for key, moved in moving.items():
        target = targets[key]
        for record in moved:
            if record.group_id != target.pk:
                assert record.group_id is not None
                into[record.group_id] = target
                record.group = target
                builds[target.pk][record.build_id] = record.build
                result.moved += 1
    LeakRecord.objects.bulk_update(
        [r for rs in moving.values() for r in rs], ["group"], batch_size=BATCH
    )
    emptied = LeakGroup.objects.filter(pk__in=sources - set(
        LeakRecord.objects.filter(group_id__in=sources).values_list("group_id", flat=True)
    ))  # fmt: skip
    for source in emptied:
        _merge_triage(source, into[source.pk])
        source.delete()
        result.groups_merged += 1
    touched = {t.pk for t in targets.values()} | (sources - {g.pk for g in emptied})
    refresh = LeakGroup.objects.filter(pk__in=touched)
    refresh_group_counts([g.pk for g in refresh])
    for group in refresh.select_related("first_seen_build", "last_seen_build"):
        for build in builds.get(group.pk, {}).values():
            note_seen_in_build(group, build)


def _merge_triage(source: LeakGroup, target: LeakGroup) -> None:
    """Carry a merged group's triage to the group its leak now belongs to, where that one has
    none of its own (the target's decisions win); recorded in the target's history."""
    changes: dict[str, Any] = {}
    if source.notes:
        merged = f"From leak group #{source.pk} ({source.title}): {source.notes}"
        changes["notes"] = f"{target.notes}\n\n{merged}" if target.notes else merged
    if target.status == Status.NEW and source.status != Status.NEW:
        changes["status"] = source.status
        changes["fixed_in_build"] = source.fixed_in_build
    if target.assignee_id is None and source.assignee is not None:
        changes["assignee"] = source.assignee
    if not changes:
        return
    try:
        update_triage(target, None, **changes)
    except TriageError:  # the assignee left the app: the rest still carries over
        changes.pop("assignee", None)
        if changes:
            update_triage(target, None, **changes)
