"""Writes that move leak records to the group their fingerprint, computed again, says they belong
to: after their stacks were named (memdash.leaks.writes.names), and after the fingerprint
rules changed (`regroup_old_rules`: `manage.py regroup_leaks`, the task `regroup_leaks`).

One mechanism for both. A group all of whose records go to a fingerprint no group of today's
rules has yet is re-keyed in place (its page, id, triage and history stay); when several do, the
one with the most records is. Records joining an existing group (or a new one) move there, and a
group they leave empty is merged into the group(s) its records went to, then deleted: its
triage carried over by `memdash.triage.writes.merge_triage` (the most active state wins:
open, then fixed, then ignored, then new; notes appended, history copied) and one history entry
by memdash saying it was regrouped (`regrouped`: the groups it came from, by id and rules). Any
build a merged group's records were in is then noted on the group they joined, so a fix that did
not hold is reopened as a regression. No record is deleted: every one ends in a group of today's
rules, with the counts of its group recounted from its records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count

from memdash.core.models import App, Build
from memdash.leaks.logic import reports as plain
from memdash.leaks.logic.fingerprint import (
    FINGERPRINT_VERSION,
    Fingerprint,
    fingerprint,
    fingerprint_frames,
    fingerprint_shape,
)
from memdash.leaks.models import LeakGroup, LeakRecord
from memdash.leaks.reads import older_rules_group_ids
from memdash.leaks.writes.reports import (
    MAX_TITLE,
    groups_for,
    refresh_group_counts,
    symbolicated_frames,
)
from memdash.triage.reads import TRIAGE_RELATIONS
from memdash.triage.writes import merge_triage

BATCH = 2_000
GROUP_CHUNK = 200  # old groups regrouped per transaction (and per progress line)
REGROUPED = "regrouped"  # the field of the history entry that says a group was regrouped


@dataclass
class Regrouped:
    records: int = 0  # fingerprinted again (renamed, or of groups made by older rules)
    moved: int = 0  # to another group
    groups_rekeyed: int = 0
    groups_merged: int = 0  # into the group their leak now belongs to, then deleted


def stack_of(record: LeakRecord) -> list[plain.StackFrame]:
    return [plain.StackFrame.from_dict(frame) for frame in record.frames]


def regroup_records(
    app: App,
    records: list[LeakRecord],
    stacks: dict[int, list[plain.StackFrame]],
    result: Regrouped,
) -> None:
    """Fingerprint these records (locked, with `group` and `build` loaded) again from `stacks`
    and move each to the group of today's rules it belongs to."""
    moving: dict[str, list[LeakRecord]] = defaultdict(list)
    prints: dict[str, Fingerprint] = {}
    versions: dict[int, str] = {}  # group id: the rules that made it, before this
    for record in records:
        group = record.group
        if group is None:
            continue
        versions[group.pk] = group.fingerprint_version
        print_ = fingerprint(
            plain.LeakRecord(record.kind, record.bytes, record.allocations,
                             stacks[record.pk], record.size, detail=record.detail)
        )  # fmt: skip
        if group.fingerprint_version != FINGERPRINT_VERSION or print_.key != group.fingerprint:
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
    existing = set(
        LeakGroup.objects.filter(
            app=app, fingerprint_version=FINGERPRINT_VERSION, fingerprint__in=list(moving)
        ).values_list("fingerprint", flat=True)
    )
    targets: dict[str, LeakGroup] = {}
    joining: dict[str, tuple[Fingerprint, list[dict[str, Any]]]] = {}
    for key, moved in moving.items():
        stack = max((r.frames for r in moved), key=symbolicated_frames)
        whole = None if key in existing else _whole_group(moved, sizes, targets)
        if whole is not None:
            _rekey(whole, prints[key], stack)
            result.groups_rekeyed += 1
            targets[key] = whole
        else:
            joining[key] = (prints[key], stack)
    made, _ = groups_for(app, joining)  # the existing groups, and new ones for the rest
    better = []
    for key, (_, stack) in joining.items():
        targets[key] = made[key]
        versions.setdefault(made[key].pk, made[key].fingerprint_version)
        if symbolicated_frames(stack) > symbolicated_frames(made[key].stack):
            made[key].stack = stack
            better.append(made[key])
    LeakGroup.objects.bulk_update(better, ["stack"])
    _move_records(app, moving, targets, sources, versions, result)


def _whole_group(
    moved: list[LeakRecord], sizes: dict[int, int], taken: dict[str, LeakGroup]
) -> LeakGroup | None:
    """The group all of whose records are among `moved` (the one with the most, then the
    oldest), not already re-keyed to another fingerprint: it becomes the group of `moved`."""
    counts: dict[int, int] = defaultdict(int)
    groups: dict[int, LeakGroup] = {}
    for record in moved:
        if record.group is not None:
            counts[record.group.pk] += 1
            groups[record.group.pk] = record.group
    used = {group.pk for group in taken.values()}
    whole = [pk for pk, n in counts.items() if sizes.get(pk) == n and pk not in used]
    if not whole:
        return None
    return groups[min(whole, key=lambda pk: (-counts[pk], pk))]


def _rekey(group: LeakGroup, print_: Fingerprint, stack: list[dict[str, Any]]) -> None:
    group.fingerprint, group.fingerprint_version = print_.key, print_.version
    group.title, group.by_size = print_.title[:MAX_TITLE], print_.by_size
    group.frame_keys, group.stack = list(print_.frames), stack
    group.save(
        update_fields=[
            "fingerprint", "fingerprint_version", "title", "by_size", "frame_keys", "stack"
        ]
    )  # fmt: skip


def _move_records(
    app: App,
    moving: dict[str, list[LeakRecord]],
    targets: dict[str, LeakGroup],
    sources: set[int],
    versions: dict[int, str],
    result: Regrouped,
) -> None:
    target_ids = {target.pk for target in targets.values()}
    # Per target, the builds its records were in, by the group each record came from (the
    # target's own records first), so that a merged group's sightings can reopen a fix.
    seen: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    own = LeakRecord.objects.filter(group_id__in=target_ids).values_list("group_id", "build_id")
    for group_id, build_id in own.distinct().order_by():
        seen[group_id][group_id].add(build_id)
    into: dict[int, set[int]] = defaultdict(set)  # source group id: the groups it went to
    for key, moved in moving.items():
        target = targets[key]
        for record in moved:
            assert record.group_id is not None
            seen[target.pk][record.group_id].add(record.build_id)
            if record.group_id != target.pk:
                into[record.group_id].add(target.pk)
                record.group = target
                result.moved += 1
    LeakRecord.objects.bulk_update(
        [r for rs in moving.values() for r in rs], ["group"], batch_size=BATCH
    )
    left = set(LeakRecord.objects.filter(group_id__in=sources).values_list("group_id", flat=True))
    emptied = {
        group.pk: group
        for group in LeakGroup.objects.filter(pk__in=sources - left - target_ids)
        .select_related(*TRIAGE_RELATIONS)
        .order_by("pk")
    }
    refresh_group_counts(app.pk, sorted(target_ids | (sources - set(emptied))))
    builds = Build.objects.in_bulk(
        {b for froms in seen.values() for bs in froms.values() for b in bs}
    )
    targets_now = LeakGroup.objects.filter(pk__in=target_ids).select_related(*TRIAGE_RELATIONS)
    for target in targets_now.order_by("pk"):
        merged = [group for pk, group in emptied.items() if target.pk in into[pk]]
        winner = target
        rules_changed = versions.get(target.pk, FINGERPRINT_VERSION) != FINGERPRINT_VERSION
        if merged or rules_changed:
            came_from = ([target] if rules_changed else []) + merged
            why = {
                "field": REGROUPED,
                "from": _names(came_from, versions),
                "to": f"#{target.pk} ({FINGERPRINT_VERSION})",
            }
            winner = merge_triage(target, merged, why)
        for origin, build_ids in seen[target.pk].items():
            if origin != winner.pk:
                for build_id in sorted(build_ids):
                    target.seen_in(builds[build_id])
    for group in emptied.values():
        group.delete()
        result.groups_merged += 1


def _names(groups: list[LeakGroup], versions: dict[int, str]) -> str:
    """`#3, #7 (leaks-2026.11)`: groups by id, under the rules that made them."""
    by_version: dict[str, list[int]] = defaultdict(list)
    for group in groups:
        by_version[versions.get(group.pk, group.fingerprint_version)].append(group.pk)
    return "; ".join(
        f"{', '.join(f'#{pk}' for pk in sorted(pks))} ({version})"
        for version, pks in sorted(by_version.items())
    )


Progress = Callable[[int, int, Regrouped], None]  # (old groups done, of how many, so far)


def regroup_old_rules(app: App, progress: Progress | None = None) -> Regrouped:
    """Every record of the app's groups made by older rules, fingerprinted by today's and moved
    to its group, GROUP_CHUNK old groups per transaction (a run cut short leaves every group
    listed, regrouped or not, and the next run goes on from there)."""
    result = Regrouped()
    old = older_rules_group_ids(app)
    for start in range(0, len(old), GROUP_CHUNK):
        chunk = old[start : start + GROUP_CHUNK]
        with transaction.atomic():
            records = list(
                # By app and with their groups read apart: on Citus, rows are locked only by a
                # query on one app's worker, which a join by the group's id is not.
                LeakRecord.objects.filter(app=app, group_id__in=chunk)
                .select_related("build")
                .prefetch_related("group")
                .select_for_update(of=("self",))
                .order_by("pk")
            )
            result.records += len(records)
            regroup_records(app, records, {r.pk: stack_of(r) for r in records}, result)
            empty = set(chunk) - {r.group_id for r in records}
            _regroup_empty(app, empty, result)
        if progress is not None:
            progress(start + len(chunk), len(old), result)
    return result


def _regroup_empty(app: App, group_ids: set[int], result: Regrouped) -> None:
    """Old groups without a record left (their builds deleted) keep their triage: fingerprinted
    again from the stack they show, merged into today's group of that fingerprint or re-keyed."""
    groups = LeakGroup.objects.filter(pk__in=group_ids).exclude(
        fingerprint_version=FINGERPRINT_VERSION
    )
    for group in groups.select_related(*TRIAGE_RELATIONS).order_by("pk"):
        frames = [plain.StackFrame.from_dict(frame) for frame in group.stack]
        if not frames and group.frame_keys and not group.by_size:  # grouped by its shape
            print_ = fingerprint_shape(group.frame_keys, group.title)
        else:
            print_ = fingerprint_frames(frames, group.title)
        version = group.fingerprint_version
        target = (
            LeakGroup.objects.filter(
                app=app, fingerprint_version=FINGERPRINT_VERSION, fingerprint=print_.key
            )
            .select_related(*TRIAGE_RELATIONS)
            .first()
        )
        why = {"field": REGROUPED, "from": f"#{group.pk} ({version})"}
        if target is None:
            _rekey(group, print_, group.stack)
            merge_triage(group, [], {**why, "to": f"#{group.pk} ({FINGERPRINT_VERSION})"})
            result.groups_rekeyed += 1
        else:
            merge_triage(target, [group], {**why, "to": f"#{target.pk} ({FINGERPRINT_VERSION})"})
            group.delete()
            result.groups_merged += 1
