"""What the compare pages offer to pick, and pick when the request leaves a side out
(selectors: reads only)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Q

from memdash.allocations.logic.analysis import BASELINE
from memdash.allocations.models import Snapshot
from memdash.allocations.reads.snapshots import builds_with_snapshots
from memdash.compare.reads.refs import GenerationIndex, parse_generation_index
from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order


def _mark_after(marks: Sequence[int], index: GenerationIndex) -> GenerationIndex:
    following = [m for m in marks if index == BASELINE or m > int(index)]
    return following[0] if following else index


def _mark_before(marks: Sequence[int], index: GenerationIndex) -> GenerationIndex:
    if index == BASELINE:
        return BASELINE
    previous = [m for m in marks if m < int(index)]
    return previous[-1] if previous else BASELINE


def consecutive_generations(
    marks: Sequence[int], base: str | None, target: str | None
) -> tuple[GenerationIndex, GenerationIndex]:
    """The generations to diff among the snapshot's marks (their indexes, in order): as asked; a
    missing side is the neighbour of the other; with neither, the last generation against the
    one before it (or the baseline before the first mark). RefError for an unreadable index."""
    base_index = None if base in (None, "") else parse_generation_index(base)
    target_index = None if target in (None, "") else parse_generation_index(target)
    if target_index is None:
        if base_index is None:
            target_index = marks[-1] if marks else BASELINE
        else:
            target_index = _mark_after(marks, base_index)
    if base_index is None:
        base_index = _mark_before(marks, target_index)
    return base_index, target_index


def by_build(app: App, snapshots: Iterable[Snapshot]) -> list[tuple[Build, list[Snapshot]]]:
    """The snapshots grouped by build for a picker: the newest build first (release order),
    each build's snapshots in the order given."""
    groups: dict[int, list[Snapshot]] = {}
    for snapshot in snapshots:
        groups.setdefault(snapshot.build_id, []).append(snapshot)
    return [(b, groups[b.pk]) for b in reversed(builds_in_release_order(app)) if b.pk in groups]


def recent_snapshots(
    app: App, limit: int = 300, include: Iterable[Snapshot] = ()
) -> list[Snapshot]:
    """The app's latest snapshots for the pickers, with those of `include` (the ones chosen)
    even when they are older."""
    snapshots = list(
        Snapshot.objects.filter(app=app).select_related("build").order_by("-captured_at")[:limit]
    )
    listed = {s.pk for s in snapshots}
    extra = [s for s in include if s is not None and s.pk not in listed]
    if extra:
        snapshots = sorted([*snapshots, *extra], key=lambda s: (s.captured_at, s.pk), reverse=True)
    return snapshots


@dataclass(frozen=True)
class Partner:
    snapshot: Snapshot
    reason: str  # why this one, for the page: "the last snapshot of the same device and …"


def partner_snapshot(snapshot: Snapshot, before: bool = True) -> Partner | None:
    """What to diff `snapshot` with when only it is chosen: the closest snapshot captured before
    it (after it, with before=False), preferring the same scenario (device and trigger, then
    device model and trigger), then one of the same build, then any; when there is none on that
    side, the latest other snapshot of the app. None when the app has no other snapshot."""
    others = Snapshot.objects.filter(app_id=snapshot.app_id).exclude(pk=snapshot.pk)
    others = others.select_related("build")
    if before:
        side = others.filter(captured_at__lt=snapshot.captured_at).order_by("-captured_at", "-pk")
    else:
        side = others.filter(captured_at__gt=snapshot.captured_at).order_by("captured_at", "pk")
    tiers = []
    if snapshot.device_id:
        same_device = Q(device_id=snapshot.device_id, trigger=snapshot.trigger)
        tiers.append((same_device, " of the same device and trigger"))
    if snapshot.device_model:
        same_model = Q(device_model=snapshot.device_model, trigger=snapshot.trigger)
        tiers.append((same_model, " of the same device model and trigger"))
    tiers += [(Q(build_id=snapshot.build_id), " of the same build"), (Q(), "")]
    when = "before" if before else "after"
    for condition, alike in tiers:
        found = side.filter(condition).first()
        if found is not None:
            which = "last" if before else "first"
            return Partner(found, f"the {which} snapshot{alike} captured {when} #{snapshot.pk}")
    latest = others.order_by("-captured_at", "-pk").first()
    if latest is None:
        return None
    return Partner(latest, f"the latest other snapshot; none was captured {when} #{snapshot.pk}")


def default_build_pair(app: App) -> tuple[Build | None, Build | None]:
    """The last two builds with snapshots, in release order."""
    builds = builds_with_snapshots(app)
    if not builds:
        return None, None
    if len(builds) == 1:
        return builds[0], builds[0]
    return builds[-2], builds[-1]
